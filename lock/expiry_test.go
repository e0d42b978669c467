package lock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// expiredOnce waits until each of tokens (lock name → token) has its hold
// ended by exactly one expired event, and checks no duplicate follows.
func expiredOnce(t *testing.T, engines []*lock.Engine, tokens map[string]int64) {
	t.Helper()
	poll.Until(t, 15*time.Second, "every lock's lease expires", func() bool {
		for name := range tokens {
			if !isNotHeld(t, engines[0], name) {
				return false
			}
		}
		return true
	})
	oneEach := func() bool {
		for _, e := range engines {
			for name := range tokens {
				if len(holdtest.EventsOf(holdtest.History(t, e, name), lock.EventExpired)) != 1 {
					return false
				}
			}
		}
		return true
	}
	poll.Until(t, 10*time.Second, "one expired event per lock", oneEach)
	// Every recorder reacts within milliseconds of the deletion; a second
	// record would show up well within this window.
	poll.Consistently(t, time.Second, "still exactly one expired event per lock", oneEach)
	for name, tok := range tokens {
		evs := holdtest.History(t, engines[0], name)
		if len(evs) != 2 {
			t.Fatalf("%s: history %+v, want acquired and expired", name, evs)
		}
		ev := evs[0]
		if ev.Type != lock.EventExpired || ev.Token != tok || ev.Lock != name || ev.Session != "" {
			t.Fatalf("%s: end event %+v, want expired with token %d", name, ev, tok)
		}
		if !strings.Contains(ev.Detail, "lease") {
			t.Fatalf("%s: expired event detail %q does not say the lease ended", name, ev.Detail)
		}
	}
}

func TestExpiry_UnrenewedLockDisappearsWithOneExpiredEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	cli := m.Client()
	leasesBefore := leaseCount(t, cli)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "exp", Owner: "w1", TTL: 2 * time.Second})
	start := time.Now()
	if !l.ExpiresAt.After(start.Add(time.Second)) {
		t.Fatalf("ExpiresAt %v too early", l.ExpiresAt)
	}
	expiredOnce(t, []*lock.Engine{e}, map[string]int64{"exp": l.Token})
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Fatalf("a 2s lock was gone after %s", d)
	}
	if _, err := e.Renew(holdtest.Ctx(t), "exp", l.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renew after expiry: %v, want ErrNotHeld", err)
	}
	if err := e.Release(holdtest.Ctx(t), "exp", l.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release after expiry: %v, want ErrNotHeld", err)
	}
	// The expired lease is gone; only the audit bucket remains of this hold.
	if n := leaseCount(t, cli); n > leasesBefore+1 {
		t.Fatalf("%d leases after expiry, %d before: the lock's lease lingers", n, leasesBefore)
	}
	next := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "exp", Owner: "w2"})
	if next.Token <= l.Token {
		t.Fatalf("token after expiry %d, want above %d", next.Token, l.Token)
	}
}

// Two engines on one etcd simulate two baton nodes: both recorders see
// every expiry, and still each is recorded once. A third node serves one
// acquire and is gone when that lease expires: the others record it.
func TestExpiry_TwoEnginesRecordEachExpiryOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e1, m := holdtest.NewEngine(t)
	e2 := holdtest.StartEngine(t, m, lock.DefaultConfig())
	gone := holdtest.StartEngine(t, m, lock.DefaultConfig())
	tokens := map[string]int64{}
	for i := range 6 {
		e := e1
		if i%2 == 1 {
			e = e2
		}
		name := fmt.Sprintf("two-%d", i)
		tokens[name] = holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: owner(i), TTL: 2 * time.Second}).Token
	}
	tokens["orphan"] = holdtest.MustAcquire(t, gone, lock.AcquireRequest{Name: "orphan", Owner: "w-gone", TTL: 2 * time.Second}).Token
	gone.Close()
	expiredOnce(t, []*lock.Engine{e1, e2}, tokens)
}

// No node runs while the lease expires: the next engine to start resumes
// from the cluster's recorder cursor and records it.
func TestExpiry_RecordedAfterNoNodeWasWatching(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e1, m := holdtest.NewEngine(t)
	cli := m.Client()
	l := holdtest.MustAcquire(t, e1, lock.AcquireRequest{Name: "unwatched", Owner: "w1", TTL: 2 * time.Second})
	e1.Close()
	poll.Until(t, 15*time.Second, "the lock key expires", func() bool {
		return len(holdtest.KeysUnder(t, cli, holdtest.Prefix+"locks/")) == 0
	})
	e2 := holdtest.StartEngine(t, m, lock.DefaultConfig())
	expiredOnce(t, []*lock.Engine{e2}, map[string]int64{"unwatched": l.Token})
}
