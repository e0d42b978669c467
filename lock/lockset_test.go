package lock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

type setAcquired struct {
	s   *lock.LockSet
	err error
}

func setAsync(ctx context.Context, e *lock.Engine, req lock.LockSetRequest) <-chan setAcquired {
	ch := make(chan setAcquired, 1)
	go func() {
		s, _, err := e.AcquireSet(ctx, req)
		ch <- setAcquired{s, err}
	}()
	return ch
}

func mustSet(t *testing.T, e *lock.Engine, req lock.LockSetRequest) *lock.LockSet {
	t.Helper()
	s, fresh, err := e.AcquireSet(context.Background(), req)
	if err != nil {
		t.Fatalf("acquire set %v as %q: %v", req.Names, req.Owner, err)
	}
	if !fresh {
		t.Fatalf("acquire set %v: fresh = false, want a new hold", req.Names)
	}
	return s
}

// TestLockSet_EveryNameOneTokenOrdinaryLocks: a set grants every name at
// one revision, each an ordinary lock with the set's token that names the
// set; the audit trail has an acquired event per member at that revision;
// a release of the set ends them all in one revision.
func TestLockSet_EveryNameOneTokenOrdinaryLocks(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	names := []string{"acct-2", "acct-1", "acct-3"}
	s := mustSet(t, e, lock.LockSetRequest{Names: names, Owner: "mover", TTL: 10 * time.Second, Metadata: map[string]string{"transfer": "t1"}})
	if !slices.Equal(s.Names, names) || len(s.Locks) != 3 || s.Token <= 0 {
		t.Fatalf("set = %+v", s)
	}
	for i, l := range s.Locks {
		if l.Name != names[i] || l.Token != s.Token || l.Owner != "mover" || !slices.Equal(l.Set, names) || l.ExpiresAt.IsZero() {
			t.Fatalf("member %d = %+v", i, l)
		}
		got, err := e.Get(ctx, names[i])
		if err != nil || got.Token != s.Token || !slices.Equal(got.Set, names) || got.Metadata["transfer"] != "t1" {
			t.Fatalf("get %s = %+v, %v", names[i], got, err)
		}
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "acct-1", Owner: "other"}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("acquire a member: %v, want held", err)
	}
	if err := e.ReleaseSet(ctx, []string{"acct-1", "acct-2", "acct-3"}, s.Token); err != nil {
		t.Fatalf("release set: %v", err)
	}
	for _, n := range names {
		if _, err := e.Get(ctx, n); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("get %s after release: %v", n, err)
		}
	}
	evs := holdtest.History(t, e, "")
	begins, ends := map[int64]int{}, map[int64]int{}
	for _, ev := range evs {
		if !slices.Equal(ev.Set, names) {
			t.Fatalf("event %+v does not name the set", ev)
		}
		switch ev.Type {
		case lock.EventAcquired:
			begins[ev.Revision]++
		case lock.EventReleased:
			ends[ev.Revision]++
		}
	}
	if len(begins) != 1 || begins[s.Token] != 3 || len(ends) != 1 {
		t.Fatalf("acquired at %v, released at %v: want 3 at one revision each", begins, ends)
	}
	if n := len(holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"locks/")); n != 0 {
		t.Fatalf("%d lock keys left", n)
	}
}

// TestLockSet_HeldNameRefusesTheWholeSetNamingHolders: a set without wait
// that meets a held name answers with the holders and takes nothing.
func TestLockSet_HeldNameRefusesTheWholeSetNamingHolders(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	b := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "b", Owner: "holder-b"})
	d := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "d", Owner: "holder-d"})
	_, _, err := e.AcquireSet(ctx, lock.LockSetRequest{Names: []string{"a", "b", "c", "d"}, Owner: "set"})
	he := asHeld(t, err)
	if len(he.Holders) != 2 || he.Holders[0].Name != "b" || he.Holders[0].Token != b.Token || he.Holders[1].Name != "d" ||
		he.Holders[1].Token != d.Token || he.Holders[0].ExpiresAt.IsZero() {
		t.Fatalf("holders = %+v", he.Holders)
	}
	for _, n := range []string{"a", "c"} {
		if _, err := e.Get(ctx, n); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("get %s: %v, want not held", n, err)
		}
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"queue/"); len(keys) != 0 {
		t.Fatalf("queue keys %v after a refusal", keys)
	}
}

