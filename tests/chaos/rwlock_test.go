package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// The read/write lock workload: clients beside the others that take read
// and write holds, renew, read and release them, write to the fenced
// resource named like the rwlock under a write hold (and try to under a
// read hold), under the same nemesis, and whose ops RWLockModel and
// CheckRWLockAudit check.

// rwWait bounds a waiting acquire's wait, as permitWait does a permit's.
const rwWait = 2 * time.Second

// rwlocks are the workload's read/write locks. The first one's acquires
// never wait: its queue stays empty, so each of its refusals says a hold
// in its way was held, and the model checks that. The second one's wait
// half the time: its queue is what CheckRWLockAudit's FIFO check reads.
var rwlocks = []string{"rw-0", "rw-1"}

// rwClient is one read/write lock client bound to one node: it takes a
// hold, a write one a fifth of the time, and while it holds it renews,
// reads, writes to the fenced resource naming the rwlock (a writer each
// time, a reader now and then, to be refused) and lingers; then it
// releases, with the mistakes real holders make (releasing twice,
// stalling past the TTL and writing, renewing and releasing after,
// abandoning the hold).
func (r *run) rwClient(ctx context.Context, id int, rng *rand.Rand) {
	rctx := context.WithoutCancel(ctx)
	r.holdClient(ctx, id, rng, func(d *Driver, seq int) turn {
		i := rng.IntN(len(rwlocks))
		name := rwlocks[i]
		var wait time.Duration
		if i > 0 && rng.IntN(2) == 0 {
			wait = rwWait/4 + time.Duration(rng.Int64N(int64(rwWait*3/4)))
		}
		mode := "read"
		if rng.IntN(5) == 0 {
			mode = "write"
		}
		// Owners are unique, so the trail settles every Unknown acquire
		// and the FIFO check can name every waiter.
		me := fmt.Sprintf("rw%d-%d", id, seq)
		a := d.AcquireRW(rctx, name, me, mode, wait)
		return turn{a, func() { d.GetRW(rctx, name) }, func() { r.holdRW(ctx, d, rng, name, mode == "write", a.OutToken, me) }}
	})
}

// holdRW is what a client granted the hold token does with it.
func (r *run) holdRW(ctx context.Context, d *Driver, rng *rand.Rand, name string, write bool, token int64, me string) {
	rctx := context.WithoutCancel(ctx)
	for i := range 1 + rng.IntN(3) {
		if rng.IntN(2) == 0 {
			d.RenewRW(rctx, name, token)
		}
		if write || rng.IntN(4) == 0 {
			d.RWFPut(rctx, name, token, fmt.Sprintf("%s-w%d", me, i))
		}
		if rng.IntN(3) == 0 {
			d.GetRW(rctx, name)
		}
		if rng.IntN(4) == 0 {
			d.RWFGet(rctx, name)
		}
		pace(ctx, rng, 300*time.Millisecond) // the work the hold is for: the workload's pace
	}
	switch x := rng.IntN(100); {
	case x < 5:
		// A stall past the TTL: the hold may be gone (a writer may hold
		// the lock by now), and what the holder does next must be
		// refused unless its lease says otherwise.
		stall(ctx, ttl+time.Second)
		d.RWFPut(rctx, name, token, me+"-late")
		d.RenewRW(rctx, name, token)
		d.GetRW(rctx, name)
		d.ReleaseRW(rctx, name, token)
	case x < 10:
		// Abandoned: the lease expires and the recorder says so.
	default:
		d.ReleaseRW(rctx, name, token)
		if x < 30 {
			d.ReleaseRW(rctx, name, token) // the double release of a retry loop
		}
	}
}

// checkRWLocks runs the read/write lock checkers over the history and the
// settled audit trail.
func (r *run) checkRWLocks(ops []check.Op, events []check.AuditEvent) {
	t := r.t
	if *flagRWClients == 0 {
		return
	}
	counts := map[string]int{}
	resolved := check.ResolveRWLocks(ops, events)
	for _, op := range resolved {
		switch {
		case !op.OnRWLock():
		case op.Kind == check.RWAcquire && op.Result == check.OK:
			counts[op.Mode+" granted"]++
		case op.Kind == check.RWAcquire && op.Result == check.Rejected:
			counts[op.Mode+" refused"]++
			if op.Strict() {
				counts["strict refusals"]++
			}
		case op.Kind == check.FPut && op.Result == check.OK:
			counts["fenced writes accepted"]++
		case op.Kind == check.FPut && op.Code == "not_holder":
			counts["fenced writes refused as not_holder"]++
		case op.Kind == check.RWGet && op.Result == check.OK && len(op.OutWaiters) > 0:
			counts["reads showing waiters"]++
		case op.Result == check.Unknown && op.Status >= 200 && op.Status < 300:
			t.Errorf("op %d (%s %s on n%d): a %d that is not a Hold or an RWLock: %s", op.ID, op.Kind, op.RWLock, op.Node+1, op.Status, op.Err)
		}
	}
	// The waiters a read showed and the trail granted later are what the
	// read-based FIFO check orders acquires after.
	if n := check.WaitersGranted(resolved, events); n > 0 {
		counts["waiters shown, then granted"] = n
	}
	r.logf("rwlocks: %v", counts)
	if counts["read granted"] == 0 || counts["write granted"] == 0 || counts["fenced writes accepted"] == 0 {
		t.Errorf("the rwlock workload of %d clients had no read grant, no write grant or no fenced write accepted (%v): it checked too little", *flagRWClients, counts)
	}
	for _, v := range check.CheckRWLockAudit(ops, events) {
		t.Error("rwlock audit:", v)
	}
	r.linearizable("rwlocks' linearizability", "rwlock", "rwlocks.html", func(html string) (bool, error) { return check.CheckRWLocks(resolved, 5*time.Minute, html) })
}
