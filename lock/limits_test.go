package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// newCappedEngine starts an engine whose config change sets.
func newCappedEngine(t *testing.T, change func(*lock.Config)) *lock.Engine {
	t.Helper()
	cfg := lock.DefaultConfig()
	change(&cfg)
	return holdtest.StartEngine(t, testetcd.Start(t), cfg)
}

// dataKeys lists the keys under the prefix except the expiry recorder's
// cursor, which comes and moves by itself.
func dataKeys(t *testing.T, e *lock.Engine) []string {
	t.Helper()
	var keys []string
	for _, k := range holdtest.KeysUnder(t, e.Client(), prefix) {
		if !strings.HasPrefix(k, "meta/") {
			keys = append(keys, k)
		}
	}
	return keys
}

func TestAcquire_WaiterBeyondTheCapIsRefusedAndLeavesNothing(t *testing.T) {
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxWaitersPerLock = 2 })
	ctx := holdtest.Ctx(t)
	cli := e.Client()
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "busy", Owner: "holder"})
	// The node's waiter lease and a pooled own lease outlive single
	// waiters by design: a warm-up makes them part of the baseline.
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "busy", Owner: "warmup", Wait: 50 * time.Millisecond}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("warm-up waiter: %v, want ErrHeld", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, o := range []string{"first", "second"} {
		go e.Acquire(wctx, lock.AcquireRequest{Name: "busy", Owner: o, Wait: time.Minute})
		poll.Until(t, 10*time.Second, o+" queued", func() bool {
			ws, err := e.Waiters(ctx, "busy")
			return err == nil && len(ws) > 0 && ws[len(ws)-1].Owner == o
		})
	}
	// And a try makes the pool hold a lease again, for the next acquire.
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "busy", Owner: "try"}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("try: %v, want ErrHeld", err)
	}
	// The history index writes the trail of what came before on its own
	// time: let it catch up first, so that the keys compared are the
	// refused waiter's alone.
	holdtest.History(t, e, "busy")
	leases, keys := leaseCount(t, cli), dataKeys(t, e)

	start := time.Now()
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "busy", Owner: "third", Wait: time.Minute})
	le := holdtest.AsLimit(t, err, lock.ErrTooManyWaiters)
	if le.Limit != 2 || le.RetryAfter <= 0 || !strings.Contains(le.Reason, `"busy"`) {
		t.Fatalf("limit error %+v, want limit 2, a retry hint and the lock's name", le)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("refusal took %s: the third waiter waited instead of failing at once", took)
	}
	ws, err := e.Waiters(ctx, "busy")
	if err != nil || len(ws) != 2 || ws[0].Owner != "first" || ws[1].Owner != "second" {
		t.Fatalf("queue after the refusal: %+v, %v; want first and second, undisturbed", ws, err)
	}
	if after := dataKeys(t, e); !slices.Equal(after, keys) {
		t.Fatalf("keys changed by a refused waiter:\nbefore %v\nafter  %v", keys, after)
	}
	if n := leaseCount(t, cli); n != leases {
		t.Fatalf("%d leases after the refusal, want %d", n, leases)
	}
	for _, ev := range holdtest.History(t, e, "busy") {
		if ev.Owner == "third" {
			t.Fatalf("the refused waiter is in the audit trail: %+v", ev)
		}
	}
}

func TestAcquire_ConcurrentJoinersSettleWithinTheWaiterCap(t *testing.T) {
	const limit, joiners = 5, 24
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxWaitersPerLock = limit })
	ctx := holdtest.Ctx(t)
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "hot", Owner: "holder"})

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var refused, other atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	for i := range joiners {
		wg.Go(func() {
			<-release // all at once, as far as 2 cores allow
			_, _, err := e.Acquire(wctx, lock.AcquireRequest{Name: "hot", Owner: owner(i), Wait: time.Minute})
			switch {
			case errors.Is(err, lock.ErrTooManyWaiters):
				refused.Add(1)
			case err == nil: // the head of the queue, once the holder left
			case !errors.Is(err, context.Canceled):
				other.Add(1)
				t.Errorf("joiner %d: %v, want ErrTooManyWaiters or to wait", i, err)
			}
		})
	}
	close(release)
	// Settled: every joiner either left with ErrTooManyWaiters or waits
	// in the queue. Entries beyond the cap may exist for a moment, until
	// their joiners see the count and leave.
	queued := func() int {
		ws, err := e.Waiters(ctx, "hot")
		if err != nil {
			t.Fatal(err)
		}
		return len(ws)
	}
	poll.Until(t, 20*time.Second, "joiners settled within the cap", func() bool {
		q := queued()
		return q <= limit && q+int(refused.Load()) == joiners
	})
	poll.Consistently(t, 300*time.Millisecond, "the queue stays within the cap", func() bool {
		q := queued()
		return q <= limit && q+int(refused.Load()) == joiners
	})
	if q := queued(); q < 1 {
		t.Fatalf("%d waiters queued: the first joiner always fits", q)
	}
	// The queue works on: the holder leaves, the head of the queue wins.
	if err := e.Release(ctx, "hot", h.Token); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "a queued joiner took the lock", func() bool { return !isNotHeld(t, e, "hot") })
	cancel()
	wg.Wait()
	if other.Load() != 0 {
		t.Fatalf("%d joiners failed otherwise", other.Load())
	}
}

