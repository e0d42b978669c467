package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
)

// TestWait_TheWaiterNextInLineFollowsAHandoverWithoutARead: when a release
// hands the lock to the head of the queue, the waiter behind the head
// learns from that revision's events that it heads the queue now, and
// waits on the lock with no read of its own; each is then handed the lock
// in turn, in queue order.
func TestWait_TheWaiterNextInLineFollowsAHandoverWithoutARead(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	ctx := ctxT(t)
	held := mustAcquire(t, e, lock.AcquireRequest{Name: "k", Owner: "first", TTL: 10 * time.Second})
	var waits []<-chan acquired
	for i := 1; i <= 3; i++ {
		waits = append(waits, acquireAsync(ctx, e, lock.AcquireRequest{Name: "k", Owner: owner(i), TTL: 10 * time.Second, Wait: 30 * time.Second}))
		queued(t, e, "k", i)
	}
	before := lock.Looks(e)
	for i, w := range waits {
		if err := e.Release(ctx, "k", held.Token); err != nil {
			t.Fatalf("release of %d: %v", held.Token, err)
		}
		got := <-w
		if got.err != nil || got.l.Owner != owner(i+1) {
			t.Fatalf("waiter %d: %+v, %v", i+1, got.l, got.err)
		}
		handedTo(t, e, "k", held, got.l)
		held = got.l
	}
	if n := lock.Looks(e) - before; n != 0 {
		t.Errorf("the waiters read the lock %d times after the handovers, want 0: each learnt it was next from the handover's revision", n)
	}
	if err := e.Release(ctx, "k", held.Token); err != nil {
		t.Fatal(err)
	}
}

// TestWait_AWaiterWhoseEntryAheadLeftLooksAgain: a waiter whose entry
// ahead leaves without a grant cannot tell from that revision what it
// waits for next: it reads, finds the entry now ahead of it, and is
// granted the lock after that entry's waiter.
func TestWait_AWaiterWhoseEntryAheadLeftLooksAgain(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	ctx := ctxT(t)
	first := mustAcquire(t, e, lock.AcquireRequest{Name: "k", Owner: "first", TTL: 10 * time.Second})
	w1 := acquireAsync(ctx, e, lock.AcquireRequest{Name: "k", Owner: "w1", TTL: 10 * time.Second, Wait: 30 * time.Second})
	queued(t, e, "k", 1)
	leaving, leave := context.WithCancel(ctx)
	w2 := acquireAsync(leaving, e, lock.AcquireRequest{Name: "k", Owner: "w2", TTL: 10 * time.Second, Wait: 30 * time.Second})
	queued(t, e, "k", 2)
	w3 := acquireAsync(ctx, e, lock.AcquireRequest{Name: "k", Owner: "w3", TTL: 10 * time.Second, Wait: 30 * time.Second})
	queued(t, e, "k", 3)

	before := lock.Looks(e)
	leave()
	if r := <-w2; r.err == nil {
		t.Fatalf("w2 was granted %+v after it left", r.l)
	}
	queued(t, e, "k", 2)
	if err := e.Release(ctx, "k", first.Token); err != nil {
		t.Fatal(err)
	}
	got := <-w1
	if got.err != nil || got.l.Owner != "w1" {
		t.Fatalf("w1: %+v, %v", got.l, got.err)
	}
	if err := e.Release(ctx, "k", got.l.Token); err != nil {
		t.Fatal(err)
	}
	last := <-w3
	if last.err != nil || last.l.Owner != "w3" {
		t.Fatalf("w3: %+v, %v", last.l, last.err)
	}
	handedTo(t, e, "k", got.l, last.l)
	if n := lock.Looks(e) - before; n != 1 {
		t.Errorf("w3 read the lock %d times, want 1: once when w2's entry left, none when w1 was handed the lock", n)
	}
	if err := e.Release(ctx, "k", last.l.Token); err != nil {
		t.Fatal(err)
	}
}
