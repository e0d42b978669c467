package lock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
)

// endRevisions maps each revision at which one of names' holds with token
// ended (by any end) to how many ended there.
func endRevisions(t *testing.T, e *lock.Engine, names []string, token int64) map[int64]int {
	t.Helper()
	at := map[int64]int{}
	for _, n := range names {
		for _, ev := range holdtest.History(t, e, n) {
			if ev.Type != lock.EventAcquired && ev.Token == token {
				at[ev.Revision]++
			}
		}
	}
	return at
}

// TestLockSet_SessionDeletionEndsEveryMemberInOneTxn: a set in a session
// holds its members under the session's lease; deleting the session,
// which holds more locks than one of its release txns takes, ends the
// set's members together in one revision, and leaves the session
// idempotent for the set meanwhile.
func TestLockSet_SessionDeletionEndsEveryMemberInOneTxn(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Singles that sort before and after the set's names, so that a cut
	// of the session's locks by name would split the set.
	var singles []string
	for i := range 40 {
		n := owner(i)
		singles = append(singles, n)
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: "w", Session: s.ID})
	}
	names := []string{"w30-set", "w05-set", "w60-set"}
	set := mustSet(t, e, lock.LockSetRequest{Names: names, Owner: "w", Session: s.ID})
	again, fresh, err := e.AcquireSet(ctx, lock.LockSetRequest{Names: []string{"w60-set", "w30-set", "w05-set"}, Owner: "w", Session: s.ID})
	if err != nil || fresh || again.Token != set.Token || again.Locks[0].Name != "w60-set" {
		t.Fatalf("the set again in its session: %+v, fresh %v, %v", again, fresh, err)
	}
	got, err := e.GetSession(ctx, s.ID)
	if err != nil || len(got.Locks) != 43 {
		t.Fatalf("session: %+v, %v", got, err)
	}
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	at := endRevisions(t, e, names, set.Token)
	if len(at) != 1 {
		t.Fatalf("the set's members ended at revisions %v, want one", at)
	}
	for _, n := range append(singles, names...) {
		if !isNotHeld(t, e, n) {
			t.Fatalf("%s held after the session's deletion", n)
		}
	}
}

// TestLockSet_LeaseExpiryEndsEveryMemberAtOnce: a set's own lease ends
// every member in the revision etcd revokes it, and the recorder writes
// one expired event per member.
func TestLockSet_LeaseExpiryEndsEveryMemberAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a TTL: not in the fast tier")
	}
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	names := []string{"ex-a", "ex-b", "ex-c"}
	set := mustSet(t, e, lock.LockSetRequest{Names: names, Owner: "w", TTL: 2 * time.Second})
	poll.Until(t, 15*time.Second, "one expired event per member", func() bool {
		for _, n := range names {
			if len(holdtest.EventsOf(holdtest.History(t, e, n), lock.EventExpired)) != 1 {
				return false
			}
		}
		return true
	})
	for _, n := range names {
		ev := holdtest.EventsOf(holdtest.History(t, e, n), lock.EventExpired)[0]
		if ev.Token != set.Token || !slices.Equal(ev.Set, names) {
			t.Fatalf("%s: %+v", n, ev)
		}
	}
}

