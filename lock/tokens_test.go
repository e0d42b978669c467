package lock_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
)

// TestToken_StrictlyIncreasesAcrossReleaseRevokeExpiryAndRestart hands
// out tokens for one lock and others across every way a hold can end,
// and across a restart of etcd and the engine on the same data directory.
func TestToken_StrictlyIncreasesAcrossReleaseRevokeExpiryAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	cfg := testetcd.Config(t)
	m := testetcd.StartConfig(t, cfg)
	e := holdtest.StartEngine(t, m, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)

	var tokens []int64
	grant := func(e *lock.Engine, req lock.AcquireRequest) *lock.Lock {
		t.Helper()
		l := holdtest.MustAcquire(t, e, req)
		if n := len(tokens); n > 0 && l.Token <= tokens[n-1] {
			t.Fatalf("token %d of %q after %d: tokens must strictly increase (all: %v)", l.Token, req.Name, tokens[n-1], tokens)
		}
		tokens = append(tokens, l.Token)
		return l
	}

	// Released.
	l := grant(e, lock.AcquireRequest{Name: "tok", Owner: "w1"})
	if err := e.Release(ctx, "tok", l.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Revoked.
	grant(e, lock.AcquireRequest{Name: "tok", Owner: "w2"})
	if _, err := e.Revoke(ctx, "tok", "test"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	// Another lock in between: tokens are global, not per lock.
	grant(e, lock.AcquireRequest{Name: "other", Owner: "w3"})
	// Expired.
	expiring := grant(e, lock.AcquireRequest{Name: "tok", Owner: "w4", TTL: 2 * time.Second})
	poll.Until(t, 15*time.Second, "the 2s lock expires", func() bool { return isNotHeld(t, e, "tok") })
	poll.Until(t, 10*time.Second, "its expiry is recorded", func() bool {
		return len(holdtest.EventsOf(holdtest.History(t, e, "tok"), lock.EventExpired)) == 1
	})
	grant(e, lock.AcquireRequest{Name: "tok", Owner: "w5"})
	// A lock with a long lease that must outlive the restart, and a fenced
	// value that must too.
	survivor := grant(e, lock.AcquireRequest{Name: "survivor", Owner: "w6", TTL: time.Minute, Metadata: map[string]string{"k": "v"}})
	if _, err := e.PutFenced(ctx, "res", survivor.Token, json.RawMessage(`"before"`), "survivor"); err != nil {
		t.Fatalf("fenced write: %v", err)
	}
	historyBefore := holdtest.History(t, e, "")

	// Restart: engine first, then etcd; then both again on the same dir.
	e.Close()
	m.Close()
	m2 := testetcd.StartConfig(t, cfg)
	e2 := holdtest.StartEngine(t, m2, lock.DefaultConfig())

	checkSurvivedRestart(t, e2, survivor, expiring.Token, historyBefore)

	// After the restart, tokens keep growing, for new and old names.
	grant(e2, lock.AcquireRequest{Name: "fresh-after-restart", Owner: "w7"})
	cur, err := e2.Get(ctx, "tok")
	if err != nil {
		t.Fatalf("get tok: %v", err)
	}
	if err := e2.Release(ctx, "tok", cur.Token); err != nil {
		t.Fatalf("release after restart: %v", err)
	}
	grant(e2, lock.AcquireRequest{Name: "tok", Owner: "w8"})
	if _, err := e2.PutFenced(ctx, "res", survivor.Token-1, json.RawMessage(`"stale"`), ""); !errors.Is(err, lock.ErrStaleToken) {
		t.Fatalf("stale fenced write after restart: %v, want ErrStaleToken", err)
	}
}

// checkSurvivedRestart: after a restart, e still has the survivor's hold
// and fenced value, and the history from before it, whole and
// unduplicated, with one expired event for the hold of token expired.
func checkSurvivedRestart(t *testing.T, e2 *lock.Engine, survivor *lock.Lock, expired int64, historyBefore []lock.Event) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	got, err := e2.Get(ctx, "survivor")
	if err != nil {
		t.Fatalf("lock with a live lease after restart: %v", err)
	}
	if got.Token != survivor.Token || got.Owner != "w6" || got.Metadata["k"] != "v" {
		t.Fatalf("after restart got %+v, want %+v", got, survivor)
	}
	if _, _, err := e2.Acquire(ctx, lock.AcquireRequest{Name: "survivor", Owner: "thief"}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("acquire of a surviving lock: %v, want ErrHeld", err)
	}
	if _, err := e2.Renew(ctx, "survivor", survivor.Token); err != nil {
		t.Fatalf("renew after restart: %v", err)
	}
	fv, err := e2.GetFenced(ctx, "res")
	if err != nil || fv.Token != survivor.Token || string(fv.Value) != `"before"` {
		t.Fatalf("fenced value after restart: %+v, %v", fv, err)
	}

	// History survives, whole and unduplicated.
	historyAfter := holdtest.History(t, e2, "")
	if len(historyAfter) != len(historyBefore) {
		t.Fatalf("history after restart has %d events, before %d:\n%+v\n%+v", len(historyAfter), len(historyBefore), historyAfter, historyBefore)
	}
	for i := range historyBefore {
		a, b := historyBefore[i], historyAfter[i]
		if a.Revision != b.Revision || a.Type != b.Type || a.Lock != b.Lock || a.Token != b.Token {
			t.Fatalf("event %d changed over restart: %+v, then %+v", i, a, b)
		}
	}
	if n := len(holdtest.EventsOf(holdtest.History(t, e2, "tok"), lock.EventExpired)); n != 1 {
		t.Fatalf("%d expired events for the expired hold after restart, want 1", n)
	}
	if ev := holdtest.EventsOf(holdtest.History(t, e2, "tok"), lock.EventExpired); ev[0].Token != expired {
		t.Fatalf("expired event has token %d, want %d", ev[0].Token, expired)
	}
}
