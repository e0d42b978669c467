package lock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

// delayedByRevoke takes name with a lock-delay of an hour and revokes it.
func delayedByRevoke(t *testing.T, e *lock.Engine, name string) {
	t.Helper()
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: "w", LockDelay: time.Hour})
	if _, err := e.Revoke(holdtest.Ctx(t), name, "test"); err != nil {
		t.Fatal(err)
	}
}

func TestLockDelay_IsVisibleAndAnOperatorCanClearIt(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	delayedByRevoke(t, e, "held-up")

	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "held-up", Owner: "next"})
	var he *lock.HeldError
	if !errors.As(err, &he) || he.RetryAfter < 59*time.Minute || !strings.Contains(he.Reason, "revoked") {
		t.Fatalf("acquire under lock-delay: %v, want ErrHeld with about an hour to wait, saying the hold was revoked", err)
	}
	_, err = e.Get(ctx, "held-up")
	var de *lock.DelayedError
	if !errors.As(err, &de) || !errors.Is(err, lock.ErrNotHeld) || de.Cause != lock.EventRevoked || time.Until(de.Until) < 59*time.Minute {
		t.Fatalf("get of a delayed lock: %v, want a DelayedError (ErrNotHeld) until about an hour from now, caused by revoked", err)
	}
	_, delays, _, err := e.ListWithDelays(ctx, lock.ListOptions{})
	if err != nil || len(delays) != 1 || delays[0].Name != "held-up" || !delays[0].Until.Equal(de.Until) {
		t.Fatalf("list: delays %+v, err %v; want held-up's", delays, err)
	}

	if err := e.ClearDelay(ctx, "held-up", "set by mistake", "ops"); err != nil {
		t.Fatal(err)
	}
	if err := e.ClearDelay(ctx, "held-up", "", "ops"); !errors.Is(err, lock.ErrNotDelayed) {
		t.Fatalf("clearing again: %v, want ErrNotDelayed", err)
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "held-up", Owner: "next"})
	if err := e.ClearDelay(ctx, "held-up", "", "ops"); !errors.Is(err, lock.ErrNotDelayed) {
		t.Fatalf("clearing a held lock: %v, want ErrNotDelayed", err)
	}
	evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: "held-up", Types: []lock.EventType{lock.EventDelayCleared}})
	if err != nil || len(evs) != 1 || evs[0].Owner != "ops" || !strings.Contains(evs[0].Detail, "set by mistake") {
		t.Fatalf("delay_cleared events %+v (%v), want one by ops with the reason", evs, err)
	}
}

// TestLockDelay_ListPagesShowEveryDelayOnce pages through locks and delays
// interleaved by name with a page smaller than either.
func TestLockDelay_ListPagesShowEveryDelayOnce(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	for i := range 5 {
		delayedByRevoke(t, e, fmt.Sprintf("n%d-delayed", i))
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: fmt.Sprintf("n%d-held", i), Owner: "w"})
	}
	seenLocks, seenDelays := map[string]int{}, map[string]int{}
	o := lock.ListOptions{Limit: 2}
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		locks, delays, next, err := e.ListWithDelays(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range locks {
			seenLocks[l.Name]++
		}
		for _, d := range delays {
			seenDelays[d.Name]++
		}
		if next == "" {
			break
		}
		o.After = next
	}
	if len(seenLocks) != 5 || len(seenDelays) != 5 {
		t.Fatalf("saw %v and %v, want 5 locks and 5 delays", seenLocks, seenDelays)
	}
	for n, c := range seenLocks {
		if c != 1 {
			t.Fatalf("lock %s on %d pages", n, c)
		}
	}
	for n, c := range seenDelays {
		if c != 1 {
			t.Fatalf("delay %s on %d pages", n, c)
		}
	}
}