func TestSession_LockBeyondTheCapIsRefusedAndLeavesNothing(t *testing.T) {
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxLocksPerSession = 3 })
	ctx := holdtest.Ctx(t)
	cli := e.Client()
	s, err := e.CreateSession(ctx, "w", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var held []*lock.Lock
	for _, n := range []string{"l1", "l2", "l3"} {
		held = append(held, holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: "w", Session: s.ID}))
	}
	// The history index puts the trail under a bucket lease of its own
	// once it indexes the first events: let it, before counting.
	holdtest.History(t, e, "l1")
	leases := leaseCount(t, cli)

	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "l4", Owner: "w", Session: s.ID})
	le := holdtest.AsLimit(t, err, lock.ErrTooManyLocks)
	if le.Limit != 3 || le.RetryAfter != 0 || !strings.Contains(le.Reason, s.ID) {
		t.Fatalf("limit error %+v, want limit 3, no retry hint (only the session's owner can make room) and the session", le)
	}
	if !isNotHeld(t, e, "l4") {
		t.Fatal("the refused lock is held")
	}
	got, err := e.GetSession(ctx, s.ID)
	if err != nil || !slices.Equal(got.Locks, []string{"l1", "l2", "l3"}) {
		t.Fatalf("session after the refusal: %+v, %v", got, err)
	}
	if held := holdtest.KeysUnder(t, cli, holdtest.Prefix+"locks/"); !slices.Equal(held, []string{"l1", "l2", "l3"}) {
		t.Fatalf("lock keys %v, want l1 l2 l3", held)
	}
	if n := leaseCount(t, cli); n != leases {
		t.Fatalf("%d leases after the refusal, want %d", n, leases)
	}
	// The grant was undone in the open: its token was never handed out,
	// and the trail shows it ended at once, saying why.
	evs := holdtest.History(t, e, "l4")
	if len(evs) != 2 || evs[0].Type != lock.EventReleased || evs[1].Type != lock.EventAcquired ||
		evs[0].Token != evs[1].Revision || !strings.Contains(evs[0].Detail, "refused") {
		t.Fatalf("history of l4: %+v, want acquired then released with the reason", evs)
	}

	// A release makes room; acquire idempotence is not counted twice.
	if err := e.Release(ctx, "l1", held[0].Token); err != nil {
		t.Fatal(err)
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "l4", Owner: "w", Session: s.ID})
	if _, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l4", Owner: "w", Session: s.ID}); err != nil || fresh {
		t.Fatalf("acquire again in the same session at the cap: fresh=%v, %v; want the hold it has", fresh, err)
	}
	// A revoke makes room too, and the room is counted right: one more
	// fits, and the next does not.
	if _, err := e.Revoke(ctx, "l2", "test"); err != nil {
		t.Fatal(err)
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "l5", Owner: "w", Session: s.ID})
	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "l6", Owner: "w", Session: s.ID})
	holdtest.AsLimit(t, err, lock.ErrTooManyLocks)
	// The session's tallies end with it.
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if keys := holdtest.KeysUnder(t, cli, holdtest.Prefix+"sessiontally/"); len(keys) != 0 {
		t.Fatalf("tally keys after the session's deletion: %v", keys)
	}
}

func TestSession_ConcurrentAcquiresSettleWithinTheLockCap(t *testing.T) {
	const limit, acquirers = 4, 20
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxLocksPerSession = limit })
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var won, refused atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	for i := range acquirers {
		wg.Go(func() {
			<-release
			_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: fmt.Sprintf("c%02d", i), Owner: "w", Session: s.ID})
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, lock.ErrTooManyLocks):
				refused.Add(1)
			default:
				t.Errorf("acquire c%02d: %v", i, err)
			}
		})
	}
	close(release)
	wg.Wait()
	got, err := e.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Locks); n > limit || n < 1 || n != int(won.Load()) || int(won.Load()+refused.Load()) != acquirers {
		t.Fatalf("session holds %v after %d won and %d refused; want at most %d, as many as won", got.Locks, won.Load(), refused.Load(), limit)
	}
	if held := holdtest.KeysUnder(t, e.Client(), holdtest.Prefix+"locks/"); !slices.Equal(held, got.Locks) {
		t.Fatalf("lock keys %v, want only the session's %v", held, got.Locks)
	}
}

