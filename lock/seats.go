package lock

import (
	"context"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// How an acquire of a semaphore's permit differs from a lock's: it takes
// a seat (kinds.go), the lowest one free below the limit, and requires
// the limit stored with the semaphore to be its own.
//
// Invariant: every seat held was granted under the stored limit, and its
// number is below it. An acquire compares the stored limit with its own
// and creates a seat below it; a handover puts the next holder into the
// seat the release frees, and compares the limit the waiter asked for
// (handOverCmps). The stored limit changes only while no seat is held and
// nobody waits (limitCmps), so at most the limit's number of permits are
// ever held at once, and a request with another limit while permits are
// held or waited for is refused (ErrLimitMismatch), never half obeyed.

// MaxSemaphoreLimit bounds a semaphore's limit.
const MaxSemaphoreLimit = 10000

func checkLimit(n int) error {
	if n < 1 || n > MaxSemaphoreLimit {
		return invalid("limit", "must be between 1 and %d", MaxSemaphoreLimit)
	}
	return nil
}

// semView is what a permit's acquire knows of its semaphore.
type semView struct {
	limit int // the limit asked for
	read  bool
	// held is the seats held, as last read.
	held map[int]bool
	// replace is set when the next attempt is to store limit: the
	// semaphore was idle, under another limit or none, at limitRev (the
	// stored limit's ModRevision, 0 if none).
	replace  bool
	limitRev int64
}

// seatsRead reads the seats of the semaphore, keys only: from etcd's
// index, at most the limit's number of keys.
func (a *acquirer) seatsRead(opts ...clientv3.OpOption) clientv3.Op {
	return clientv3.OpGet(seatsOf(a.e.locksPrefix(), a.req.Name),
		append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}, opts...)...)
}

// headKey is what the head of the queue waits on: the lock's key, or
// every seat of a semaphore (a hub registration for them all).
func (a *acquirer) headKey() string {
	if a.sem != nil {
		return seatsOf(a.e.locksPrefix(), a.req.Name)
	}
	return a.e.lockKey(a.req.Name)
}

// readSeats reads the semaphore's stored limit and seats before the first
// attempt, locally on our own member, to pick the seat the attempt
// takes: its compares catch a stale read, and its else branch reads both
// again.
func (a *acquirer) readSeats(ctx context.Context) error {
	e := a.e
	var opts []clientv3.OpOption
	if e.ownMember() {
		opts = append(opts, clientv3.WithSerializable())
	}
	octx, done := e.op(ctx)
	resp, err := e.cli.Txn(octx).Then(clientv3.OpGet(e.limitKey(a.req.Name), opts...), a.seatsRead(opts...)).Commit()
	done()
	if err != nil {
		return e.etcdErr(ctx, "read semaphore", err)
	}
	stored, rev := storedLimit(resp.Responses[0].GetResponseRange().Kvs)
	seats := resp.Responses[1].GetResponseRange().Kvs
	a.sem.read = true
	a.sem.replace, a.sem.limitRev = stored != a.sem.limit && len(seats) == 0, rev
	a.noteSeats(seats)
	a.pickSeat()
	return nil
}

// storedLimit decodes a read of the limit key: the limit and the key's
// ModRevision, zeros when there is none.
func storedLimit(kvs []*mvccpb.KeyValue) (limit int, rev int64) {
	if len(kvs) == 0 {
		return 0, 0
	}
	n, _ := strconv.Atoi(string(kvs[0].Value))
	return n, kvs[0].ModRevision
}

// noteSeats keeps which seats a read of them found held.
func (a *acquirer) noteSeats(kvs []*mvccpb.KeyValue) {
	held := make(map[int]bool, len(kvs))
	for _, kv := range kvs {
		if n, ok := seatNumber(strings.TrimPrefix(string(kv.Key), a.e.locksPrefix())); ok {
			held[n] = true
		}
	}
	a.sem.held = held
}

// pickSeat makes the lowest free seat below the limit the next attempt's,
// and reports whether one was free as last read. With none free it picks
// seat 0, held as last read: the attempt then takes it only if it was
// freed since, and otherwise fails, and its else branch joins the queue.
func (a *acquirer) pickSeat() bool {
	for i := range a.sem.limit {
		if !a.sem.held[i] {
			a.seat = seatKey(a.req.Name, i)
			return true
		}
	}
	a.seat = seatKey(a.req.Name, 0)
	return false
}

// limitCmps hold when the semaphore's stored limit is ours, or, when the
// attempt replaces it, when it is still as read and no seat is held (a
// direct attempt also requires the queue empty: acquireCmps).
func (a *acquirer) limitCmps() []clientv3.Cmp {
	key := a.e.limitKey(a.req.Name)
	if !a.sem.replace {
		return []clientv3.Cmp{clientv3.Compare(clientv3.Value(key), "=", strconv.Itoa(a.sem.limit))}
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(key), "=", a.sem.limitRev),
		clientv3.Compare(clientv3.CreateRevision(seatsOf(a.e.locksPrefix(), a.req.Name)), "=", 0).WithPrefix(),
	}
}

