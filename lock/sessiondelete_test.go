package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
)

// TestDeleteSession_HandsItsLocksToTheirWaitersAsReleaseDoes: deleting a
// session releases its locks as Release does: the oldest waiter of each
// gets the lock in the same txn (its token is the release's revision), at
// once; the session hold's lock-delay does not apply, since a deletion is
// a clean release; and the waiter's own lock-delay guard is in place, so
// the next hold's end that is not a release starts the delay.
func TestDeleteSession_HandsItsLocksToTheirWaitersAsReleaseDoes(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	ctx := ctxT(t)
	s, err := e.CreateSession(ctx, "svc", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mine := mustAcquire(t, e, lock.AcquireRequest{Name: "sd", Owner: "svc", Session: s.ID, LockDelay: time.Minute})
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
	evs := history(t, e, "sd")
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
