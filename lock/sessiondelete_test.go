package lock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// TestDeleteSession_HandsItsLocksToTheirWaitersAsReleaseDoes: deleting a
// session releases its locks as Release does: the oldest waiter of each
// gets the lock in the same txn (its token is the release's revision), at
// once; the session hold's lock-delay does not apply, since a deletion is
// a clean release; and the waiter's own lock-delay guard is in place, so
// the next hold's end that is not a release starts the delay.
func TestDeleteSession_HandsItsLocksToTheirWaitersAsReleaseDoes(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "svc", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mine := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "sd", Owner: "svc", Session: s.ID, LockDelay: time.Minute})
	next := acquireAsync(ctx, e, lock.AcquireRequest{Name: "sd", Owner: "next", TTL: 20 * time.Second, Wait: 30 * time.Second, LockDelay: time.Minute})
	queued(t, e, "sd", 1)
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatalf("delete session: %v", err)
	}
	var l *lock.Lock
	select {
	case got := <-next:
		if got.err != nil {
			t.Fatalf("waiter: %v", got.err)
		}
		l = got.l
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock within 5s of its holder's session being deleted")
	}
	evs := holdtest.History(t, e, "sd")
	if len(evs) != 3 || evs[0].Type != lock.EventAcquired || evs[1].Type != lock.EventReleased || evs[2].Type != lock.EventAcquired {
		t.Fatalf("history, newest first: %+v; want acquired, released, acquired", evs)
	}
	if evs[1].Token != mine.Token || evs[1].Detail != "session deleted" || evs[0].Owner != "next" {
		t.Fatalf("history %+v does not show the session's hold %d released by the deletion, then next's", evs, mine.Token)
	}
	if l.Token != evs[1].Revision || evs[0].Revision != evs[1].Revision {
		t.Fatalf("the waiter's token %d and acquired event (revision %d) are not the release's revision %d: the lock was not handed over in the deletion's txn",
			l.Token, evs[0].Revision, evs[1].Revision)
	}
	// The handover put the waiter's guard: a revoke starts its delay.
	if _, err := e.Revoke(ctx, "sd", "test"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	var de *lock.DelayedError
	if _, err := e.Get(ctx, "sd"); !errors.As(err, &de) || de.Cause != lock.EventRevoked {
		t.Fatalf("get after revoking the handed-over hold: %v; want a DelayedError caused by the revoke", err)
	}
}

// TestDeleteSession_ReleasesMoreLocksThanOneTxnTakes: a session holding
// more locks than one release txn ends (they go in batches, under etcd's
// MaxTxnOps) has every one released, each recorded once, and a waiter
// queued on a lock of a later batch is handed it.
func TestDeleteSession_ReleasesMoreLocksThanOneTxnTakes(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "svc", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const n = 70 // three batches
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("many-%02d", i)
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: names[i], Owner: "svc", Session: s.ID})
	}
	last := names[n-1]
	next := acquireAsync(ctx, e, lock.AcquireRequest{Name: last, Owner: "next", TTL: 20 * time.Second, Wait: 30 * time.Second})
	queued(t, e, last, 1)
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatalf("delete session: %v", err)
	}
	select {
	case got := <-next:
		if got.err != nil || got.l.Owner != "next" {
			t.Fatalf("waiter on %s: %+v, %v", last, got.l, got.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the waiter on %s did not get it within 5s of the session's deletion", last)
	}
	for _, name := range names[:n-1] {
		if _, err := e.Get(ctx, name); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("%s after the deletion: %v, want ErrNotHeld", name, err)
		}
		released := 0
		for _, ev := range holdtest.History(t, e, name) {
			if ev.Type == lock.EventReleased && ev.Detail == "session deleted" {
				released++
			}
		}
		if released != 1 {
			t.Fatalf("%s: %d releases recorded for the deletion, want 1", name, released)
		}
	}
}
