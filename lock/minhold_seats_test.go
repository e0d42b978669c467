package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// A permit released inside its window keeps its seat until the window
// ends: the other seats are free, that one is not.
func TestMinHold_PermitKeepsItsSeat(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const window = 1500 * time.Millisecond
	req := lock.PermitRequest{Name: "jobs", Owner: "a", Limit: 2, MinHold: window}
	a, err := e.AcquirePermit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ReleasePermit(ctx, "jobs", a.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "jobs", Owner: "b", Limit: 2}); err != nil {
		t.Fatalf("the seat beside the kept one: %v", err)
	}
	_, err = e.AcquirePermit(ctx, lock.PermitRequest{Name: "jobs", Owner: "c", Limit: 2})
	var he *lock.HeldError
	if !errors.As(err, &he) || !errors.Is(err, lock.ErrSemaphoreFull) || he.RetryAfter <= 0 || he.RetryAfter > window {
		t.Fatalf("a third permit inside a's window: %v, want semaphore full with RetryAfter within (0, %s]", err, window)
	}
	c, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "jobs", Owner: "c", Limit: 2, Wait: 10 * time.Second})
	if err != nil {
		t.Fatalf("waiting for the kept seat: %v", err)
	}
	if c.AcquiredAt.Before(windowEnd(a)) {
		t.Fatalf("granted at %s, inside a's window that ends at %s", c.AcquiredAt, windowEnd(a))
	}
}

// A write hold's window keeps readers out; a read hold's keeps writers
// out but lets readers in.
func TestMinHold_ReadWriteWindows(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const window = 1500 * time.Millisecond
	w, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "cat", Mode: lock.ModeWrite, Owner: "w", MinHold: window})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ReleaseRW(ctx, "cat", w.Token); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "cat", Mode: lock.ModeRead, Owner: "r"}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("read inside the writer's window: %v, want refused", err)
	}
	r1, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "cat", Mode: lock.ModeRead, Owner: "r1", Wait: 10 * time.Second, MinHold: window})
	if err != nil {
		t.Fatalf("read waiting out the writer's window: %v", err)
	}
	if r1.AcquiredAt.Before(windowEnd(w)) {
		t.Fatalf("read granted at %s, inside the writer's window that ends at %s", r1.AcquiredAt, windowEnd(w))
	}

	if err := e.ReleaseRW(ctx, "cat", r1.Token); err != nil {
		t.Fatal(err)
	}
	r2, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "cat", Mode: lock.ModeRead, Owner: "r2"})
	if err != nil {
		t.Fatalf("read inside another read's window: %v, want granted", err)
	}
	if err := e.ReleaseRW(ctx, "cat", r2.Token); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "cat", Mode: lock.ModeWrite, Owner: "w2"}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("write inside a read's window: %v, want refused", err)
	}
	w2, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "cat", Mode: lock.ModeWrite, Owner: "w2", Wait: 10 * time.Second})
	if err != nil {
		t.Fatalf("write waiting out the read's window: %v", err)
	}
	if w2.AcquiredAt.Before(windowEnd(r1)) {
		t.Fatalf("write granted at %s, inside r1's window that ends at %s", w2.AcquiredAt, windowEnd(r1))
	}
	// The write grant cleared the readers' spent guards.
	if left := holdtest.KeysUnder(t, e.Client(), holdtest.Prefix+"delay/"); len(left) != 0 {
		t.Fatalf("guards left after the write grant: %q", left)
	}
}
