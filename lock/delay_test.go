package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

func TestLockDelay_BlocksAcquireAfterRevokeUntilItPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const delay = 3 * time.Second
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "d", Owner: "w1", LockDelay: delay})
	revokedAt := time.Now()
	if _, err := e.Revoke(ctx, "d", "test"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "d", Owner: "w2"})
	he := asHeld(t, err)
	if he.Holder != nil {
		t.Fatalf("lock-delay refusal names holder %+v; the lock has none", he.Holder)
	}
	if he.RetryAfter <= 0 || he.RetryAfter > delay {
		t.Fatalf("RetryAfter = %s, want within (0, %s]", he.RetryAfter, delay)
	}
	// A waiting acquire sits the delay out, then gets the lock.
	if _, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "d", Owner: "w2", Wait: 15 * time.Second}); err != nil || !fresh {
		t.Fatalf("waiting acquire: %v", err)
	}
	if waited := time.Since(revokedAt); waited < delay-50*time.Millisecond {
		t.Fatalf("got the lock %s after the revoke, before the %s lock-delay passed", waited, delay)
	}
	// The new hold asked for no delay, so revoking it leaves none behind.
	if _, err := e.Revoke(ctx, "d", "again"); err != nil {
		t.Fatalf("revoke second hold: %v", err)
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "d", Owner: "w3"}); err != nil {
		t.Fatalf("acquire after revoking a hold without lock-delay: %v", err)
	}
}

func TestLockDelay_BlocksAcquireAfterExpiryUntilItPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const delay = 3 * time.Second
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "d", Owner: "w1", TTL: 2 * time.Second, LockDelay: delay})
	poll.Until(t, 15*time.Second, "the lock expires", func() bool { return isNotHeld(t, e, "d") })
	goneAt := time.Now()

	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "d", Owner: "w2"})
	if he := asHeld(t, err); he.Holder != nil || he.RetryAfter <= 0 || he.RetryAfter > delay {
		t.Fatalf("acquire right after expiry: %+v, want RetryAfter within (0, %s] and no holder", he, delay)
	}
	var got *lock.Lock
	poll.Until(t, 15*time.Second, "the lock-delay passes", func() bool {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "d", Owner: "w2"})
		if err != nil {
			if he := asHeld(t, err); he.Holder != nil {
				t.Fatalf("lock-delay refusal names holder %+v", he.Holder)
			}
			return false
		}
		got = l
		return true
	})
	// The delay starts when the expiry is noticed, which is after the key
	// went; goneAt is at most one poll later than that.
	if waited := time.Since(goneAt); waited < delay-500*time.Millisecond {
		t.Fatalf("got the lock %s after the expiry, before the %s lock-delay passed", waited, delay)
	}
	if got.Token <= l.Token {
		t.Fatalf("token %d after expiry, want above %d", got.Token, l.Token)
	}
	if n := len(holdtest.EventsOf(holdtest.History(t, e, "d"), lock.EventExpired)); n != 1 {
		t.Fatalf("%d expired events, want 1", n)
	}
}

func TestLockDelay_NoDelayAfterCleanRelease(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "d", Owner: "w1", LockDelay: time.Hour})
	if err := e.Release(ctx, "d", l.Token); err != nil {
		t.Fatal(err)
	}
	l2, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "d", Owner: "w2"})
	if err != nil {
		t.Fatalf("acquire after a clean release: %v (lock-delay must not apply)", err)
	}
	// A stale release attempt of the first hold does not arm a delay either.
	if err := e.Release(ctx, "d", l.Token); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("stale release: %v", err)
	}
	if err := e.Release(ctx, "d", l2.Token); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "d", Owner: "w3"}); err != nil {
		t.Fatalf("third acquire: %v", err)
	}
}
