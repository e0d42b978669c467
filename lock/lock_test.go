package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

func TestAcquire_SecondAcquireSeesHolder(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w1"})
	if err != nil || !fresh {
		t.Fatalf("acquire: %v fresh=%v", err, fresh)
	}
	if l.Token <= 0 || l.TTL != 30*time.Second {
		t.Fatalf("bad lock %+v", l)
	}
	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w2"})
	var he *lock.HeldError
	if !errors.As(err, &he) || he.Holder == nil || he.Holder.Owner != "w1" || he.Holder.Token != l.Token {
		t.Fatalf("second acquire: got %v, want HeldError with holder w1", err)
	}
	if err := e.Release(ctx, "a", l.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	l2, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w2"})
	if err != nil {
		t.Fatalf("reacquire: %v", err)
	}
	if l2.Token <= l.Token {
		t.Fatalf("token did not grow: %d then %d", l.Token, l2.Token)
	}
	evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].Type != lock.EventAcquired || evs[1].Type != lock.EventReleased || evs[2].Type != lock.EventAcquired {
		t.Fatalf("history: %+v", evs)
	}
}

func TestAcquire_StaleTokenCannotReleaseOrRenew(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	old := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w1"})
	if err := e.Release(ctx, "job", old.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	// The lock is free: the old token finds nothing to release or renew.
	if err := e.Release(ctx, "job", old.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
	if _, err := e.Renew(ctx, "job", old.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renew after release: %v, want ErrNotHeld", err)
	}

	cur := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w2"})
	// Now a newer holder exists; the old token must not touch it.
	if err := e.Release(ctx, "job", old.Token); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("release with a stale token: %v, want ErrTokenMismatch", err)
	}
	if _, err := e.Renew(ctx, "job", old.Token); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("renew with a stale token: %v, want ErrTokenMismatch", err)
	}
	// Nor may a token that was never handed out.
	if err := e.Release(ctx, "job", cur.Token+1); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("release with a future token: %v, want ErrTokenMismatch", err)
	}
	got, err := e.Get(ctx, "job")
	if err != nil || got.Token != cur.Token || got.Owner != "w2" {
		t.Fatalf("newer holder after stale attempts: %+v, %v", got, err)
	}
	if ended := holdtest.EventsOf(holdtest.History(t, e, "job"), lock.EventReleased); len(ended) != 1 || ended[0].Token != old.Token {
		t.Fatalf("released events = %+v, want only the first hold's", ended)
	}
	if err := e.Release(ctx, "job", cur.Token); err != nil {
		t.Fatalf("holder's release: %v", err)
	}
}

func TestAcquire_GetReturnsHolderWithMetadata(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	before := time.Now()
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "meta", Owner: "w1", TTL: 10 * time.Second,
		LockDelay: 2 * time.Second, Metadata: map[string]string{"host": "h1", "pid": "42"}})
	got, err := e.Get(ctx, "meta")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Name != "meta" || got.Owner != "w1" || got.Token != l.Token || got.Session != "" ||
		got.TTL != 10*time.Second || got.LockDelay != 2*time.Second ||
		got.Metadata["host"] != "h1" || got.Metadata["pid"] != "42" || len(got.Metadata) != 2 {
		t.Fatalf("get = %+v, want %+v", got, l)
	}
	if !got.AcquiredAt.Equal(l.AcquiredAt) || got.AcquiredAt.Before(before.Add(-time.Second)) {
		t.Fatalf("acquired at %v, acquire said %v", got.AcquiredAt, l.AcquiredAt)
	}
	if got.ExpiresAt.After(l.ExpiresAt.Add(time.Second)) || got.ExpiresAt.Before(before.Add(8*time.Second)) {
		t.Fatalf("expires at %v, acquire said %v", got.ExpiresAt, l.ExpiresAt)
	}
	// The token is the lock key's ModRevision, as documented.
	resp, err := m.Client().Get(ctx, holdtest.Prefix+"locks/meta")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != l.Token {
		t.Fatalf("lock key: %+v, %v; want ModRevision %d", resp, err, l.Token)
	}
	if _, err := e.Get(ctx, "nobody-holds-this"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("get of a free lock: %v, want ErrNotHeld", err)
	}
	st, err := e.Stats(ctx)
	if err != nil || st.LocksHeld != 1 || st.Waiters != 0 || st.Sessions != 0 {
		t.Fatalf("stats = %+v, %v", st, err)
	}
}

