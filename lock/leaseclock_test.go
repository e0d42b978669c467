package lock_test

import (
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
)

// TestAcquire_SessionExpiryComesFromTheNodesLeaseClock checks that a
// session acquire says when the session's lease runs out as the node
// learnt it when it granted the lease (lock/internal/hold/leaseclock.go), and that once
// half the TTL has passed without a renewal through this node (the
// session was renewed through another) it asks etcd again, so the answer
// follows the renewals it did not see.
func TestAcquire_SessionExpiryComesFromTheNodesLeaseClock(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out half a TTL: not in the fast tier")
	}
	t.Parallel()
	m := testetcd.Start(t)
	a := holdtest.StartEngine(t, m, lock.DefaultConfig())
	b := holdtest.StartEngine(t, m, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	const ttl = 4 * time.Second
	s, err := a.CreateSession(ctx, "w", ttl)
	if err != nil {
		t.Fatal(err)
	}
	l := holdtest.MustAcquire(t, a, lock.AcquireRequest{Name: "clock", Owner: "w", Session: s.ID})
	if !l.ExpiresAt.Equal(s.ExpiresAt) || l.TTL != ttl {
		t.Fatalf("acquired %+v, want the session's expiry %v and TTL %s", l, s.ExpiresAt, ttl)
	}
	if err := a.Release(ctx, l.Name, l.Token); err != nil {
		t.Fatal(err)
	}

	// Renewed through b only, until a's clock has less than half the TTL
	// left of what it saw at the grant.
	stale := s.ExpiresAt.Add(-ttl / 2)
	poll.Until(t, ttl, "half the TTL since the grant, renewed through the other node", func() bool {
		if _, err := b.RenewSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		return time.Now().After(stale)
	})
	r, err := b.RenewSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	l = holdtest.MustAcquire(t, a, lock.AcquireRequest{Name: "clock", Owner: "w", Session: s.ID})
	// etcd answers whole seconds, rounded down.
	if !l.ExpiresAt.After(s.ExpiresAt) || l.ExpiresAt.Before(r.ExpiresAt.Add(-time.Second)) || l.ExpiresAt.After(r.ExpiresAt.Add(time.Second)) {
		t.Fatalf("acquired after renewals through the other node: expires %v; the grant said %v, the last renewal %v", l.ExpiresAt, s.ExpiresAt, r.ExpiresAt)
	}
}
