package lock_test

import (
	"context"
	"testing"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// TestWait_TheWaiterNextInLineFollowsAHandoverWithoutARead: when a release
// hands the lock to the head of the queue, the waiter behind the head
// learns from that revision's events that it heads the queue now, and
// waits on the lock with no read of its own; each is then handed the lock
// in turn, in queue order.
func TestWait_TheWaiterNextInLineFollowsAHandoverWithoutARead(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	held, waits := holdWithThreeQueued(t, e, ctx, ctx)
	before := lock.Looks(e)
	held = handOnInTurn(t, e, held, waits, nil)
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
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	leaving, leave := context.WithCancel(ctx)
	first, waits := holdWithThreeQueued(t, e, ctx, leaving)
	w1, w2, w3 := waits[0], waits[1], waits[2]

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