// analyseSeats reads a failed permit attempt's view of the semaphore.
// settled is set when r is the attempt's outcome; otherwise free tells
// whether the seat the next attempt takes (picked anew if ours was
// taken) was free, and analyse goes on as for a lock.
func (a *acquirer) analyseSeats(rs []*etcdserverpb.ResponseOp, ix acquireIx, queueKey string) (r attemptResult, settled, free bool) {
	s := a.sem
	seats := rs[ix.lost.seats].GetResponseRange().Kvs
	stored, rev := storedLimit(rs[ix.lost.limit].GetResponseRange().Kvs)
	a.noteSeats(seats)
	if stored != s.limit {
		// Only an idle semaphore takes a new limit: no seat held, and
		// nobody queued (counted before a direct attempt's own entry).
		if len(seats) == 0 && queueKey == "" && rs[ix.lost.queued].GetResponseRange().Count == 0 {
			s.replace, s.limitRev = true, rev
			a.pickSeat()
			return attemptResult{outcome: retryNow}, true, false
		}
		return attemptResult{outcome: mismatched, limit: stored}, true, false
	}
	s.replace = false
	if !s.held[mustSeat(a.seat)] {
		return attemptResult{}, false, true
	}
	return attemptResult{}, false, a.pickSeat()
}

// mustSeat is the number of seat, a seat's key name.
func mustSeat(seat string) int {
	n, _ := seatNumber(seat)
	return n
}

// seatGranted is a queued permit attempt's outcome when its queue entry
// is gone: a release deleted it as it granted us the seat it freed
// (whichever that was), or the entry went with the node's waiter lease.
// It reads the seats, at most the limit's number, to tell.
func (a *acquirer) seatGranted(ctx context.Context) (attemptResult, error) {
	kvs, err := a.readSeatHolders(ctx)
	if err != nil {
		return attemptResult{}, err
	}
	for _, kv := range kvs {
		if l, ok := a.granted(ctx, kv); ok {
			return attemptResult{outcome: won, lock: l}, nil
		}
	}
	return attemptResult{outcome: dequeued}, nil
}

// readSeatHolders reads the holder records of the semaphore's seats,
// linearizably.
func (a *acquirer) readSeatHolders(ctx context.Context) ([]*mvccpb.KeyValue, error) {
	e := a.e
	octx, done := e.op(ctx)
	defer done()
	resp, err := e.cli.Get(octx, seatsOf(e.locksPrefix(), a.req.Name), clientv3.WithPrefix())
	if err != nil {
		return nil, e.etcdErr(ctx, "read semaphore", err)
	}
	return resp.Kvs, nil
}

// lookSeats is look for a permit: resp read the seats where a lock's look
// reads its key. Our entry's going is left to an attempt (seatGranted
// finds the seat a release granted us); so is a seat that looks free.
func (a *acquirer) lookSeats(resp *clientv3.TxnResponse, ix lookIx) (attemptResult, bool, error) {
	rs := resp.Responses
	if rs[ix.entry].GetResponseRange().Count == 0 || (ix.session >= 0 && rs[ix.session].GetResponseRange().Count == 0) {
		return attemptResult{}, false, nil
	}
	a.noteSeats(rs[ix.lock].GetResponseRange().Kvs)
	rev := resp.Header.Revision
	if ahead := rs[ix.pred].GetResponseRange().Kvs; len(ahead) > 0 {
		return attemptResult{outcome: behind, watchKey: string(ahead[0].Key), watchRev: rev, watchCreated: ahead[0].CreateRevision}, true, nil
	}
	if a.pickSeat() {
		return attemptResult{}, false, nil
	}
	return attemptResult{outcome: heldBy, watchKey: a.headKey(), watchRev: rev, holder: a.lastHolder}, true, nil
}

// seatOf is the key name the hold token of name is kept under: name
// itself, but for a semaphore's the seat whose ModRevision is token. The
// seats are read keys only (at most the limit's number, from etcd's
// index), locally first: a hold's seat never changes while it lasts,
// and the end txn compares ModRevision == token anyway. Only when the
// local read finds no such seat is it read again linearizably.
// ErrNotHeld when no seat has token.
func (e *Engine) seatOf(ctx context.Context, name string, token int64) (string, error) {
	if k, _ := thingOf(name); k != KindSemaphore || strings.IndexByte(name, seatSep) >= 0 {
		return name, nil
	}
	if token <= 0 {
		return "", invalid("token", "must be a positive fencing token")
	}
	read := func(opts ...clientv3.OpOption) (string, error) {
		octx, done := e.op(ctx)
		defer done()
		resp, err := e.cli.Get(octx, seatsOf(e.locksPrefix(), name), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithMinModRev(token), clientv3.WithMaxModRev(token)}, opts...)...)
		if err != nil {
			return "", e.etcdErr(ctx, "read semaphore", err)
		}
		if len(resp.Kvs) == 0 {
			return "", ErrNotHeld
		}
		return strings.TrimPrefix(string(resp.Kvs[0].Key), e.locksPrefix()), nil
	}
	if !e.memberStopped() {
		if seat, err := read(clientv3.WithSerializable()); err == nil {
			return seat, nil
		}
	}
	return read()
}
