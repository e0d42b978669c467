package core

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A release hands what it ends to the oldest waiter, in its own txn
// (EndTxn): the holder record its queue entry carries goes into a seat
// (internal/store/kinds.go), under the waiter's lease. A lock's or an election's release
// hands its one seat to the queue's head; a semaphore's the seat it frees.
// A read/write lock's depends on who ends and who waits (handOverPlan):
// the writer hands the writer's seat to a writer at the head, or a
// reader's seat to a reader; a reader hands the writer's seat to a writer
// at the head, and only if it is the last reader. The other readers
// behind the writer take their seats themselves as they see the writer's
// seat go (a reader waits only for the writers ahead of it: lock/seats.go),
// each in a txn of its own, none waiting for a hold to end: so the
// readers between two writers in line are granted together.
//
// Every grant of a thing with seats rewrites its seats key (SeatRecord):
// the batcher never puts two txns that write one key into one raft entry
// (internal/txnbatch), so two grants of one thing never share a
// revision, and each hold's token is its own: a release, a renew or a
// revoke names a hold by its thing and its token (SeatOf).

// handOverPlan is the seat the release of seat name hands to head, the
// oldest waiter; ok is false when it hands none.
func handOverPlan(name string, head *QueueHead) (seat string, ok bool) {
	if head == nil {
		return "", false
	}
	if k, _ := store.ThingOf(name); k != store.KindRWLock {
		return name, true
	}
	thing := store.ThingKey(name)
	switch {
	case head.Grant.Mode == store.ModeWrite:
		return store.WriterSeat(thing), true
	case name == store.WriterSeat(thing):
		// The writer held: no reader seat is (seatKind.cmps), so the first is free.
		return store.ReaderSeats(thing) + "0", true
	}
	return "", false // a reader at the head takes its seat beside ours
}

// SeatRecord is the value of a thing's seats key that a grant of hold hr
// puts: a semaphore's limit (lock/seats.go), nothing for a read/write lock.
func SeatRecord(hr store.Holder) string {
	if hr.Limit > 0 {
		return strconv.Itoa(hr.Limit)
	}
	return ""
}

// handOverCmps hold when the release of token's hold, in seat name, may
// begin head's hold: what head's own acquire would require at that
// moment. Its entry is still there, the lock-delay guard is as the hold
// left it, its session, if any, still exists, and the thing's rules hold
// (a semaphore's limit; a read/write lock's exclusion). Its lease is
// checked by etcd itself: a put under a lease that ended fails the whole
// txn (see commitEnd).
//
// That the entry is still the oldest needs no compare. head is the
// oldest entry of the queue in the snapshot the releaser read
// (HoldReads), at some revision R, so head.rev <= R. An entry older
// than head would have been created before R and so be in that snapshot;
// every entry created since has a revision above R. So while head's entry
// exists with head.rev, nothing is older, however stale the read. A
// compare over the queue's prefix would say the same, and etcd would
// read every entry of the queue in the apply of every handover.
func (e *Engine) handOverCmps(name string, token int64, hr store.Holder, head *QueueHead) []clientv3.Cmp {
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(head.Key), "=", head.Rev)}
	gkey := e.Keys.Delay(name)
	if hr.Guarded() {
		// The guard was put with the hold, so its ModRevision is token.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(gkey), "=", token))
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(gkey), "=", 0))
	}
	if head.Grant.Session != "" {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(e.Keys.Session(head.Grant.Session)), ">", 0))
	}
	switch kind, _ := store.ThingOf(name); {
	case kind == store.KindSemaphore:
		// The seat is below the stored limit; the waiter's must be it.
		cmps = append(cmps, clientv3.Compare(clientv3.Value(e.Keys.Seats(name)), "=", strconv.Itoa(head.Grant.Limit)))
	case kind == store.KindRWLock:
		cmps = append(cmps, e.exclusionCmps(name, head)...)
	case len(head.Grant.Set) > 0:
		cmps = append(cmps, e.setHeadCmps(name, head)...)
	}
	return cmps
}