// TestLockSet_GivingUpLeavesNoEntryAndHoldsOutliveTheEngine: a waiting
// set whose caller leaves takes its entries out of every queue; a set
// granted by one engine is released through another after the first
// closed.
func TestLockSet_GivingUpLeavesNoEntryAndHoldsOutliveTheEngine(t *testing.T) {
	t.Parallel()
	a, m := holdtest.NewEngine(t)
	b := holdtest.StartEngine(t, m, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	held := holdtest.MustAcquire(t, a, lock.AcquireRequest{Name: "g2", Owner: "h"})
	wctx, cancel := context.WithCancel(ctx)
	waiting := setAsync(wctx, b, lock.LockSetRequest{Names: []string{"g1", "g2", "g3"}, Owner: "quitter", Wait: time.Minute})
	for _, n := range []string{"g1", "g2", "g3"} {
		queued(t, a, n, 1)
	}
	cancel()
	if r := <-waiting; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the departed set: %+v, %v", r.s, r.err)
	}
	for _, n := range []string{"g1", "g2", "g3"} {
		queued(t, a, n, 0)
	}
	if err := a.Release(ctx, "g2", held.Token); err != nil {
		t.Fatal(err)
	}
	set := mustSet(t, a, lock.LockSetRequest{Names: []string{"g1", "g2", "g3"}, Owner: "w", TTL: 30 * time.Second})
	a.Close()
	if _, err := b.RenewSet(ctx, set.Names, set.Token); err != nil {
		t.Fatalf("renew through the other engine: %v", err)
	}
	if err := b.ReleaseSet(ctx, set.Names, set.Token); err != nil {
		t.Fatalf("release through the other engine: %v", err)
	}
	if at := endRevisions(t, b, set.Names, set.Token); len(at) != 1 {
		t.Fatalf("ends at %v", at)
	}
}

// TestLockSet_CountsEveryMemberAgainstTheSessionCap: with
// MaxLocksPerSession, a set counts as many locks as it has members, its
// release gives them all back, and a set that would pass the cap is
// refused whole.
func TestLockSet_CountsEveryMemberAgainstTheSessionCap(t *testing.T) {
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxLocksPerSession = 4 })
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	set := mustSet(t, e, lock.LockSetRequest{Names: []string{"c1", "c2", "c3"}, Owner: "w", Session: s.ID})
	_, _, err = e.AcquireSet(ctx, lock.LockSetRequest{Names: []string{"c4", "c5"}, Owner: "w", Session: s.ID})
	holdtest.AsLimit(t, err, lock.ErrTooManyLocks)
	if !isNotHeld(t, e, "c4") || !isNotHeld(t, e, "c5") {
		t.Fatal("a member of the refused set is held")
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "c4", Owner: "w", Session: s.ID})
	if err := e.ReleaseSet(ctx, set.Names, set.Token); err != nil {
		t.Fatal(err)
	}
	mustSet(t, e, lock.LockSetRequest{Names: []string{"c5", "c6", "c7"}, Owner: "w", Session: s.ID})
	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "c8", Owner: "w", Session: s.ID})
	holdtest.AsLimit(t, err, lock.ErrTooManyLocks)
}

// TestLockSet_AnEtcdThatTakesFewerOpsRefusesALargeSetAsBadInput: over an
// etcd at its default --max-txn-ops (128), a waiting set of 25 locks
// fits; one of 64 is refused naming names, with nothing written.
func TestLockSet_AnEtcdThatTakesFewerOpsRefusesALargeSetAsBadInput(t *testing.T) {
	t.Parallel()
	cfg := testetcd.Config(t)
	cfg.MaxTxnOps = 128
	m := testetcd.StartConfig(t, cfg)
	e := holdtest.StartEngine(t, m, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	names := make([]string, lock.MaxSetNames)
	for i := range names {
		names[i] = owner(i)
	}
	set := mustSet(t, e, lock.LockSetRequest{Names: names[:25], Owner: "w", Wait: time.Second})
	if err := e.ReleaseSet(ctx, set.Names, set.Token); err != nil {
		t.Fatal(err)
	}
	before := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"locks/")
	_, _, err := e.AcquireSet(ctx, lock.LockSetRequest{Names: names, Owner: "w", Wait: time.Second})
	var ie *lock.InvalidError
	if !errors.As(err, &ie) || ie.Field != "names" {
		t.Fatalf("a set of 64 over 128 ops: %v, want invalid names", err)
	}
	if after := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"locks/"); !slices.Equal(before, after) {
		t.Fatalf("locks %v after the refusal, want %v", after, before)
	}
	for _, n := range names {
		queued(t, e, n, 0)
	}
}
