package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// The lock set workload: clients beside the others that take sets of two
// or three locks of one pool at once (waiting in line, mostly), renew
// them, write with the set's token to the fenced resource named like each
// member, read them and release them, under the same nemesis; a few of
// the lock clients take single locks of the same pool (see client), so
// that sets and single locks contend. Their ops LockSetModel and
// CheckLockSetAudit check.

// setPool is the one pool of the workload (Op.Pool), and setWait bounds a
// waiting set acquire's wait, as permitWait does a permit's.
const (
	setPool = "acct"
	setWait = 2 * time.Second
)

// poolLocks are the locks of the pool, -chaos.lockset-locks of them.
func poolLocks() ([]string, error) {
	n := *flagSetLocks
	if n < 3 || n > check.MaxPoolLocks {
		return nil, fmt.Errorf("-chaos.lockset-locks: %d is not from 3 to %d", n, check.MaxPoolLocks)
	}
	locks := make([]string, n)
	for i := range locks {
		locks[i] = fmt.Sprintf("acct-%d", i)
	}
	return locks, nil
}

// setClient is one lock set client bound to one node: it takes a set of
// two or three locks of the pool, in a random order (three times in four
// waiting in line), and while it holds it renews it, writes with its
// token to each member's fenced resource, reads members and lingers;
// then it releases it, with the mistakes real holders make (releasing
// twice, stalling past the TTL and writing, renewing and releasing after,
// abandoning the set).
func (r *run) setClient(ctx context.Context, id int, rng *rand.Rand) {
	rctx := context.WithoutCancel(ctx)
	r.holdClient(ctx, id, rng, func(d *Driver, seq int) turn {
		d.Pool = setPool // every op of the client is on the pool
		perm := rng.Perm(len(r.pool))
		names := make([]string, 2+rng.IntN(2))
		for i := range names {
			names[i] = r.pool[perm[i]]
		}
		var wait time.Duration
		if rng.IntN(4) > 0 {
			wait = setWait/4 + time.Duration(rng.Int64N(int64(setWait*3/4)))
		}
		// Owners are unique, so the audit settles every Unknown acquire.
		me := fmt.Sprintf("ls%d-%d", id, seq)
		a := d.AcquireSet(rctx, names, me, wait)
		return turn{a, func() { d.Get(rctx, names[rng.IntN(len(names))]) }, func() { r.holdSet(ctx, d, rng, names, a.OutToken, me) }}
	})
}

// holdSet is what a client granted the set names with token does with it.
func (r *run) holdSet(ctx context.Context, d *Driver, rng *rand.Rand, names []string, token int64, me string) {
	rctx := context.WithoutCancel(ctx)
	for i := range 1 + rng.IntN(3) {
		if rng.IntN(2) == 0 {
			d.RenewSet(rctx, names, token)
		}
		for _, n := range names {
			d.FPut(rctx, n, token, fmt.Sprintf("%s-w%d", me, i))
		}
		if rng.IntN(3) == 0 {
			d.Get(rctx, names[rng.IntN(len(names))])
		}
		if rng.IntN(4) == 0 {
			d.FGet(rctx, names[rng.IntN(len(names))])
		}
		pace(ctx, rng, 300*time.Millisecond) // the work the set is for: the workload's pace
	}
	switch x := rng.IntN(100); {
	case x < 5:
		// A stall past the TTL: the set is gone (a waiter may hold its
		// locks by now), and what the client does next must be fenced
		// off or refused.
		stall(ctx, ttl+time.Second)
		d.FPut(rctx, names[0], token, me+"-late")
		d.RenewSet(rctx, names, token)
		d.Get(rctx, names[len(names)-1])
		d.ReleaseSet(rctx, names, token)
	case x < 10:
		// Abandoned: the lease expires and the recorder says so, of
		// every member.
	default:
		d.ReleaseSet(rctx, names, token)
		if x < 30 {
			d.ReleaseSet(rctx, names, token) // the double release of a retry loop
		}
	}
}

// checkLockSets runs the lock set checkers over the history and the
// settled audit trail.
func (r *run) checkLockSets(ops []check.Op, events []check.AuditEvent) {
	t := r.t
	if *flagSetClients == 0 {
		return
	}
	counts := map[string]int{}
	for _, op := range ops {
		switch {
		case !op.OnLockSet():
		case op.Result == check.Unknown && op.Status >= 200 && op.Status < 300:
			t.Errorf("op %d (%s %s on n%d): a %d that is not a LockSet: %s", op.ID, op.Kind, op.Name(), op.Node+1, op.Status, op.Err)
		case op.Kind == check.SetAcquire && op.Result == check.OK:
			counts[fmt.Sprintf("sets of %d granted", len(op.Set))]++
			if op.Wait != "" {
				counts["granted after waiting"]++
			}
		case op.Kind == check.SetAcquire && op.Result == check.Rejected:
			counts["set acquires refused"]++
			counts["holders shown by refusals"] += len(op.OutHolders)
		case op.Kind == check.SetAcquire && op.Result == check.Unknown:
			counts["set acquires unknown"]++
		case op.Kind == check.Acquire && op.Result == check.OK:
			counts["single locks granted"]++
		case op.Kind == check.FPut && op.Result == check.OK:
			counts["fenced writes accepted"]++
		case op.Kind == check.FPut && op.Result == check.Rejected:
			counts["fenced writes refused as stale"]++
		}
	}
	counts["set grants in the trail"], counts["member holds in the trail"] = check.SetGrants(events)
	r.logf("lock sets: %v", counts)
	if counts["sets of 2 granted"] == 0 || counts["sets of 3 granted"] == 0 || counts["single locks granted"] == 0 {
		t.Errorf("the lock set workload of %d clients had no set of 2 or of 3 granted, or no single lock of the pool (%v): it checked too little", *flagSetClients, counts)
	}
	for _, v := range check.CheckLockSetAudit(ops, events) {
		t.Error("lock set audit:", v)
	}
	r.linearizable("lock sets' linearizability", "lock set", "locksets.html", func(html string) (bool, error) {
		return check.CheckLockSets(check.ResolveLockSets(ops, events), 5*time.Minute, html)
	})
}
