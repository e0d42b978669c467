package lock

import (
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A release hands what it ends to the oldest waiter, in its own txn
// (endTxn): the holder record its queue entry carries goes into a seat
// (kinds.go), under the waiter's lease. A lock's or an election's release
// hands its one seat to the queue's head; a semaphore's the seat it frees.
// A read/write lock's depends on who ends and who waits (handOverPlan):
// the writer hands the writer's seat to a writer at the head, or a
// reader's seat to a reader; a reader hands the writer's seat to a writer
// at the head, and only if it is the last reader. The readers behind a
// reader just granted take their seats themselves, each as soon as the
// entry ahead of it goes, none waiting for a hold to end: so consecutive
// readers at the head are granted together, one txn after another.
//
// Every grant of a thing with seats rewrites its seats key (seatRecord):
// the batcher never puts two txns that write one key into one raft entry
// (internal/txnbatch), so two grants of one thing never share a
// revision, and each hold's token is its own: a release, a renew or a
// revoke names a hold by its thing and its token (seatOf).

// seatGrant is the waiter a release grants a hold, and the seat it gets.
type seatGrant struct {
	head *queueHead
	seat string
}

// handOverPlan is what the release of seat name hands to the oldest
// waiter head: nothing, or a grant.
func handOverPlan(name string, heads []*queueHead) []seatGrant {
	if len(heads) == 0 {
		return nil
	}
	head := heads[0]
	if k, _ := thingOf(name); k != KindRWLock {
		return []seatGrant{{head, name}}
	}
	thing := thingKey(name)
	switch {
	case head.grant.Mode == ModeWrite:
		return []seatGrant{{head, writerSeat(thing)}}
	case name == writerSeat(thing):
		// The writer held: no reader seat is (seatCmps), so the first is free.
		return []seatGrant{{head, readerSeats(thing) + "0"}}
	}
	return nil // a reader at the head takes its seat beside ours
}

// seatRecord is the value of a thing's seats key that a grant of hold hr
// puts: a semaphore's limit (seats.go), nothing for a read/write lock.
func seatRecord(hr holderRecord) string {
	if hr.Limit > 0 {
		return strconv.Itoa(hr.Limit)
	}
	return ""
}

// handOverCmps hold when the release of token's hold, in seat name, may
// begin the hold of grants' one waiter: what the waiter's own acquire
// would require at that moment. Its entry is still there and still the
// oldest (so FIFO holds whatever the releaser read), the lock-delay guard
// is as the hold left it, its session, if any, still exists, and the
// thing's rules hold (a semaphore's limit; a read/write lock's
// exclusion). Its lease is checked by etcd itself: a put under a lease
// that ended fails the whole txn (see commitEnd).
func (e *Engine) handOverCmps(name string, token int64, hr holderRecord, grants []seatGrant) []clientv3.Cmp {
	head := grants[0].head
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(head.key), "=", head.rev),
		clientv3.Compare(clientv3.CreateRevision(e.queuePrefix(name)), ">", head.rev-1).WithPrefix(),
	}
	gkey := e.delayKey(name)
	if hr.LockDelay > 0 {
		// The guard was put with the hold, so its ModRevision is token.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(gkey), "=", token))
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(gkey), "=", 0))
	}
	if head.grant.Session != "" {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(e.sessionKey(head.grant.Session)), ">", 0))
	}
	switch kind, _ := thingOf(name); kind {
	case KindSemaphore:
		// The seat is below the stored limit; the waiter's must be it.
		cmps = append(cmps, clientv3.Compare(clientv3.Value(e.seatsKey(name)), "=", strconv.Itoa(head.grant.Limit)))
	case KindRWLock:
		cmps = append(cmps, e.exclusionCmps(name, head)...)
	}
	return cmps
}

// exclusionCmps hold when a read/write lock's release from seat name may
// grant head its seat: a writer's only if no other seat is held (the
// releaser is the last holder: its own seat is left out of the two
// ranges, since a txn's compares see the state before it), a reader's
// only if no reader's seat is.
func (e *Engine) exclusionCmps(name string, head *queueHead) []clientv3.Cmp {
	thing := thingKey(name)
	if head.grant.Mode == ModeRead {
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.locksPrefix()+readerSeats(thing)), "=", 0).WithPrefix()}
	}
	all, own := seatsOf(e.locksPrefix(), thing), e.lockKey(name)
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(all), "=", 0).WithRange(own),
		clientv3.Compare(clientv3.CreateRevision(own+"\x00"), "=", 0).WithRange(clientv3.GetPrefixRangeEnd(all)),
	}
}

// handOverOps begin the hold of grants' one waiter, as its own acquire
// txn would have: its holder record in its seat under its lease, its
// queue entry gone, its acquired event, its lock-delay guard (and an
// election's term, a thing with seats' seat record); the released seat
// name's key gone if the grant does not take it over.
func (e *Engine) handOverOps(name string, hr holderRecord, at time.Time, grants []seatGrant) []clientv3.Op {
	sg := grants[0]
	g := sg.head.grant
	g.AcquiredAt = at
	kind, _ := thingOf(name)
	if kind == KindElection {
		g.Term = hr.Term + 1 // the term key is hr's: see termCmp
	}
	lease, _ := parseLeaseHex(g.Lease)
	ops := []clientv3.Op{
		clientv3.OpPut(e.lockKey(sg.seat), mustJSON(g), clientv3.WithLease(lease)),
		clientv3.OpDelete(sg.head.key),
		clientv3.OpPut(e.acquiredKey(sg.seat, g.Hold), mustJSON(g.acquiredEvent(sg.seat, at, sg.head.since))),
	}
	if sg.seat != name {
		ops = append(ops, clientv3.OpDelete(e.lockKey(name)))
	}
	switch {
	case g.LockDelay > 0:
		ops = append(ops, clientv3.OpPut(e.delayKey(name), mustJSON(delayRecord{Hold: g.Hold, LockDelay: g.LockDelay})))
	case hr.LockDelay > 0:
		ops = append(ops, clientv3.OpDelete(e.delayKey(name)))
	}
	switch kind {
	case KindElection:
		ops = append(ops, clientv3.OpPut(e.termKey(name), strconv.FormatInt(g.Term, 10)))
	case KindSemaphore, KindRWLock:
		ops = append(ops, clientv3.OpPut(e.seatsKey(name), seatRecord(g)))
	}
	// No tally to count: a waiter asks for a grant only when its node
	// keeps none (see acquirer.queueEntryRecord), and its record says so.
	return ops
}
