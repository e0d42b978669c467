package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// The node that granted a hold releases it in one txn, from the record it
// wrote (internal/core/holdcache.go). These tests put that node, A, where its record is
// not the whole story: a waiter queued through another node B, which A
// never saw, and a hold that ended and was taken again through B.

// twoNodes is A and B: two engines over one member, as two nodes of one
// cluster are.
func twoNodes(t *testing.T) (a, b *lock.Engine) {
	t.Helper()
	a, m := holdtest.NewEngine(t)
	return a, holdtest.StartEngine(t, m, lock.DefaultConfig())
}

// TestRelease_ThroughTheGrantingNodeHandsOverToAWaiterItNeverSaw: the
// one-txn release requires an empty queue, so a waiter queued through
// another node still gets the lock in the release's own txn, first in
// line.
func TestRelease_ThroughTheGrantingNodeHandsOverToAWaiterItNeverSaw(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	first := holdtest.MustAcquire(t, a, lock.AcquireRequest{Name: "h", Owner: "first", TTL: 10 * time.Second})
	next := acquireAsync(ctx, b, lock.AcquireRequest{Name: "h", Owner: "next", TTL: 10 * time.Second, Wait: 30 * time.Second})
	queued(t, b, "h", 1)
	if err := a.Release(ctx, "h", first.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	got := <-next
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	evs := holdtest.History(t, a, "h")
	if len(evs) != 3 || evs[1].Type != lock.EventReleased || evs[0].Type != lock.EventAcquired || evs[0].Owner != "next" {
		t.Fatalf("history, newest first: %+v; want acquired by next, released, acquired", evs)
	}
	if got.l.Token != evs[1].Revision {
		t.Fatalf("the waiter's token %d is not the release's revision %d: the lock was not handed over in the release txn", got.l.Token, evs[1].Revision)
	}
	if err := b.Release(ctx, "h", got.l.Token); err != nil {
		t.Fatalf("release the handed-over hold: %v", err)
	}
	checkNoQueueLeft(t, a, nil)
}

// TestRelease_ThroughTheGrantingNodeNeverEndsALaterHold: A's record of a
// hold revoked elsewhere is stale; releasing with its token fails as it
// would without the record, and the hold taken since stays.
func TestRelease_ThroughTheGrantingNodeNeverEndsALaterHold(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	old := holdtest.MustAcquire(t, a, lock.AcquireRequest{Name: "h", Owner: "old", TTL: 10 * time.Second})
	if _, err := b.Revoke(ctx, "h", "test"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	cur := holdtest.MustAcquire(t, b, lock.AcquireRequest{Name: "h", Owner: "cur", TTL: 10 * time.Second})
	if err := a.Release(ctx, "h", old.Token); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("release with the revoked hold's token: %v, want ErrTokenMismatch", err)
	}
	l, err := a.Get(ctx, "h")
	if err != nil || l.Token != cur.Token || l.Owner != "cur" {
		t.Fatalf("after the stale release: %+v, %v; want cur's hold %d", l, err, cur.Token)
	}
	evs := holdtest.History(t, a, "h")
	if n := len(holdtest.EventsOf(evs, lock.EventReleased)); n != 0 {
		t.Fatalf("history %+v records a release that did not happen", evs)
	}
}

// TestRelease_ThroughTheGrantingNodeChecksTheCredential: the record the
// node kept names the acquiring credential, and another credential may
// not end the hold with it; the holder then still can.
func TestRelease_ThroughTheGrantingNodeChecksTheCredential(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const credA, credB = "cred-aaaaaaaaaaaa", "cred-bbbbbbbbbbbb"
	first, _, err := e.Acquire(as(ctx, credA, false), lock.AcquireRequest{Name: "h", Owner: "a", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Release(as(ctx, credB, false), "h", first.Token); !errors.Is(err, lock.ErrNotOwner) {
		t.Fatalf("release by another credential: %v, want ErrNotOwner", err)
	}
	if err := e.Release(as(ctx, credA, false), "h", first.Token); err != nil {
		t.Fatalf("release by the holder: %v", err)
	}
	if !isNotHeld(t, e, "h") {
		t.Fatal("the lock is still held after its holder released it")
	}
}