func TestCreateSession_BeyondTheCapIsRefusedAndLeavesNothing(t *testing.T) {
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxSessions = 3 })
	ctx := holdtest.Ctx(t)
	cli := e.Client()
	for range 3 {
		if _, err := e.CreateSession(ctx, "w", 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	leases := leaseCount(t, cli)
	_, err := e.CreateSession(ctx, "w", 30*time.Second)
	le := holdtest.AsLimit(t, err, lock.ErrTooManySessions)
	if le.Limit != 3 || le.RetryAfter <= 0 {
		t.Fatalf("limit error %+v, want limit 3 and a retry hint", le)
	}
	if n := len(holdtest.KeysUnder(t, cli, holdtest.Prefix+"sessions/")); n != 3 {
		t.Fatalf("%d sessions after the refusal, want 3", n)
	}
	if n := leaseCount(t, cli); n != leases {
		t.Fatalf("%d leases after the refusal, want %d: no lease granted, or none left", n, leases)
	}
}

// Run over the engine's own embedded member (its exact check reads
// locally) and as over external etcd (it reads linearizably).
func TestCreateSession_ConcurrentCreatesSettleWithinTheCap(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run(map[bool]string{true: "own member", false: "external etcd"}[own], func(t *testing.T) {
			m := testetcd.Start(t)
			cfg := lock.DefaultConfig()
			cfg.MaxSessions = 5
			if own {
				cfg.Embedded = m
			}
			concurrentCreatesSettleWithinTheCap(t, holdtest.StartEngine(t, m, cfg), cfg.MaxSessions)
		})
	}
}

func concurrentCreatesSettleWithinTheCap(t *testing.T, e *lock.Engine, limit int) {
	const creators = 24
	ctx := holdtest.Ctx(t)
	cli := e.Client()
	leases := leaseCount(t, cli)
	var won atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	for i := range creators {
		wg.Go(func() {
			<-release
			_, err := e.CreateSession(ctx, owner(i), 30*time.Second)
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, lock.ErrTooManySessions):
				t.Errorf("create session %d: %v", i, err)
			}
		})
	}
	close(release)
	wg.Wait()
	// Exactly the cap: the earliest creates stay even when all of them
	// saw the others (no refusing everyone), and the rest leave.
	n := len(holdtest.KeysUnder(t, cli, holdtest.Prefix+"sessions/"))
	if n != limit || n != int(won.Load()) {
		t.Fatalf("%d sessions after %d creates succeeded; want %d, as many as succeeded", n, won.Load(), limit)
	}
	// Every refused create that got as far as a lease revoked it.
	if got := leaseCount(t, cli); got != leases+n {
		t.Fatalf("%d leases, want %d (the sessions' only)", got, leases+n)
	}
}

// Nodes of one cluster may disagree on the cap: one with it on counts the
// session's locks, one with it off keeps no tally, but still counts the
// releases of a session that has one, so the node with the cap never
// refuses an acquire the session has room for.
func TestSession_ReleasesOnANodeWithoutTheCapStillCountForANodeWithIt(t *testing.T) {
	m := testetcd.Start(t)
	capped := lock.DefaultConfig()
	capped.MaxLocksPerSession = 2
	on, off := holdtest.StartEngine(t, m, capped), holdtest.StartEngine(t, m, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	s, err := on.CreateSession(ctx, "w", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Fill the session on the capped node, empty it on the other, three
	// times over: without the other node's counting, the second round
	// would already be refused.
	for round := range 3 {
		var held []*lock.Lock
		for _, n := range []string{"a", "b"} {
			held = append(held, holdtest.MustAcquire(t, on, lock.AcquireRequest{Name: n, Owner: "w", Session: s.ID}))
		}
		for _, l := range held {
			if err := off.Release(ctx, l.Name, l.Token); err != nil {
				t.Fatalf("round %d: release %s on the node without the cap: %v", round, l.Name, err)
			}
		}
	}
	// And the cap still holds.
	holdtest.MustAcquire(t, on, lock.AcquireRequest{Name: "a", Owner: "w", Session: s.ID})
	holdtest.MustAcquire(t, off, lock.AcquireRequest{Name: "b", Owner: "w", Session: s.ID}) // not counted: taken without the cap
	holdtest.MustAcquire(t, on, lock.AcquireRequest{Name: "c", Owner: "w", Session: s.ID})
	_, _, err = on.Acquire(ctx, lock.AcquireRequest{Name: "d", Owner: "w", Session: s.ID})
	holdtest.AsLimit(t, err, lock.ErrTooManyLocks)
}