// exclusionCmps hold when a read/write lock's release from seat name may
// grant head its seat: a writer's only if no other seat is held (the
// releaser is the last holder: its own seat is left out of the two
// ranges, since a txn's compares see the state before it) and no
// reader's seat has a guard, a reader's only if no reader's seat is
// held.
func (e *Engine) exclusionCmps(name string, head *QueueHead) []clientv3.Cmp {
	thing := store.ThingKey(name)
	if head.Grant.Mode == store.ModeRead {
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.Keys.Locks()+store.ReaderSeats(thing)), "=", 0).WithPrefix()}
	}
	all, own := store.SeatsOf(e.Keys.Locks(), thing), e.Keys.Lock(name)
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(all), "=", 0).WithRange(own),
		clientv3.Compare(clientv3.CreateRevision(own+"\x00"), "=", 0).WithRange(clientv3.GetPrefixRangeEnd(all)),
		// No reader's guard, which may keep the writer out (a reader's
		// at-least window): with one, the writer takes the lock itself,
		// and its acquire reads them (lock/seats.go).
		clientv3.Compare(clientv3.CreateRevision(e.Keys.Delay(store.ReaderSeats(thing))), "=", 0).WithPrefix(),
	}
}

// handOverOps begin head's hold in seat, as its own acquire txn would
// have: its holder record in its seat under its lease, its queue entry
// gone, its acquired event, its lock-delay guard (and an election's term,
// a thing with seats' seat record); the released seat name's key gone if
// head does not take it over.
func (e *Engine) handOverOps(name string, hr store.Holder, at time.Time, head *QueueHead, seat string) []clientv3.Op {
	g := hold.Begun(head.Grant, at, head.since)
	if len(g.Set) > 0 {
		return e.setHandOverOps(name, hr, g, head)
	}
	kind, _ := store.ThingOf(name)
	if kind == store.KindElection {
		g.Term = hr.Term + 1 // the term key is hr's: see termCmp
	}
	lease, _ := store.ParseLeaseHex(g.Lease)
	ops := []clientv3.Op{
		clientv3.OpPut(e.Keys.Lock(seat), store.MustJSON(g), clientv3.WithLease(lease)),
		clientv3.OpDelete(head.Key),
	}
	if !g.Derived {
		ops = append(ops, clientv3.OpPut(e.Keys.Acquired(seat, g.Hold), store.MustJSON(g.BegunEvent(seat))))
	}
	if g.Session == "" {
		ops = append(ops, e.LeaseMarkOp(lease))
	}
	if seat != name {
		ops = append(ops, clientv3.OpDelete(e.Keys.Lock(name)))
	}
	if g.Guarded() {
		ops = append(ops, clientv3.OpPut(e.Keys.Delay(seat), store.MustJSON(hold.GuardOf(g))))
	}
	if hr.Guarded() && (seat != name || !g.Guarded()) {
		ops = append(ops, clientv3.OpDelete(e.Keys.Delay(name)))
	}
	switch kind {
	case store.KindElection:
		ops = append(ops, clientv3.OpPut(e.Keys.Term(name), strconv.FormatInt(g.Term, 10)))
	case store.KindSemaphore, store.KindRWLock:
		ops = append(ops, clientv3.OpPut(e.Keys.Seats(name), SeatRecord(g)))
	}
	// No tally to count: a waiter asks for a grant only when its node
	// keeps none (see Acquirer.QueueEntryRecord), and its record says so.
	return ops
}

// A lock set at the head of a queue is handed the lock only with every
// other lock of the set (setHeadCmps): when the release ends the last
// hold in its way, so that it heads every queue it waits in and every
// lock of it is free. The release then begins all of the set's holds
// (setHandOverOps), as the set's own acquire txn would; otherwise it only
// frees the lock, and the set takes it itself with the rest once they are
// free. A txn that ends several holds hands a set over only where no other
// part of it writes a lock of the set (HandOverHeads).

