package clientsuite_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
)

// setNames returns n lock names of this test, for a set.
func setNames(t *testing.T, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = lockName(t, string(rune('a'+i)))
	}
	return names
}

// mustSet acquires a set of names, released when the test ends.
func mustSet(t *testing.T, ctx context.Context, c *client.Client, names []string, o client.LockSetOptions) *client.LockSet {
	t.Helper()
	s, err := c.AcquireSet(ctx, names, o)
	if err != nil {
		t.Fatalf("acquire set %q: %v", names, err)
	}
	releaseAtEnd(t, s)
	return s
}

// TestLockSet_HoldsEveryLockWithOneTokenUntilReleased: the set's locks are
// ordinary locks, each with the set's token and names, and one release
// ends them all.
func TestLockSet_HoldsEveryLockWithOneTokenUntilReleased(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	names := setNames(t, 3)
	s := mustSet(t, ctx, c, names, client.LockSetOptions{Owner: "transfer-7", TTL: longTTL, Metadata: map[string]string{"job": "x"}})
	if !slices.Equal(s.Names(), names) || s.Token() <= 0 || len(s.Locks()) != 3 {
		t.Fatalf("set %q token %d locks %+v; want %q with a token and three locks", s.Names(), s.Token(), s.Locks(), names)
	}
	for i, l := range s.Locks() {
		if l.Name != names[i] || l.Token != s.Token() || l.Owner != "transfer-7" || l.TTL != longTTL || !slices.Equal(l.Set, names) || l.Metadata["job"] != "x" {
			t.Errorf("lock %d: %+v; want %s with the set's token, owner, TTL, names and metadata", i, l, names[i])
		}
		got, err := c.Get(ctx, names[i])
		if err != nil || got.Token != s.Token() || !slices.Equal(got.Set, names) {
			t.Errorf("get %s: %+v, %v; want held with token %d as part of the set", names[i], got, err, s.Token())
		}
	}
	if err := s.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if !isClosed(s.Done()) || isClosed(s.Lost()) || s.Err() != nil {
		t.Errorf("after a clean release: done %v, lost %v, err %v", isClosed(s.Done()), isClosed(s.Lost()), s.Err())
	}
	for _, n := range names {
		if _, err := c.Get(ctx, n); !errors.Is(err, client.ErrNotHeld) {
			t.Errorf("get %s after release: %v, want ErrNotHeld", n, err)
		}
	}
	if err := s.Release(ctx); err != nil {
		t.Errorf("second release: %v, want nil again", err)
	}
	if n := f.count(http.MethodPost, "/v1/locksets/release"); n != 1 {
		t.Errorf("%d releases sent after two Release calls, want 1", n)
	}
}

// TestLockSet_AHeldLockAnswersErrHeldWithItsHolderAndTakesNothing.
func TestLockSet_AHeldLockAnswersErrHeldWithItsHolderAndTakesNothing(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	names := setNames(t, 2)
	other, err := c.Acquire(ctx, names[1], client.AcquireOptions{Owner: "w1", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, other)
	_, err = c.AcquireSet(ctx, names, client.LockSetOptions{Owner: "w2", TTL: longTTL})
	var e *client.Error
	if !errors.Is(err, client.ErrHeld) || !errors.As(err, &e) {
		t.Fatalf("acquire set: %v, want ErrHeld", err)
	}
	if e.Holder == nil || e.Holder.Name != names[1] || e.Holder.Owner != "w1" || e.Holder.Token != other.Token() {
		t.Errorf("Holder %+v, want %s held by w1 with token %d", e.Holder, names[1], other.Token())
	}
	if len(e.SetHolders) != 1 || e.SetHolders[0].Name != names[1] || e.SetHolders[0].Token != other.Token() || len(e.RWHolders) != 0 {
		t.Errorf("holders %+v (rw %+v), want the one lock in the way", e.SetHolders, e.RWHolders)
	}
	if _, err := c.Get(ctx, names[0]); !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("get %s: %v; want ErrNotHeld, the set took nothing", names[0], err)
	}
}

// TestLockSet_WaitsInEveryQueueAndIsGrantedWhenTheHolderReleases.
func TestLockSet_WaitsInEveryQueueAndIsGrantedWhenTheHolderReleases(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	names := setNames(t, 2)
	first, err := c.Acquire(ctx, names[0], client.AcquireOptions{Owner: "w1", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, first)
	type result struct {
		s   *client.LockSet
		err error
	}
	got := make(chan result, 1)
	go func() {
		s, err := c.AcquireSet(ctx, names, client.LockSetOptions{Owner: "w2", TTL: longTTL, Wait: 30 * time.Second})
		got <- result{s, err}
	}()
	poll.Until(t, 10*time.Second, "the set queued", func() bool {
		l, err := c.Get(ctx, names[0])
		return err == nil && len(l.Waiters) == 1 && l.Waiters[0].Owner == "w2" && slices.Equal(l.Waiters[0].Set, names)
	})
	if err := first.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiting acquire: %v", r.err)
	}
	releaseAtEnd(t, r.s)
	if r.s.Token() <= first.Token() {
		t.Errorf("set token %d after the holder's %d: want greater", r.s.Token(), first.Token())
	}
	for _, n := range names {
		if l, err := c.Get(ctx, n); err != nil || l.Token != r.s.Token() || l.Owner != "w2" {
			t.Errorf("get %s: %+v, %v; want the set's", n, l, err)
		}
	}
}

