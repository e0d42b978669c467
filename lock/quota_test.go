package lock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// quotaed is ctx with a caller of credential cred under quotas q.
func quotaed(ctx context.Context, cred string, q lock.CallerQuotas) context.Context {
	return lock.WithCaller(ctx, lock.Caller{Credential: cred, Quotas: q})
}

// wantQuota fails unless err is a quota refusal of what with limit.
func wantQuota(t *testing.T, err error, what string, limit int) {
	t.Helper()
	le := holdtest.AsLimit(t, err, lock.ErrQuotaExceeded)
	if le.Quota != what || le.Limit != limit || le.RetryAfter <= 0 {
		t.Fatalf("refusal %+v; want quota %s, limit %d and a retry hint", le, what, limit)
	}
}

// TestQuota_HoldsAreCountedAcrossNodesAndFreedByTheirEnds: a credential's
// holds are counted wherever they were taken; past its quota an acquire
// is refused and writes nothing; a release, an expiry and a handover to
// another credential give the slot back; another credential is never
// refused for it.
func TestQuota_HoldsAreCountedAcrossNodesAndFreedByTheirEnds(t *testing.T) {
	e1, m := holdtest.NewEngine(t)
	e2 := holdtest.StartEngine(t, m, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	a := quotaed(ctx, "team-a", lock.CallerQuotas{Holds: 2})
	b := quotaed(ctx, "team-b", lock.CallerQuotas{Holds: 1})

	one, _, err := e1.Acquire(a, lock.AcquireRequest{Name: "a.1", Owner: "w", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e2.Acquire(a, lock.AcquireRequest{Name: "a.2", Owner: "w", TTL: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// Node 1 learns of node 2's hold from its watch.
	poll.Until(t, 10*time.Second, "node 1 counts team A's hold on node 2", func() bool {
		u, err := e1.QuotaUsage(ctx, "team-a", lock.CallerQuotas{Holds: 2})
		return err == nil && u.Holds == 2
	})
	for _, e := range []*lock.Engine{e1, e2} {
		_, _, err = e.Acquire(a, lock.AcquireRequest{Name: "a.3", Owner: "w", TTL: 30 * time.Second})
		wantQuota(t, err, "holds", 2)
	}
	if !isNotHeld(t, e1, "a.3") {
		t.Fatal("a refused acquire left a hold")
	}
	// Team B is not refused for team A's holds.
	if _, _, err := e1.Acquire(b, lock.AcquireRequest{Name: "b.1", Owner: "w", TTL: 30 * time.Second}); err != nil {
		t.Fatalf("team B's first hold: %v", err)
	}

	// A release frees a slot on both nodes.
	if err := e1.Release(a, "a.1", one.Token); err != nil {
		t.Fatal(err)
	}
	usage := func(e *lock.Engine, holds int) func() bool {
		return func() bool {
			u, err := e.QuotaUsage(ctx, "team-a", lock.CallerQuotas{Holds: 2})
			return err == nil && u.Holds == holds
		}
	}
	poll.Until(t, 10*time.Second, "node 2 sees the release", usage(e2, 1))
	if _, _, err := e2.Acquire(a, lock.AcquireRequest{Name: "a.4", Owner: "w", TTL: 30 * time.Second}); err != nil {
		t.Fatalf("an acquire in the freed slot: %v", err)
	}
	poll.Until(t, 10*time.Second, "node 1 sees a.4", usage(e1, 2))
	_, _, err = e1.Acquire(a, lock.AcquireRequest{Name: "a.5", Owner: "w", TTL: 30 * time.Second})
	wantQuota(t, err, "holds", 2)
	// The 2 s lease of a.2 expires: that frees the other slot.
	poll.Until(t, 15*time.Second, "node 1 sees a.2 expire", usage(e1, 1))
	if _, _, err := e1.Acquire(a, lock.AcquireRequest{Name: "a.5", Owner: "w", TTL: 30 * time.Second}); err != nil {
		t.Fatalf("an acquire in the slot an expiry freed: %v", err)
	}

	// Team B, at its quota of one hold, is refused at once, even for an
	// acquire that would wait.
	_, _, err = e1.Acquire(b, lock.AcquireRequest{Name: "a.4", Owner: "w", TTL: 30 * time.Second, Wait: 10 * time.Second})
	wantQuota(t, err, "holds", 1)
}

// TestQuota_AHandoverMovesTheHoldToTheWaitersCredential: the count
// follows the hold from the releaser's credential to the waiter's.
func TestQuota_AHandoverMovesTheHoldToTheWaitersCredential(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	a := quotaed(ctx, "team-a", lock.CallerQuotas{Holds: 1})
	b := quotaed(ctx, "team-b", lock.CallerQuotas{Holds: 1})
	l, _, err := e.Acquire(a, lock.AcquireRequest{Name: "shared.job", Owner: "a", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan error, 1)
	go func() {
		_, _, err := e.Acquire(b, lock.AcquireRequest{Name: "shared.job", Owner: "b", TTL: 30 * time.Second, Wait: 20 * time.Second})
		granted <- err
	}()
	poll.Until(t, 10*time.Second, "team B waits", func() bool {
		ws, err := e.Waiters(ctx, "shared.job")
		return err == nil && len(ws) == 1
	})
	if err := e.Release(a, "shared.job", l.Token); err != nil {
		t.Fatal(err)
	}
	if err := <-granted; err != nil {
		t.Fatalf("team B's wait: %v", err)
	}
	// Team A holds nothing now: its next acquire passes; team B holds
	// one, its quota: its next is refused.
	poll.Until(t, 10*time.Second, "team A's slot is free", func() bool {
		_, _, err := e.Acquire(a, lock.AcquireRequest{Name: "a.next", Owner: "a", TTL: 30 * time.Second})
		return err == nil
	})
	_, _, err = e.Acquire(b, lock.AcquireRequest{Name: "b.next", Owner: "b", TTL: 30 * time.Second})
	wantQuota(t, err, "holds", 1)
}

// TestQuota_SessionsAndWaiters: sessions count across the cluster until
// they end; waiting acquires count on the node they wait on, and a
// refused wait writes nothing.
func TestQuota_SessionsAndWaiters(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	a := quotaed(ctx, "team-a", lock.CallerQuotas{Sessions: 1, Waiters: 2})

	s, err := e.CreateSession(a, "a.worker", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.CreateSession(a, "a.worker", 30*time.Second)
	wantQuota(t, err, "sessions", 1)
	if err := e.DeleteSession(a, s.ID); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the deleted session's slot is free", func() bool {
		_, err := e.CreateSession(a, "a.worker", 30*time.Second)
		return err == nil
	})

	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "busy", Owner: "x", TTL: 30 * time.Second})
	wctx, cancel := context.WithCancel(a)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _ = e.Acquire(wctx, lock.AcquireRequest{Name: "busy", Owner: fmt.Sprint(i), TTL: 30 * time.Second, Wait: time.Minute})
		}()
	}
	poll.Until(t, 10*time.Second, "two acquires wait", func() bool {
		ws, err := e.Waiters(ctx, "busy")
		return err == nil && len(ws) == 2
	})
	// Only the quotas asked about are counted.
	if u, err := e.QuotaUsage(ctx, "team-a", lock.CallerQuotas{Waiters: 2, Sessions: 1}); err != nil || u != (lock.CallerQuotas{Waiters: 2, Sessions: 1}) {
		t.Fatalf("usage %+v, %v; want 2 waiters and 1 session", u, err)
	}
	_, _, err = e.Acquire(a, lock.AcquireRequest{Name: "busy", Owner: "third", TTL: 30 * time.Second, Wait: time.Minute})
	wantQuota(t, err, "waiters", 2)
	if ws, _ := e.Waiters(ctx, "busy"); len(ws) != 2 {
		t.Fatalf("%d waiters after the refusal, want the two", len(ws))
	}
	// An acquire that does not wait is no waiter.
	if _, _, err := e.Acquire(a, lock.AcquireRequest{Name: "a.free", Owner: "x", TTL: 30 * time.Second}); err != nil {
		t.Fatalf("an acquire without wait at the waiters' quota: %v", err)
	}
	cancel()
	wg.Wait()
	if _, _, err := e.Acquire(a, lock.AcquireRequest{Name: "a.other", Owner: "x", TTL: 30 * time.Second, Wait: time.Second}); err != nil {
		t.Fatalf("a wait once the others left: %v", err)
	}
}

// TestQuota_AGrantIsCountedOnceWhicheverComesFirst: the node counts its
// own grant when the acquire returns, and the watch counts it when it
// delivers it; whichever comes first, the grant counts once, right after
// the acquire returns and from then on.
func TestQuota_AGrantIsCountedOnceWhicheverComesFirst(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	q := lock.CallerQuotas{Holds: 10, Sessions: 10}
	for i := range 40 {
		cred := fmt.Sprintf("team-%d", i)
		c := quotaed(ctx, cred, q)
		if _, _, err := e.Acquire(c, lock.AcquireRequest{Name: fmt.Sprintf("job-%d", i), Owner: "w", TTL: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.CreateSession(c, "w", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if u, err := e.QuotaUsage(ctx, cred, q); err != nil || u != (lock.CallerQuotas{Holds: 1, Sessions: 1}) {
			t.Fatalf("%s: usage %+v, %v right after one grant and one session; want one of each", cred, u, err)
		}
	}
	// Once the watch has delivered every grant, each still counts once.
	if _, _, err := e.Acquire(quotaed(ctx, "last", q), lock.AcquireRequest{Name: "last", Owner: "w", TTL: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the watch to deliver the last grant", func() bool {
		u, err := e.QuotaUsage(ctx, "last", q)
		return err == nil && u.Holds == 1
	})
	for i := range 40 {
		cred := fmt.Sprintf("team-%d", i)
		if u, err := e.QuotaUsage(ctx, cred, q); err != nil || u != (lock.CallerQuotas{Holds: 1, Sessions: 1}) {
			t.Errorf("%s: usage %+v, %v; want one of each", cred, u, err)
		}
	}
}