func TestRenew_ExtendsTheLeaseAndKeepsTheToken(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "r", Owner: "w1", TTL: 5 * time.Second})
	if l.TTL != 5*time.Second {
		t.Fatalf("TTL = %s, want 5s", l.TTL)
	}
	lease := lockLease(t, cli, "r")
	// Let the lease run down by at least a second, so a renewal shows.
	poll.Until(t, 10*time.Second, "the lease runs down", func() bool { return remainingTTL(t, cli, lease) <= 3 })
	r, err := e.Renew(ctx, "r", l.Token)
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if r.Token != l.Token || r.TTL != 5*time.Second || r.Owner != "w1" {
		t.Fatalf("renew = %+v, want token %d and TTL 5s", r, l.Token)
	}
	if d := r.ExpiresAt.Sub(l.ExpiresAt); d < 900*time.Millisecond {
		t.Fatalf("renew moved ExpiresAt by %s (%v -> %v), want about a second or more", d, l.ExpiresAt, r.ExpiresAt)
	}
	if left := time.Until(r.ExpiresAt); left > 5*time.Second || left < 3*time.Second {
		t.Fatalf("ExpiresAt %v is %s away, want within the 5s TTL", r.ExpiresAt, left)
	}
	if ttl := remainingTTL(t, cli, lease); ttl < 4 {
		t.Fatalf("etcd's lease has %ds left after renew, want the full 5s TTL back", ttl)
	}
	got, err := e.Get(ctx, "r")
	if err != nil || got.Token != l.Token {
		t.Fatalf("get after renew: %+v, %v", got, err)
	}
}

// etcd raises a TTL below its lease floor (1.5 × election timeout, 2s by
// default); the engine must report what etcd granted, not what was asked.
func TestRenew_ReportsTheTTLEtcdGranted(t *testing.T) {
	mc := testetcd.Config(t)
	mc.HeartbeatInterval, mc.ElectionTimeout = 100*time.Millisecond, time.Second // etcd's defaults, baton's
	m := testetcd.StartConfig(t, mc)
	cfg := lock.DefaultConfig()
	cfg.MinTTL = time.Second // let a 1s request through to etcd
	e := holdtest.StartEngine(t, m, cfg)
	ctx := holdtest.Ctx(t)
	cli := m.Client()

	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "floor", Owner: "w1", TTL: time.Second})
	tl, err := cli.TimeToLive(ctx, lockLease(t, cli, "floor"))
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Duration(tl.GrantedTTL) * time.Second
	if granted != 2*time.Second {
		t.Fatalf("etcd granted %s for a 1s request; this test assumes its 2s floor", granted)
	}
	if l.TTL != granted {
		t.Fatalf("acquire reported TTL %s, etcd granted %s", l.TTL, granted)
	}
	if d := l.ExpiresAt.Sub(l.AcquiredAt); d < granted-100*time.Millisecond || d > granted+100*time.Millisecond {
		t.Fatalf("ExpiresAt - AcquiredAt = %s, want about %s", d, granted)
	}
	got, err := e.Get(ctx, "floor")
	if err != nil || got.TTL != granted {
		t.Fatalf("get reported %+v, %v; want TTL %s", got, err, granted)
	}
	r, err := e.Renew(ctx, "floor", l.Token)
	if err != nil || r.TTL != granted {
		t.Fatalf("renew reported %+v, %v; want TTL %s", r, err, granted)
	}
	s, err := e.CreateSession(ctx, "w1", time.Second)
	if err != nil || s.TTL != granted {
		t.Fatalf("session reported %+v, %v; want TTL %s", s, err, granted)
	}
}

func TestRevoke_UnheldLockIsNotHeld(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	if _, err := e.Revoke(ctx, "never-held", "cleanup"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("revoke of a never-held lock: %v, want ErrNotHeld", err)
	}
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "gone", Owner: "w1"})
	if err := e.Release(ctx, "gone", l.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Revoke(ctx, "gone", "cleanup"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("revoke of a released lock: %v, want ErrNotHeld", err)
	}
	if n := len(holdtest.EventsOf(holdtest.History(t, e, "gone"), lock.EventRevoked)); n != 0 {
		t.Fatalf("%d revoked events for a lock nobody held", n)
	}
}