// setHeadCmps hold when the release of name may begin every hold of the
// set at head: each other lock of the set free, with no lock-delay guard,
// and the set's entry in its queue the oldest.
func (e *Engine) setHeadCmps(name string, head *QueueHead) []clientv3.Cmp {
	var cmps []clientv3.Cmp
	for _, m := range head.Grant.Set {
		if m == name {
			continue // handOverCmps's own compares
		}
		cmps = append(cmps,
			clientv3.Compare(clientv3.CreateRevision(e.Keys.Lock(m)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(e.Keys.Delay(m)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(e.setEntry(name, head, m)), "=", head.Rev),
			clientv3.Compare(clientv3.CreateRevision(e.Keys.Queue(m)), ">", head.Rev-1).WithPrefix())
	}
	return cmps
}

// setHandOverOps begin every hold of the set at head, whose grant g is:
// each lock's holder record (its member's: MemberRecord) under the set's
// lease, its entry gone, its acquired event, its guard if it has an
// at-least window; and what becomes of the released hold hr's guard.
func (e *Engine) setHandOverOps(name string, hr store.Holder, g store.Holder, head *QueueHead) []clientv3.Op {
	lease, _ := store.ParseLeaseHex(g.Lease)
	var ops []clientv3.Op
	for i, m := range g.Set {
		rec := MemberRecord(g, i)
		ops = append(ops,
			clientv3.OpPut(e.Keys.Lock(m), store.MustJSON(rec), clientv3.WithLease(lease)),
			clientv3.OpDelete(e.setEntry(name, head, m)))
		if !rec.Derived {
			ops = append(ops, clientv3.OpPut(e.Keys.Acquired(m, rec.Hold), store.MustJSON(rec.BegunEvent(m))))
		}
		if rec.Guarded() {
			ops = append(ops, clientv3.OpPut(e.Keys.Delay(m), store.MustJSON(hold.GuardOf(rec))))
		}
	}
	if g.Session == "" {
		ops = append(ops, e.LeaseMarkOp(lease))
	}
	if hr.Guarded() && !g.Guarded() { // else put over above
		ops = append(ops, clientv3.OpDelete(e.Keys.Delay(name)))
	}
	return ops
}

// setEntry is the entry in the queue of lock m of the set at the head of
// name's queue: its entries share their key's last element.
func (e *Engine) setEntry(name string, head *QueueHead, m string) string {
	return e.Keys.Queue(m) + strings.TrimPrefix(head.Key, e.Keys.Queue(name))
}

// HandOverHeads are the heads that the ends of one txn may hand over to:
// each end's, but a lock set whose handover would write a lock that the
// txn writes already (one it ends, or one an earlier handover begins)
// gets none. The set then takes its locks itself once they are free.
func HandOverHeads(ends []PlannedEnd) []*QueueHead {
	written := make(map[string]bool, len(ends))
	for _, end := range ends {
		written[end.Name] = true
	}
	heads := make([]*QueueHead, len(ends))
	for i, end := range ends {
		h := end.Head
		if h == nil || len(h.Grant.Set) == 0 {
			heads[i] = h
			continue
		}
		if slices.ContainsFunc(h.Grant.Set, func(m string) bool { return m != end.Name && written[m] }) {
			continue
		}
		for _, m := range h.Grant.Set {
			written[m] = true
		}
		heads[i] = h
	}
	return heads
}

// PlannedEnd is one hold that a txn of several ends: a lock of a session
// being deleted, a member of a lock set.
type PlannedEnd struct {
	Name  string
	Token int64
	Hr    store.Holder
	Head  *QueueHead
}

// MemberRecord is the holder record of member i of a set whose grant
// rec is: each member is a hold of its own, with an ID of its own (its
// audit records' keys and its trail entries are named by it), made of
// the set's.
func MemberRecord(rec store.Holder, i int) store.Holder {
	rec.Hold = memberHold(rec.Hold, i)
	return rec
}

func memberHold(set string, i int) string { return set + "." + strconv.Itoa(i) }
