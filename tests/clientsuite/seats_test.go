package clientsuite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
)

// seatHeld is what the tests use of a *Permit and an *RWHold alike.
type seatHeld interface {
	Token() int64
	Lost() <-chan struct{}
	Err() error
	Release(ctx context.Context) error
}

// revokeLoses revokes h, a hold of the kind's thing name, by its token
// with revoke, and checks what the holder sees: Lost within a second (the
// event stream's, not the next renew 10 s away), Err a LostError of the
// kind matching ErrNotHeld, Release ErrLockLost; a second revoke finds
// nothing to end.
func revokeLoses(t *testing.T, ctx context.Context, h seatHeld, kind, name string, revoke func(ctx context.Context, name string, token int64, reason string) error) {
	t.Helper()
	sent := time.Now()
	if err := revoke(ctx, name, h.Token(), "wedged"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	took := waitClosed(t, h.Lost(), 5*time.Second, "Lost after a revoke").Sub(sent)
	t.Logf("revoke → Lost: %s", took)
	if took > time.Second {
		t.Errorf("Lost %s after the revoke, want within 1 s (the next renew is 10 s away)", took)
	}
	var le *client.LostError
	if err := h.Err(); !errors.Is(err, client.ErrLockLost) || !errors.Is(err, client.ErrNotHeld) || !errors.As(err, &le) ||
		le.Kind != kind || le.Name != name || le.Token != h.Token() {
		t.Fatalf("Err %v (%+v), want a %s's LostError matching ErrNotHeld", err, le, kind)
	}
	if err := h.Release(ctx); !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("release of the revoked %s's hold: %v, want ErrLockLost", kind, err)
	}
	if err := revoke(ctx, name, h.Token(), ""); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("revoke again: %v, want ErrNotHeld", err)
	}
}

// mustSession creates a session of owner "node" that ends with the test at
// the latest.
func mustSession(t *testing.T, ctx context.Context, c *client.Client) *client.Session {
	t.Helper()
	s, err := c.CreateSession(ctx, "node", longTTL)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(context.Background(), s.ID) })
	return s
}

// deleteSessionLoses deletes the session s and waits for a and b, held in
// it, to be lost.
func deleteSessionLoses(t *testing.T, ctx context.Context, c *client.Client, s *client.Session, a, b seatHeld) {
	t.Helper()
	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatalf("delete session: %v", err)
	}
	waitClosed(t, a.Lost(), 5*time.Second, "a's Lost after its session was deleted")
	waitClosed(t, b.Lost(), 5*time.Second, "b's Lost after its session was deleted")
}