func TestRevoke_RecordsReasonAndEndsTheLease(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "stuck", Owner: "w1"})
	lease := lockLease(t, cli, "stuck")

	const reason = "holder wedged; ticket OPS-42"
	rl, err := e.Revoke(ctx, "stuck", reason)
	if err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if rl.Token != l.Token || rl.Owner != "w1" {
		t.Fatalf("revoke returned %+v, want the revoked hold %+v", rl, l)
	}
	if !isNotHeld(t, e, "stuck") {
		t.Fatal("lock still held after revoke")
	}
	if ttl := remainingTTL(t, cli, lease); ttl != -1 {
		t.Fatalf("the revoked lock's own lease still has %ds", ttl)
	}
	revoked := holdtest.EventsOf(holdtest.History(t, e, "stuck"), lock.EventRevoked)
	if len(revoked) != 1 {
		t.Fatalf("%d revoked events, want 1", len(revoked))
	}
	if ev := revoked[0]; ev.Detail != reason || ev.Token != l.Token || ev.Owner != "w1" || ev.Lock != "stuck" {
		t.Fatalf("revoked event = %+v, want reason %q and token %d", ev, reason, l.Token)
	}
	// The revoked holder cannot release what it no longer holds.
	if err := e.Release(ctx, "stuck", l.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release after revoke: %v, want ErrNotHeld", err)
	}
	// Without lock-delay the lock is free again at once.
	next := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "stuck", Owner: "w2"})
	if next.Token <= l.Token {
		t.Fatalf("token after revoke %d, want above %d", next.Token, l.Token)
	}
}

func TestRelease_PoolsTheOwnLeaseForTheNextAcquireAndRecordsOnce(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "rel", Owner: "w1"})
	lease := lockLease(t, cli, "rel")
	if err := e.Release(ctx, "rel", l.Token); err != nil {
		t.Fatal(err)
	}
	evs := holdtest.History(t, e, "rel")
	if len(evs) != 2 || evs[0].Type != lock.EventReleased || evs[1].Type != lock.EventAcquired ||
		evs[0].Token != l.Token || evs[1].Token != l.Token || evs[0].Revision <= evs[1].Revision {
		t.Fatalf("history = %+v, want acquired then released with token %d", evs, l.Token)
	}
	// The released lease holds nothing, and the next acquire with the same
	// TTL takes it (no grant, no raft entry) with its full TTL again.
	if n := keylessLeases(t, cli); n != 1 {
		t.Fatalf("%d idle leases after the release, want the released one", n)
	}
	before := leaseCount(t, cli)
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "other", Owner: "w2"})
	if got := lockLease(t, cli, "other"); got != lease {
		t.Fatalf("next acquire got lease %x, want the pooled %x", int64(got), int64(lease))
	}
	if n := leaseCount(t, cli); n != before {
		t.Fatalf("%d leases after reuse, want %d: a grant happened", n, before)
	}
	if ttl := remainingTTL(t, cli, lease); ttl < int64(lock.DefaultConfig().DefaultTTL/time.Second)-2 {
		t.Fatalf("reused lease has %ds left, want about the full TTL", ttl)
	}
	// A stale token cannot touch the new hold on the reused lease.
	if _, err := e.Renew(ctx, "rel", l.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("renew of the released hold: %v, want ErrNotHeld", err)
	}
	// A revoke ends the lease, as the operator meant.
	if _, err := e.Revoke(ctx, "other", "test"); err != nil {
		t.Fatal(err)
	}
	if ttl := remainingTTL(t, cli, lease); ttl != -1 {
		t.Fatalf("revoked hold's lease still has %ds", ttl)
	}
}

// A pooled lease that ran out while idle is never handed out: the next
// acquire gets a lease that lives.
func TestAcquire_SkipsAPooledLeaseThatExpired(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	req := lock.AcquireRequest{Name: "short", Owner: "w1", TTL: 2 * time.Second}
	l := holdtest.MustAcquire(t, e, req)
	old := lockLease(t, cli, "short")
	if err := e.Release(ctx, "short", l.Token); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the pooled lease expires", func() bool { return remainingTTL(t, cli, old) == -1 })
	holdtest.MustAcquire(t, e, req)
	got := lockLease(t, cli, "short")
	if got == old {
		t.Fatalf("acquire got the expired lease %x", int64(old))
	}
	if ttl := remainingTTL(t, cli, got); ttl < 1 {
		t.Fatalf("acquire's lease has %ds left, want about 2", ttl)
	}
}