// TestLockSet_RevokingOneLockLosesTheSetWithinASecond: an operator's
// revoke of one lock ends the set's wholeness; the event stream tells, the
// next renew being 10 s away, and the release frees the other locks.
func TestLockSet_RevokingOneLockLosesTheSetWithinASecond(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	names := setNames(t, 3)
	s := mustSet(t, ctx, c, names, client.LockSetOptions{TTL: longTTL})
	sent := time.Now()
	if err := c.Revoke(ctx, names[1], "wedged"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	took := waitClosed(t, s.Lost(), 5*time.Second, "Lost after a revoke of one lock").Sub(sent)
	t.Logf("revoke → Lost: %s", took)
	if took > time.Second {
		t.Errorf("Lost %s after the revoke, want within 1 s", took)
	}
	lostAsSet(t, s, names[1])
	if err := s.Release(ctx); !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("release of the lost set: %v, want ErrLockLost", err)
	}
	for _, n := range names {
		if _, err := c.Get(ctx, n); !errors.Is(err, client.ErrNotHeld) {
			t.Errorf("get %s after the release: %v, want ErrNotHeld", n, err)
		}
	}
}

// TestLockSet_ARenewAnsweredNotHeldLosesTheSet: with no event stream, the
// set's renew finds the lock revoked on its own.
func TestLockSet_ARenewAnsweredNotHeldLosesTheSet(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	f.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v1/events" {
			return false
		}
		problem(w, http.StatusForbidden, "forbidden", 0)
		return true
	})
	names := setNames(t, 2)
	s := mustSet(t, ctx, c, names, client.LockSetOptions{TTL: shortTTL})
	if err := c.Revoke(ctx, names[0], "wedged"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	waitClosed(t, s.Lost(), shortTTL+time.Second, "Lost by a renew")
	if f.count(http.MethodPost, "/v1/locksets/renew") == 0 {
		t.Fatal("no renew of the set was sent: the test proves nothing")
	}
	lostAsSet(t, s, names[0])
	if !strings.Contains(s.Err().Error(), "renew") {
		t.Errorf("Err %v: does not say the renew found it", s.Err())
	}
}

// lostAsSet checks that s was lost with a lock set's LostError matching
// ErrNotHeld and naming the lock that ended.
func lostAsSet(t *testing.T, s *client.LockSet, ended string) {
	t.Helper()
	var le *client.LostError
	err := s.Err()
	if !errors.Is(err, client.ErrLockLost) || !errors.Is(err, client.ErrNotHeld) || !errors.As(err, &le) ||
		le.Kind != "lockset" || le.Name != strings.Join(s.Names(), ",") || le.Token != s.Token() {
		t.Fatalf("Err %v (%+v), want a lock set's LostError matching ErrNotHeld", err, le)
	}
	t.Logf("Err: %v", err)
	if !strings.Contains(err.Error(), ended) {
		t.Errorf("Err %v does not name %s, the lock that ended", err, ended)
	}
}

// TestLockSet_RenewsKeepA2sSetPastItsTTL.
func TestLockSet_RenewsKeepA2sSetPastItsTTL(t *testing.T) {
	skipShort(t)
	t.Parallel()
	f, c, ctx := setup(t)
	names := setNames(t, 2)
	s := mustSet(t, ctx, c, names, client.LockSetOptions{TTL: shortTTL})
	first := s.Locks()[0].ExpiresAt
	deadline := time.Now().Add(2 * shortTTL)
	for time.Now().Before(deadline) {
		select {
		case <-s.Lost():
			t.Fatalf("lost: %v", s.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, n := range names {
		if l, err := c.Get(ctx, n); err != nil || l.Token != s.Token() {
			t.Fatalf("get %s after two TTLs: %+v, %v; want still the set's", n, l, err)
		}
	}
	if n := f.count(http.MethodPost, "/v1/locksets/renew"); n < 3 {
		t.Errorf("%d renewals of the set in two TTLs, want one every third of the TTL", n)
	}
	if !s.Locks()[0].ExpiresAt.After(first) {
		t.Errorf("Locks()[0].ExpiresAt %v not after the grant's %v: renewals do not update Locks", s.Locks()[0].ExpiresAt, first)
	}
}

// TestLockSet_BadNamesAreInvalidAndTakeNothing.
func TestLockSet_BadNamesAreInvalidAndTakeNothing(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	a := lockName(t, "a")
	for _, names := range [][]string{nil, {a}, {a, a}, {a, "bad name"}} {
		_, err := c.AcquireSet(ctx, names, client.LockSetOptions{TTL: longTTL})
		var e *client.Error
		if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Field != "names" {
			t.Errorf("names %q: %v, want a 400 invalid_request naming names", names, err)
		}
	}
	if _, err := c.Get(ctx, a); !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("get %s: %v; want ErrNotHeld, nothing was taken", a, err)
	}
}