// TestLockSet_WaitsInEveryQueueAndServesInOneOrder: a waiting set joins
// every member's queue at one revision; a single waiter that comes after
// it on one member waits behind it even when that member is free; the
// set is granted when its last member is released, and then the single
// waiter after the set's release.
func TestLockSet_WaitsInEveryQueueAndServesInOneOrder(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	a := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "x", Owner: "holder-x"})
	b := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "y", Owner: "holder-y"})
	set := setAsync(ctx, e, lock.LockSetRequest{Names: []string{"x", "y"}, Owner: "set", Wait: 30 * time.Second})
	queued(t, e, "x", 1)
	queued(t, e, "y", 1)
	ws, err := e.Waiters(ctx, "x")
	if err != nil || !slices.Equal(ws[0].Set, []string{"x", "y"}) {
		t.Fatalf("waiters of x = %+v, %v", ws, err)
	}
	single := acquireAsync(ctx, e, lock.AcquireRequest{Name: "x", Owner: "single", Wait: 30 * time.Second})
	queued(t, e, "x", 2)
	if err := e.Release(ctx, "x", a.Token); err != nil {
		t.Fatal(err)
	}
	// x is free, but the set heads its queue: the single waiter stays
	// behind it, and the set waits for y.
	if _, err := e.Get(ctx, "x"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("x after its release: %v", err)
	}
	queued(t, e, "x", 2)
	if err := e.Release(ctx, "y", b.Token); err != nil {
		t.Fatal(err)
	}
	got := <-set
	if got.err != nil {
		t.Fatalf("set: %v", got.err)
	}
	if got.s.Token <= b.Token {
		t.Fatalf("set token %d not above %d", got.s.Token, b.Token)
	}
	select {
	case r := <-single:
		t.Fatalf("the single waiter got %+v, %v while the set holds x", r.l, r.err)
	default:
	}
	if err := e.ReleaseSet(ctx, got.s.Names, got.s.Token); err != nil {
		t.Fatal(err)
	}
	r := <-single
	if r.err != nil || r.l.Token <= got.s.Token {
		t.Fatalf("single after the set: %+v, %v", r.l, r.err)
	}
}

// TestLockSet_ReleaseAndRenewErrors: a stale token, a token of another
// hold and a lost member are told apart; a member released on its own
// leaves the rest to the set's release.
func TestLockSet_ReleaseAndRenewErrors(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	names := []string{"p", "q"}
	s := mustSet(t, e, lock.LockSetRequest{Names: names, Owner: "o", TTL: 10 * time.Second})
	if _, err := e.RenewSet(ctx, names, s.Token); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := e.ReleaseSet(ctx, names, s.Token+1); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("release with another token: %v", err)
	}
	if err := e.Release(ctx, "q", s.Token); err != nil {
		t.Fatalf("release one member: %v", err)
	}
	if _, err := e.RenewSet(ctx, names, s.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renew with a member gone: %v", err)
	}
	if l, err := e.Get(ctx, "p"); err != nil || l.Token != s.Token {
		t.Fatalf("p after q's release: %+v, %v", l, err)
	}
	if err := e.ReleaseSet(ctx, names, s.Token); err != nil {
		t.Fatalf("release the rest: %v", err)
	}
	if err := e.ReleaseSet(ctx, names, s.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release again: %v", err)
	}
}

// TestLockSet_BadInputWritesNothing: too few, too many, repeated and
// invalid names are refused naming "names", before anything is written.
func TestLockSet_BadInputWritesNothing(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	many := make([]string, lock.MaxSetNames+1)
	for i := range many {
		many[i] = owner(i)
	}
	for _, names := range [][]string{nil, {"a"}, many, {"a", "b", "a"}, {"a", "bad name"}, {"a", ""}} {
		_, _, err := e.AcquireSet(ctx, lock.LockSetRequest{Names: names, Owner: "o"})
		var ie *lock.InvalidError
		if !errors.As(err, &ie) || ie.Field != "names" {
			t.Fatalf("names %q: %v, want invalid names", names, err)
		}
	}
	for _, p := range []string{"locks/", "queue/", "audit/"} {
		if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+p); len(keys) != 0 {
			t.Fatalf("%s holds %v after bad input", p, keys)
		}
	}
}

