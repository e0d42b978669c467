package lock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// handedTo checks that the release of prev handed name to next in its own
// txn: the released and the acquired events share the revision that is
// next's token.
func handedTo(t *testing.T, e *lock.Engine, name string, prev, next *lock.Lock) {
	t.Helper()
	evs := holdtest.History(t, e, name)
	if len(evs) < 2 || evs[0].Type != lock.EventAcquired || evs[0].Token != next.Token ||
		evs[1].Type != lock.EventReleased || evs[1].Token != prev.Token || evs[1].Revision != next.Token {
		t.Fatalf("history, newest first: %+v; want %d released and %d acquired at its revision", evs[:min(len(evs), 2)], prev.Token, next.Token)
	}
}

// holdWithThreeQueued takes "k" for "first" and queues w1, w2 and w3 behind
// it, in that order; w2 waits under ctx2, so that a test can make it
// leave.
func holdWithThreeQueued(t *testing.T, e *lock.Engine, ctx, ctx2 context.Context) (*lock.Lock, []<-chan acquired) {
	t.Helper()
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "k", Owner: "first", TTL: 10 * time.Second})
	var waits []<-chan acquired
	for i, c := range []context.Context{ctx, ctx2, ctx} {
		waits = append(waits, acquireAsync(c, e, lock.AcquireRequest{Name: "k", Owner: fmt.Sprintf("w%d", i+1), TTL: 10 * time.Second, Wait: 30 * time.Second}))
		queued(t, e, "k", i+1)
	}
	return first, waits
}

// handOnInTurn releases held, then each waiter's hold in turn, and checks
// that each release handed "k" to the next waiter in its own txn; each is
// called with every waiter's hold. It returns the last hold.
func handOnInTurn(t *testing.T, e *lock.Engine, held *lock.Lock, waits []<-chan acquired, each func(i int, l *lock.Lock)) *lock.Lock {
	t.Helper()
	ctx := holdtest.Ctx(t)
	for i, w := range waits {
		if err := e.Release(ctx, "k", held.Token); err != nil {
			t.Fatalf("release of %d: %v", held.Token, err)
		}
		got := <-w
		if got.err != nil || got.l.Owner != fmt.Sprintf("w%d", i+1) {
			t.Fatalf("waiter %d: %+v, %v", i+1, got.l, got.err)
		}
		handedTo(t, e, "k", held, got.l)
		if each != nil {
			each(i, got.l)
		}
		held = got.l
	}
	return held
}

// TestRelease_HandsOnToTheEntriesItReadBehindTheHead: a release that hands
// the lock over keeps the entries it read behind the head with the hold it
// begins, and each release after it hands the lock to the next of them
// in its own txn, in queue order, down to the last.
func TestRelease_HandsOnToTheEntriesItReadBehindTheHead(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	held, waits := holdWithThreeQueued(t, e, ctx, ctx)
	held = handOnInTurn(t, e, held, waits, func(i int, l *lock.Lock) {
		if kept := lock.KeptBehind(e, "k", l.Token); len(kept) != len(waits)-1-i {
			t.Errorf("the hold of %s keeps %d entries behind it (%q), want %d", l.Owner, len(kept), kept, len(waits)-1-i)
		}
	})
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
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	leaving, leave := context.WithCancel(ctx)
	first, waits := holdWithThreeQueued(t, e, ctx, leaving)
	w1, w2, w3 := waits[0], waits[1], waits[2]

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
	evs := holdtest.History(t, e, "k")
	if len(evs) < 2 || evs[0].Type != lock.EventAcquired || evs[0].Owner != "w3" || evs[1].Type != lock.EventReleased || evs[1].Token != got.l.Token {
		t.Fatalf("history, newest first: %+v; want w1's release, then w3's acquire", evs[:min(len(evs), 2)])
	}
	if last.l.Token == evs[1].Revision {
		t.Errorf("w3 was handed the lock in w1's release txn (revision %d): that release read the queue instead of using the entries kept behind w1", last.l.Token)
	}
	if acq := holdtest.EventsOf(evs, lock.EventAcquired); len(acq) != 3 {
		t.Errorf("acquired events %+v, want first's, w1's and w3's", acq)
	}
}
