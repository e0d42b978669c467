package clientsuite_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
)

// longTTL puts the next renew 10 s away: a loss noticed within a second
// is the event stream's doing, not a renew's.
const longTTL = 30 * time.Second

// TestLock_RevokeReachesLostWithinASecond is the operator's story: a
// revoke must stop the holder now, not at its next renew.
func TestLock_RevokeReachesLostWithinASecond(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	var worst time.Duration
	for range 3 {
		name := lockName(t, "l")
		lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1", TTL: longTTL})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		releaseAtEnd(t, lk)
		// At once: the stream may not be connected yet. It starts from
		// the token's revision, so it replays the revoke when it is.
		sent := time.Now()
		if err := c.Revoke(ctx, name, "operator says stop"); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		took := waitClosed(t, lk.Lost(), 5*time.Second, "Lost after a revoke").Sub(sent)
		worst = max(worst, took)
		t.Logf("revoke → Lost: %s", took)
		if took > time.Second {
			t.Errorf("Lost fired %s after the revoke was sent, want within 1 s", took)
		}
		err = lk.Err()
		if !errors.Is(err, client.ErrLockLost) || !errors.Is(err, client.ErrNotHeld) || !strings.Contains(err.Error(), "revoked") || !strings.Contains(err.Error(), "operator says stop") {
			t.Errorf("Err() = %v, want ErrLockLost and ErrNotHeld, naming the revoke and its reason", err)
		}
		if n := f.count(http.MethodPost, "/renew"); n > 0 {
			t.Errorf("%d renews were sent: the TTL is %s, so none was due", n, longTTL)
		}
	}
	t.Logf("worst revoke → Lost: %s", worst)
}

// TestLock_LocksOfSeveralNamesShareOneStream: one Client holding locks of
// different names watches them all, each loss reaching its own Lock only.
func TestLock_LocksOfSeveralNamesShareOneStream(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	var open, most atomic.Int64
	f.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/v1/events" {
			n := open.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			go func() { <-r.Context().Done(); open.Add(-1) }()
		}
		return false
	})
	a, err := c.Acquire(ctx, lockName(t, "a"), client.AcquireOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, a)
	b, err := c.Acquire(ctx, lockName(t, "b"), client.AcquireOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, b)
	sent := time.Now()
	if err := c.Revoke(ctx, b.Name(), "b only"); err != nil {
		t.Fatal(err)
	}
	if took := waitClosed(t, b.Lost(), 5*time.Second, "b's Lost").Sub(sent); took > time.Second {
		t.Errorf("b lost %s after its revoke, want within 1 s", took)
	}
	if isClosed(a.Lost()) {
		t.Fatalf("a is lost by b's revoke: %v", a.Err())
	}
	sent = time.Now()
	if err := c.Revoke(ctx, a.Name(), "a now"); err != nil {
		t.Fatal(err)
	}
	if took := waitClosed(t, a.Lost(), 5*time.Second, "a's Lost").Sub(sent); took > time.Second {
		t.Errorf("a lost %s after its revoke, want within 1 s", took)
	}
	// The old stream ends when its replacement starts: at most one more
	// for a moment.
	if m := most.Load(); m > 2 {
		t.Errorf("%d event streams open at once for one client, want one (two while one replaces the other)", m)
	}
	poll.Until(t, 10*time.Second, "the stream to close with the last hold", func() bool { return open.Load() == 0 })
}

// TestLock_ReleasedElsewhereReachesLostWithinASecond: a release by the
// token from somewhere else (a CLI, a copy of the process) ends the hold;
// the Lock's own Release does not make it lost.
func TestLock_ReleasedElsewhereReachesLostWithinASecond(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	other := newClient(t, f.URL)

	lk, err := c.Acquire(ctx, lockName(t, "l"), client.AcquireOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lk)
	sent := time.Now()
	if err := other.Release(ctx, lk.Name(), lk.Token()); err != nil {
		t.Fatal(err)
	}
	if took := waitClosed(t, lk.Lost(), 5*time.Second, "Lost after a release elsewhere").Sub(sent); took > time.Second {
		t.Errorf("Lost fired %s after the release elsewhere, want within 1 s", took)
	}

	own, err := c.Acquire(ctx, lockName(t, "own"), client.AcquireOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Its released event is on the stream by now, were it still open.
	if _, _, err := c.History(ctx, client.HistoryOptions{Lock: own.Name()}); err != nil {
		t.Fatal(err)
	}
	if isClosed(own.Lost()) {
		t.Fatalf("the Lock's own release made it lost: %v", own.Err())
	}
}

// TestLock_AStreamThatCannotConnectLeavesTheLockHeld: the event stream
// only ever makes a loss known sooner. When nodes refuse it, renewals keep
// the lock, and a revoke is still noticed, by the next renew.
func TestLock_AStreamThatCannotConnectLeavesTheLockHeld(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	f.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v1/events" {
			return false
		}
		problem(w, http.StatusTooManyRequests, "too_many_streams", 1)
		return true
	})
	lk, err := c.Acquire(ctx, lockName(t, "l"), client.AcquireOptions{TTL: shortTTL})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lk)
	poll.Until(t, 20*time.Second, "three renews and two refused streams", func() bool {
		return f.count(http.MethodPost, "/renew") >= 3 && f.count(http.MethodGet, "/v1/events") >= 2
	})
	if isClosed(lk.Lost()) {
		t.Fatalf("lost while only the stream failed: %v", lk.Err())
	}
	if err := c.Revoke(context.Background(), lk.Name(), ""); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lk.Lost(), shortTTL, "Lost by a renew after the revoke")
	if err := lk.Err(); !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("Err() = %v, want ErrNotHeld from the renew", err)
	}
}

// TestLock_ASessionDeletedElsewhereReachesLostWithinASecond: the locks of
// a session end with it (audited as released); its holders learn at once.
func TestLock_ASessionDeletedElsewhereReachesLostWithinASecond(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	s, err := c.CreateSession(ctx, "w1", longTTL)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := c.Acquire(ctx, lockName(t, "l"), client.AcquireOptions{Session: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lk)
	sent := time.Now()
	if err := newClient(t, f.URL).DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if took := waitClosed(t, lk.Lost(), 5*time.Second, "Lost after the session's delete").Sub(sent); took > time.Second {
		t.Errorf("Lost fired %s after the session was deleted, want within 1 s", took)
	}
	if err := lk.Err(); !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("Err() = %v, want ErrNotHeld", err)
	}
}

// TestLock_TwoLocksOfOneHoldAreBothLost: a session that acquires a lock it
// holds gets the same hold again (200), as a second *Lock; a revoke ends
// both.
func TestLock_TwoLocksOfOneHoldAreBothLost(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	s, err := c.CreateSession(ctx, "w1", longTTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(context.Background(), s.ID) })
	name := lockName(t, "l")
	a, err := c.Acquire(ctx, name, client.AcquireOptions{Session: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(ctx, name, client.AcquireOptions{Session: s.ID})
	if err != nil || b.Token() != a.Token() {
		t.Fatalf("second acquire: %v, token %d; want the same hold", err, b.Token())
	}
	if err := c.Revoke(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, a.Lost(), 5*time.Second, "the first Lock's Lost")
	waitClosed(t, b.Lost(), 5*time.Second, "the second Lock's Lost")
}