// TestLockSet_ASingleWaiterAheadOfASetIsServedFirst: a single waiter
// queued on a lock before a set is granted that lock before the set,
// though the set's other lock is free; the set follows it.
func TestLockSet_ASingleWaiterAheadOfASetIsServedFirst(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "f1", Owner: "holder"})
	single := acquireAsync(ctx, e, lock.AcquireRequest{Name: "f1", Owner: "single", Wait: 30 * time.Second})
	queued(t, e, "f1", 1)
	set := setAsync(ctx, e, lock.LockSetRequest{Names: []string{"f2", "f1"}, Owner: "set", Wait: 30 * time.Second})
	queued(t, e, "f1", 2)
	queued(t, e, "f2", 1)
	if err := e.Release(ctx, "f1", h.Token); err != nil {
		t.Fatal(err)
	}
	r := <-single
	if r.err != nil {
		t.Fatalf("single: %v", r.err)
	}
	// f2 stays free while the set waits for f1: the set holds nothing.
	if !isNotHeld(t, e, "f2") {
		t.Fatal("f2 is held while its set waits for f1")
	}
	if err := e.Release(ctx, "f1", r.l.Token); err != nil {
		t.Fatal(err)
	}
	got := <-set
	if got.err != nil || got.s.Token <= r.l.Token {
		t.Fatalf("set after the single: %+v, %v", got.s, got.err)
	}
}

// TestLockSet_AWaitThatRunsOutNamesTheHolders: a waiting set refused when
// its wait ends is told every lock in its way, with their expiries, as
// one without wait is, and leaves no entry.
func TestLockSet_AWaitThatRunsOutNamesTheHolders(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	b := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "wo-b", Owner: "holder", TTL: 30 * time.Second})
	_, _, err := e.AcquireSet(ctx, lock.LockSetRequest{Names: []string{"wo-a", "wo-b"}, Owner: "set", Wait: 300 * time.Millisecond})
	he := asHeld(t, err)
	if he.Holder != nil || len(he.Holders) != 1 || he.Holders[0].Name != "wo-b" || he.Holders[0].Token != b.Token || he.Holders[0].ExpiresAt.IsZero() {
		t.Fatalf("refusal %+v, holders %+v", he, he.Holders)
	}
	queued(t, e, "wo-a", 0)
	queued(t, e, "wo-b", 0)
}

// TestLockSet_TheLastReleaseInItsWayGrantsTheSetInItsOwnTxn: a set that
// heads every queue it waits in is granted by the release of the last
// lock in its way, in that release's txn: its token is the release's
// revision, and every lock of it begins there. A release that leaves a
// lock of the set held only frees its lock.
func TestLockSet_TheLastReleaseInItsWayGrantsTheSetInItsOwnTxn(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	x := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "ho-x", Owner: "x"})
	y := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "ho-y", Owner: "y"})
	set := setAsync(ctx, e, lock.LockSetRequest{Names: []string{"ho-x", "ho-y", "ho-z"}, Owner: "set", TTL: 20 * time.Second, Wait: 30 * time.Second})
	for _, n := range []string{"ho-x", "ho-y", "ho-z"} {
		queued(t, e, n, 1)
	}
	if err := e.Release(ctx, "ho-x", x.Token); err != nil {
		t.Fatal(err)
	}
	if !isNotHeld(t, e, "ho-x") {
		t.Fatal("ho-x handed to the set while ho-y is held")
	}
	if err := e.Release(ctx, "ho-y", y.Token); err != nil {
		t.Fatal(err)
	}
	got := <-set
	if got.err != nil {
		t.Fatalf("set: %v", got.err)
	}
	evs := holdtest.History(t, e, "ho-y")
	if len(evs) < 2 || evs[1].Type != lock.EventReleased || evs[1].Owner != "y" || evs[1].Revision != got.s.Token {
		t.Fatalf("ho-y's trail %+v; want y's release at the set's token %d", evs, got.s.Token)
	}
	if l := got.s.Locks[2]; l.Name != "ho-z" || l.ExpiresAt.IsZero() || l.TTL != 20*time.Second {
		t.Fatalf("member %+v", l)
	}
	for _, n := range []string{"ho-x", "ho-y", "ho-z"} {
		if l, err := e.Get(ctx, n); err != nil || l.Token != got.s.Token {
			t.Fatalf("%s: %+v, %v", n, l, err)
		}
		queued(t, e, n, 0)
	}
	if err := e.ReleaseSet(ctx, got.s.Names, got.s.Token); err != nil {
		t.Fatal(err)
	}
}
