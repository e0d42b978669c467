package httpfloor

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
)

// An httpfloor acquire with wait is the limit of a FIFO lock in the same
// shape, for the contention scenario: the fewest etcd writes a handoff
// can cost when waiters are served in order and each grant is a token.
//
//   - A waiter puts its entry in etcd, one write, as a queue that several
//     nodes serve must (ZooKeeper's recipe writes one too).
//   - A release hands the lock to the oldest waiter in its one txn: the
//     waiter's record put over the lock key, its entry deleted. The new
//     ModRevision is the waiter's token.
//
// The queue's order is kept in the floor's memory, which only a single
// node can do. There are no queue reads or compares, no watches, and no
// audit, lock-delay or sessions.

// httpFloorQueuePrefix starts every floor queue entry key.
const httpFloorQueuePrefix = httpFloorPrefix + "queue/"

// floorQueue is one lock's holder and waiters, as the floor server knows
// them. Invariant: waiters is empty unless held.
type floorQueue struct {
	mu      sync.Mutex
	held    bool
	token   int64
	waiters []*floorWaiter
}

type floorWaiter struct {
	owner, entry string
	// granted gets the token once a release handed the lock over, or the
	// error that kept it from being handed over.
	granted chan floorGrant
}

type floorGrant struct {
	token int64
	err   error
}

// queue is name's queue; with create false, nil if no acquire with wait
// made one.
func (f *Server) queue(name string, create bool) *floorQueue {
	f.queuesMu.Lock()
	defer f.queuesMu.Unlock()
	q := f.queues[name]
	if q == nil && create {
		q = &floorQueue{}
		f.queues[name] = q
	}
	return q
}

// acquireWaiting takes the lock, or waits in line up to wait for a
// release to hand it over.
func (f *Server) acquireWaiting(w http.ResponseWriter, r *http.Request, name string, body httpapi.AcquireBody, wait time.Duration) {
	q, key := f.queue(name, true), httpFloorPrefix+name
	if q.claim() {
		f.take(w, r, q, name, key, body.Owner, "")
		return
	}
	entry := httpFloorQueuePrefix + name + "/" + strconv.FormatUint(f.seq.Add(1), 10)
	if _, err := f.cli.Put(r.Context(), entry, body.Owner, clientv3.WithLease(f.lease)); err != nil {
		floorProblem(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	fw := &floorWaiter{owner: body.Owner, entry: entry, granted: make(chan floorGrant, 1)}
	if !q.join(fw) { // released while the entry went in, with nobody waiting
		f.take(w, r, q, name, key, body.Owner, entry)
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case g := <-fw.granted:
		if g.err != nil {
			floorProblem(w, http.StatusServiceUnavailable, g.err.Error())
			return
		}
		f.answer(w, name, body.Owner, g.token)
	case <-timer.C:
		f.leave(q, name, fw)
		floorProblem(w, http.StatusConflict, "lock held")
	case <-r.Context().Done():
		f.leave(q, name, fw)
	}
}

// claim makes the caller the holder if nobody holds the lock or waits.
func (q *floorQueue) claim() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held {
		return false
	}
	q.held = true
	return true
}

// join puts fw in line, or claims the lock for it if it is free (then
// nobody waits either: see floorQueue).
func (q *floorQueue) join(fw *floorWaiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.held {
		q.held = true
		return false
	}
	q.waiters = append(q.waiters, fw)
	return true
}

// take puts the lock key for a caller that claimed it, deleting its queue
// entry if it has one, and answers the grant.
func (f *Server) take(w http.ResponseWriter, r *http.Request, q *floorQueue, name, key, owner, entry string) {
	ops := []clientv3.Op{clientv3.OpPut(key, owner, clientv3.WithLease(f.lease))}
	if entry != "" {
		ops = append(ops, clientv3.OpDelete(entry))
	}
	resp, err := f.cli.Txn(r.Context()).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(ops...).Commit()
	if err == nil && !resp.Succeeded {
		err = errNotFree
	}
	q.mu.Lock()
	if err != nil {
		// Nobody holds the lock: whoever queued meanwhile is told so.
		waiters := q.waiters
		q.held, q.waiters = false, nil
		q.mu.Unlock()
		for _, fw := range waiters {
			fw.granted <- floorGrant{err: err}
		}
		floorProblem(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	q.token = resp.Header.Revision
	q.mu.Unlock()
	f.answer(w, name, owner, resp.Header.Revision)
}

// errNotHeld says a release the floor thought valid found the lock key
// changed: only a write from outside the floor server can do that.
var errNotHeld = errors.New("the floor's lock key changed under its holder")

// errNotFree says a claimed lock's key was there: only a write from
// outside the floor server can do that.
var errNotFree = errors.New("the floor's lock key exists though the floor holds it free")

// leave takes fw out of line when its wait ends unanswered. A release
// that took it out first is handing it the lock: that grant is released,
// so that the lock does not stay with nobody.
func (f *Server) leave(q *floorQueue, name string, fw *floorWaiter) {
	q.mu.Lock()
	i := slices.Index(q.waiters, fw)
	if i >= 0 {
		q.waiters = slices.Delete(q.waiters, i, i+1)
	}
	q.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), httpapi.RequestTimeout)
	defer cancel()
	if i >= 0 {
		// A write error leaves the entry to the lease, revoked at close.
		_, _ = f.cli.Delete(ctx, fw.entry)
		return
	}
	select {
	case g := <-fw.granted:
		if g.err == nil {
			_, _ = f.releaseQueued(ctx, q, name, g.token)
		}
	case <-ctx.Done():
	}
}

// releaseQueued ends the hold of token, handing the lock to the oldest
// waiter in the same txn if there is one; it reports whether token held
// the lock.
func (f *Server) releaseQueued(ctx context.Context, q *floorQueue, name string, token int64) (bool, error) {
	key := httpFloorPrefix + name
	q.mu.Lock()
	if !q.held || q.token != token {
		q.mu.Unlock()
		return false, nil
	}
	if len(q.waiters) == 0 {
		// Kept locked through the delete, so that no claim's put races it.
		defer q.mu.Unlock()
		resp, err := f.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", token)).Then(clientv3.OpDelete(key)).Commit()
		if err != nil || !resp.Succeeded {
			return false, err
		}
		q.held = false
		return true, nil
	}
	fw := q.waiters[0]
	q.waiters = q.waiters[1:]
	q.mu.Unlock()
	resp, err := f.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", token)).
		Then(clientv3.OpPut(key, fw.owner, clientv3.WithLease(f.lease)), clientv3.OpDelete(fw.entry)).Commit()
	if err == nil && !resp.Succeeded {
		err = errNotHeld
	}
	if err != nil {
		// The floor's own record said token held the lock; a failed
		// txn leaves the lock's state unknown, and this waiter unserved.
		fw.granted <- floorGrant{err: err}
		return false, err
	}
	q.mu.Lock()
	q.token = resp.Header.Revision
	q.mu.Unlock()
	fw.granted <- floorGrant{token: resp.Header.Revision}
	return true, nil
}

// answer writes an acquire's 201.
func (f *Server) answer(w http.ResponseWriter, name, owner string, token int64) {
	now := time.Now().UTC()
	writeFloorJSON(w, http.StatusCreated, floorLock{
		Name: name, Owner: owner, Token: token, TTL: load.SessionTTL.String(), AcquiredAt: now, ExpiresAt: now.Add(load.SessionTTL),
	})
}
