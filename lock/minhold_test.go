package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// windowEnd is when l's at-least window ends.
func windowEnd(l *lock.Lock) time.Time { return l.AcquiredAt.Add(l.MinHold) }

// mustBeDelayedUntil fails unless name is free and kept free until end
// by its last hold's guard, released inside its window.
func mustBeDelayedUntil(t *testing.T, e *lock.Engine, name string, end time.Time) {
	t.Helper()
	_, err := e.Get(holdtest.Ctx(t), name)
	var de *lock.DelayedError
	if !errors.As(err, &de) {
		t.Fatalf("get %s inside the window: %v, want a *DelayedError", name, err)
	}
	if !de.Until.Equal(end) {
		t.Fatalf("delayed until %s, want the window's end %s", de.Until, end)
	}
}

func TestMinHold_ReleaseInsideWindowKeepsTheLockUntilItEnds(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const window = 2 * time.Second
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "cron", Owner: "host-a", MinHold: window})
	if l.MinHold != window {
		t.Fatalf("MinHold = %s, want %s", l.MinHold, window)
	}
	if err := e.Release(ctx, "cron", l.Token); err != nil {
		t.Fatalf("release inside the window: %v", err)
	}
	mustBeDelayedUntil(t, e, "cron", windowEnd(l))

	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "cron", Owner: "host-b"})
	he := asHeld(t, err)
	if he.Holder != nil || he.RetryAfter <= 0 || he.RetryAfter > window {
		t.Fatalf("acquire inside the window: holder %+v, RetryAfter %s; want none, within (0, %s]", he.Holder, he.RetryAfter, window)
	}
	// A waiting acquire is granted when the window ends, not before.
	l2, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "cron", Owner: "host-b", Wait: 10 * time.Second})
	if err != nil || !fresh {
		t.Fatalf("waiting acquire: %v", err)
	}
	if l2.AcquiredAt.Before(windowEnd(l)) {
		t.Fatalf("granted at %s, inside the window that ends at %s", l2.AcquiredAt, windowEnd(l))
	}
	// The first hold ended when it was released, not when its window did
	// (the trail stamps a derived end when it reads the revision).
	poll.Until(t, 10*time.Second, "the release is in the history", func() bool {
		return len(holdtest.EventsOf(holdtest.History(t, e, "cron"), lock.EventReleased)) == 1
	})
	rel := holdtest.EventsOf(holdtest.History(t, e, "cron"), lock.EventReleased)[0]
	if rel.Token != l.Token || !rel.Time.Before(windowEnd(l)) {
		t.Fatalf("release event %+v: want token %d before the window's end %s", rel, l.Token, windowEnd(l))
	}
}

// A waiter queued when the hold ends inside its window is not handed the
// lock by the release: it takes it when the window ends.
func TestMinHold_ReleaseInsideWindowHandsNothingToTheQueue(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "q", Owner: "w1", MinHold: 1500 * time.Millisecond})
	type result struct {
		l   *lock.Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		l2, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "q", Owner: "w2", Wait: 10 * time.Second})
		got <- result{l2, err}
	}()
	poll.Until(t, 10*time.Second, "w2 waits", func() bool {
		ws, err := e.Waiters(ctx, "q")
		return err == nil && len(ws) == 1
	})
	if err := e.Release(ctx, "q", l.Token); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if r.l.AcquiredAt.Before(windowEnd(l)) {
		t.Fatalf("waiter granted at %s, inside the window that ends at %s", r.l.AcquiredAt, windowEnd(l))
	}
}

// A release after the window is a plain release: the next acquire gets
// the lock at once, and a hold with lock-delay as well as a window keeps
// its lock-delay for expiries and revokes only.
func TestMinHold_ReleaseAfterWindowFreesAtOnce(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "p", Owner: "w1", MinHold: 200 * time.Millisecond, LockDelay: time.Hour})
	poll.Until(t, 5*time.Second, "the window ends", func() bool { return time.Now().After(windowEnd(l)) })
	if err := e.Release(ctx, "p", l.Token); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "p", Owner: "w2"}); err != nil {
		t.Fatalf("acquire after a release past the window: %v", err)
	}
}

// A revoke inside the window keeps the window when it ends later than
// the lock-delay, and the lock-delay when that ends later.
func TestMinHold_RevokeKeepsTheLaterOfWindowAndDelay(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "r", Owner: "w1", MinHold: time.Hour, LockDelay: time.Second})
	if _, err := e.Revoke(ctx, "r", "operator"); err != nil {
		t.Fatal(err)
	}
	mustBeDelayedUntil(t, e, "r", windowEnd(l))

	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "r2", Owner: "w1", MinHold: time.Second, LockDelay: time.Hour})
	if _, err := e.Revoke(ctx, "r2", "operator"); err != nil {
		t.Fatal(err)
	}
	_, err := e.Get(ctx, "r2")
	var de *lock.DelayedError
	if !errors.As(err, &de) || de.Until.Before(time.Now().Add(59*time.Minute)) || de.Cause != lock.EventRevoked {
		t.Fatalf("after revoke: %v, want the hour's lock-delay", err)
	}
}

// An expiry inside the window keeps the window too.
func TestMinHold_ExpiryInsideWindowKeepsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a TTL: not in the fast tier")
	}
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "x", Owner: "w1", TTL: 2 * time.Second, MinHold: time.Hour})
	poll.Until(t, 15*time.Second, "the lock expires", func() bool {
		_, err := e.Get(ctx, "x")
		return errors.Is(err, lock.ErrNotHeld)
	})
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "x", Owner: "w2"})
	if he := asHeld(t, err); he.Holder != nil || he.RetryAfter < 59*time.Minute {
		t.Fatalf("acquire after the expiry: %+v, want the window's hour", he)
	}
	mustBeDelayedUntil(t, e, "x", windowEnd(l))
}

func TestMinHold_ElectionAndSetKeepTheirWindows(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	ld, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "el", Candidate: "a", MinHold: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Resign(ctx, "el", ld.Token); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "el", Candidate: "b"}); !errors.Is(err, lock.ErrElectionHeld) {
		t.Fatalf("campaign inside the leader's window: %v, want refused", err)
	}

	set, _, err := e.AcquireSet(ctx, lock.LockSetRequest{Names: []string{"s1", "s2"}, Owner: "a", MinHold: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ReleaseSet(ctx, set.Names, set.Token); err != nil {
		t.Fatal(err)
	}
	for _, name := range set.Names {
		mustBeDelayedUntil(t, e, name, windowEnd(set.Locks[0]))
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "s2", Owner: "b"}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("acquire of a set's lock inside the set's window: %v, want refused", err)
	}
}

func TestMinHold_OutOfBoundsIsRefused(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	for _, d := range []time.Duration{-time.Second, 25 * time.Hour} {
		_, _, err := e.Acquire(holdtest.Ctx(t), lock.AcquireRequest{Name: "b", Owner: "w1", MinHold: d})
		var ie *lock.InvalidError
		if !errors.As(err, &ie) || ie.Field != "min_hold" {
			t.Fatalf("min_hold %s: %v, want an invalid min_hold", d, err)
		}
	}
}
