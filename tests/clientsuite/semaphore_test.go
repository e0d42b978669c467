package clientsuite_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
)

func mustPermit(t *testing.T, ctx context.Context, c *client.Client, name string, limit int, o client.PermitOptions) *client.Permit {
	t.Helper()
	p, err := c.AcquirePermit(ctx, name, limit, o)
	if err != nil {
		t.Fatalf("acquire a permit of %q: %v", name, err)
	}
	releaseAtEnd(t, p)
	return p
}

// TestPermit_LimitIsRespectedAndAFullSemaphoreNamesItsHolders: limit
// permits are granted, each with a token of its own; one more fails with
// ErrSemaphoreFull naming them, and another limit with ErrLimitMismatch
// carrying the semaphore's.
func TestPermit_LimitIsRespectedAndAFullSemaphoreNamesItsHolders(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "s")
	a := mustPermit(t, ctx, c, name, 2, client.PermitOptions{Owner: "a", TTL: longTTL, Metadata: map[string]string{"job": "1"}})
	b := mustPermit(t, ctx, c, name, 2, client.PermitOptions{Owner: "b", TTL: longTTL})
	if a.Token() == b.Token() || a.Limit() != 2 || b.Limit() != 2 || a.Name() != name || a.Info().Metadata["job"] != "1" {
		t.Fatalf("permits %d and %d, limits %d and %d; want two tokens under limit 2", a.Token(), b.Token(), a.Limit(), b.Limit())
	}

	_, err := c.AcquirePermit(ctx, name, 2, client.PermitOptions{Owner: "c"})
	var e *client.Error
	if !errors.Is(err, client.ErrSemaphoreFull) || errors.Is(err, client.ErrHeld) || !errors.As(err, &e) || len(e.Holders) != 2 {
		t.Fatalf("third permit of two: %v (%+v), want ErrSemaphoreFull with both holders", err, e)
	}
	held := []int64{e.Holders[0].Token, e.Holders[1].Token}
	if !slices.Contains(held, a.Token()) || !slices.Contains(held, b.Token()) || e.Holders[0].Limit != 2 {
		t.Fatalf("holders %+v, want a's %d and b's %d", e.Holders, a.Token(), b.Token())
	}

	_, err = c.AcquirePermit(ctx, name, 3, client.PermitOptions{})
	e = nil
	if !errors.Is(err, client.ErrLimitMismatch) || !errors.As(err, &e) || e.Limit != 2 {
		t.Fatalf("a permit under limit 3: %v (%+v), want ErrLimitMismatch with limit 2", err, e)
	}

	s, err := c.Semaphore(ctx, name)
	if err != nil || s.Limit != 2 || len(s.Holders) != 2 || s.Holders[0].Owner != "a" || s.Holders[1].Owner != "b" {
		t.Fatalf("semaphore: %+v, %v; want limit 2, held by a then b", s, err)
	}
	list, _, err := c.Semaphores(ctx, client.ListOptions{Prefix: name})
	if err != nil || len(list) != 1 || list[0].Name != name || list[0].Limit != 2 || len(list[0].Holders) != 2 {
		t.Fatalf("semaphores with prefix %q: %+v, %v", name, list, err)
	}
	for _, p := range []*client.Permit{a, b} {
		if err := p.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	if _, err := c.Semaphore(ctx, name); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("semaphore with no permit held: %v, want ErrNotHeld", err)
	}
}

// TestPermit_ARevokeReachesLostAndSparesTheOtherPermits: a revoke names
// one permit by its token; the event stream loses that one within a
// second, not at its next renew, and no other permit of the semaphore.
func TestPermit_ARevokeReachesLostAndSparesTheOtherPermits(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "s")
	a := mustPermit(t, ctx, c, name, 3, client.PermitOptions{Owner: "a", TTL: longTTL})
	b := mustPermit(t, ctx, c, name, 3, client.PermitOptions{Owner: "b", TTL: longTTL})
	revokeLoses(t, ctx, a, "semaphore", name, c.RevokePermit)
	s, err := c.Semaphore(ctx, name)
	if err != nil || len(s.Holders) != 1 || s.Holders[0].Token != b.Token() || isClosed(b.Done()) {
		t.Fatalf("after the revoke: %+v, %v, b done %v; want b still holding", s, err, isClosed(b.Done()))
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("release b: %v", err)
	}
	if isClosed(b.Lost()) || !isClosed(b.Done()) {
		t.Fatalf("b released: lost %v, done %v; want done, not lost", isClosed(b.Lost()), isClosed(b.Done()))
	}
}

// TestPermit_ReleaseHandsThePermitToTheWaiter: with the one permit held,
// a waiting acquire queues, and the release gives it the permit, with a
// greater token; the audit trail records the permits under kind
// semaphore, the acquired events with their limit.
func TestPermit_ReleaseHandsThePermitToTheWaiter(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "s")
	a := mustPermit(t, ctx, c, name, 1, client.PermitOptions{Owner: "a", TTL: longTTL})
	got := make(chan *client.Permit, 1)
	go func() {
		p, err := c.AcquirePermit(ctx, name, 1, client.PermitOptions{Owner: "w", TTL: longTTL, Wait: time.Minute})
		if err != nil {
			t.Errorf("waiting acquire: %v", err)
		}
		got <- p
	}()
	poll.Until(t, 10*time.Second, "the waiter in line", func() bool {
		s, err := c.Semaphore(ctx, name)
		return err == nil && len(s.Waiters) == 1 && s.Waiters[0].Owner == "w"
	})
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	var w *client.Permit
	select {
	case w = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter got no permit within 10 s of the release")
	}
	if w == nil {
		t.FailNow()
	}
	releaseAtEnd(t, w)
	if w.Token() <= a.Token() || isClosed(w.Lost()) || isClosed(a.Lost()) {
		t.Fatalf("waiter's token %d after a's %d (w lost %v, a lost %v)", w.Token(), a.Token(), w.Err(), a.Err())
	}
	evs, _, err := c.History(ctx, client.HistoryOptions{Kind: "semaphore", Name: name})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	var types []string
	for _, ev := range evs {
		if ev.Kind != "semaphore" || ev.Name != name || ev.Type == "acquired" && ev.Limit != 1 {
			t.Fatalf("event %+v, want the semaphore's, acquired with limit 1", ev)
		}
		types = append(types, ev.Type)
	}
	if !slices.Equal(types, []string{"acquired", "released", "acquired"}) {
		t.Fatalf("history, newest first: %v, want acquired, released, acquired", types)
	}
}

// TestPermit_ASessionHoldsSeveralPermitsAndNamesTheSemaphore: each
// acquire in a session takes a permit of its own, and the session lists
// the semaphore.
func TestPermit_ASessionHoldsSeveralPermitsAndNamesTheSemaphore(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "s")
	s := mustSession(t, ctx, c)
	a := mustPermit(t, ctx, c, name, 2, client.PermitOptions{Session: s.ID})
	b := mustPermit(t, ctx, c, name, 2, client.PermitOptions{Session: s.ID})
	if a.Token() == b.Token() || a.Info().Session != s.ID {
		t.Fatalf("permits %d and %d in session %q (%q); want two", a.Token(), b.Token(), s.ID, a.Info().Session)
	}
	got, err := c.GetSession(ctx, s.ID)
	if err != nil || !slices.Equal(got.Semaphores, []string{name}) {
		t.Fatalf("session: %+v, %v; want semaphores [%s]", got, err, name)
	}
	deleteSessionLoses(t, ctx, c, s, a, b)
}
