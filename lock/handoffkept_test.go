package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
)

// handedTo checks that the release of prev handed name to next in its own
// txn: the released and the acquired events share the revision that is
// next's token.
func handedTo(t *testing.T, e *lock.Engine, name string, prev, next *lock.Lock) {
	t.Helper()
	evs := history(t, e, name)
	if len(evs) < 2 || evs[0].Type != lock.EventAcquired || evs[0].Token != next.Token ||
		evs[1].Type != lock.EventReleased || evs[1].Token != prev.Token || evs[1].Revision != next.Token {
		t.Fatalf("history, newest first: %+v; want %d released and %d acquired at its revision", evs[:min(len(evs), 2)], prev.Token, next.Token)
	}
}

// TestRelease_HandsOnToTheEntriesItReadBehindTheHead: a release that hands
// the lock over keeps the entries it read behind the head with the hold it
// begins, and each release after it hands the lock to the next of them
// in its own txn, in queue order, down to the last.
func TestRelease_HandsOnToTheEntriesItReadBehindTheHead(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	ctx := ctxT(t)
	held := mustAcquire(t, e, lock.AcquireRequest{Name: "k", Owner: "first", TTL: 10 * time.Second})
	var waits []<-chan acquired
	for i := 1; i <= 3; i++ {
		waits = append(waits, acquireAsync(ctx, e, lock.AcquireRequest{Name: "k", Owner: owner(i), TTL: 10 * time.Second, Wait: 30 * time.Second}))
		queued(t, e, "k", i)
	}
	for i, w := range waits {
		if err := e.Release(ctx, "k", held.Token); err != nil {
			t.Fatalf("release of %d: %v", held.Token, err)
		}
		got := <-w
		if got.err != nil || got.l.Owner != owner(i+1) {
			t.Fatalf("waiter %d: %+v, %v", i+1, got.l, got.err)
		}
		handedTo(t, e, "k", held, got.l)
		if kept := lock.KeptBehind(e, "k", got.l.Token); len(kept) != len(waits)-1-i {
			t.Errorf("the hold of %s keeps %d entries behind it (%q), want %d", owner(i+1), len(kept), kept, len(waits)-1-i)
		}
		held = got.l
	}
	if err := e.Release(ctx, "k", held.Token); err != nil {
		t.Fatal(err)
	}
	if !isNotHeld(t, e, "k") {
		t.Error("the lock is held after the last release")
	}
}

// TestRelease_AKeptEntryThatLeftFreesTheLockForTheNext: when the entry a
// hold keeps behind it has left, the release frees the lock instead of
// handing it over, and the next waiter, now the oldest, takes it.
func TestRelease_AKeptEntryThatLeftFreesTheLockForTheNext(t *testing.T) {
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

	if err := e.Release(ctx, "k", first.Token); err != nil {
		t.Fatal(err)
	}
	got := <-w1
	if got.err != nil {
		t.Fatal(got.err)
	}
	if kept := lock.KeptBehind(e, "k", got.l.Token); len(kept) != 2 {
		t.Fatalf("the hold of w1 keeps %q behind it, want w2's and w3's entries", kept)
	}
	leave()
	if r := <-w2; r.err == nil {
		t.Fatalf("w2 was granted %+v after it left", r.l)
	}
	queued(t, e, "k", 1)

	if err := e.Release(ctx, "k", got.l.Token); err != nil {
		t.Fatalf("release of w1: %v", err)
	}
	last := <-w3
	if last.err != nil || last.l.Owner != "w3" {
		t.Fatalf("w3: %+v, %v", last.l, last.err)
	}
	evs := history(t, e, "k")
	if len(evs) < 2 || evs[0].Type != lock.EventAcquired || evs[0].Owner != "w3" || evs[1].Type != lock.EventReleased || evs[1].Token != got.l.Token {
		t.Fatalf("history, newest first: %+v; want w1's release, then w3's acquire", evs[:min(len(evs), 2)])
	}
	if last.l.Token == evs[1].Revision {
		t.Errorf("w3 was handed the lock in w1's release txn (revision %d): that release read the queue instead of using the entries kept behind w1", last.l.Token)
	}
	if acq := eventsOf(evs, lock.EventAcquired); len(acq) != 3 {
		t.Errorf("acquired events %+v, want first's, w1's and w3's", acq)
	}
}
