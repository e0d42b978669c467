package lock_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
)

func TestSession_CreateGetRenewAndIdempotentAcquire(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()

	before := time.Now()
	s, err := e.CreateSession(ctx, "w1", 20*time.Second)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	if _, err := strconv.ParseUint(s.ID, 16, 64); err != nil || s.Owner != "w1" || s.TTL != 20*time.Second || len(s.Locks) != 0 {
		t.Fatalf("session = %+v", s)
	}
	if s.ExpiresAt.Before(before.Add(19*time.Second)) || s.ExpiresAt.After(time.Now().Add(20*time.Second)) {
		t.Fatalf("session expires at %v, want about 20s from now", s.ExpiresAt)
	}
	// The ID is the etcd lease ID in hex.
	id, _ := strconv.ParseInt(s.ID, 16, 64)
	if tl, err := cli.TimeToLive(ctx, clientv3.LeaseID(id)); err != nil || tl.GrantedTTL != 20 {
		t.Fatalf("session lease: %+v, %v", tl, err)
	}

	a := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "a", Owner: "w1", Session: s.ID})
	b := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "b", Owner: "w1", Session: s.ID})
	if a.Session != s.ID || a.TTL != s.TTL || b.Token <= a.Token {
		t.Fatalf("session locks: %+v, %+v", a, b)
	}
	if lockLease(t, cli, "a") != clientv3.LeaseID(id) {
		t.Fatal("session lock is not attached to the session's lease")
	}

	checkAcquireInSessionIsIdempotent(t, e, s, a)
	if st, err := e.Stats(ctx); err != nil || st.Sessions != 2 || st.LocksHeld != 2 {
		t.Fatalf("stats = %+v, %v; want 2 sessions and 2 locks", st, err)
	}
	gs, err := e.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatalf("get session: %v", err)
	}
	if !slices.Equal(gs.Locks, []string{"a", "b"}) || gs.Owner != "w1" || gs.TTL != s.TTL {
		t.Fatalf("get session = %+v, want locks [a b]", gs)
	}

	checkRenewSession(t, e, cli, s, b)
}

// checkAcquireInSessionIsIdempotent: acquiring a again in s gives the same
// hold; another session, or a lock of its own, is refused.
func checkAcquireInSessionIsIdempotent(t *testing.T, e *lock.Engine, s *lock.Session, a *lock.Lock) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	// Acquiring again in the same session is idempotent: same hold, same
	// token, reported as not fresh, even with the ID spelled in upper case.
	for _, sid := range []string{s.ID, strings.ToUpper(s.ID)} {
		again, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w1", Session: sid})
		if err != nil {
			t.Fatalf("acquire again with session %s: %v", sid, err)
		}
		if fresh || again.Token != a.Token || again.Session != s.ID || again.TTL != a.TTL || again.Owner != a.Owner {
			t.Fatalf("acquire again = %+v fresh=%v, want the same hold %+v", again, fresh, a)
		}
	}
	got, err := e.Get(ctx, "a")
	if err != nil || got.Token != a.Token || got.Session != s.ID || got.TTL != s.TTL {
		t.Fatalf("get session lock = %+v, %v; want session %s and TTL %s", got, err, s.ID, s.TTL)
	}
	// Another session, or a lock of its own, is refused.
	s2, err := e.CreateSession(ctx, "w2", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w2", Session: s2.ID})
	if he := asHeld(t, err); he.Holder == nil || he.Holder.Session != s.ID || he.Holder.Token != a.Token {
		t.Fatalf("held error from another session names %+v", he.Holder)
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w2"}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("acquire without session: %v, want ErrHeld", err)
	}
	if n := len(holdtest.History(t, e, "a")); n != 1 {
		t.Fatalf("idempotent and refused acquires left %d events for a, want 1", n)
	}

}

// checkRenewSession: renewing s, or its lock b, renews s's lease; releasing
// b leaves s and its other lock alone.
func checkRenewSession(t *testing.T, e *lock.Engine, cli *clientv3.Client, s *lock.Session, b *lock.Lock) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	id, _ := strconv.ParseInt(s.ID, 16, 64)
	lease := clientv3.LeaseID(id)
	// Two seconds at least, so the renewed expiry is clearly later even
	// though etcd reports remaining TTLs rounded down to whole seconds.
	poll.Until(t, 10*time.Second, "the session lease runs down", func() bool { return remainingTTL(t, cli, lease) <= 17 })
	rs, err := e.RenewSession(ctx, s.ID)
	if err != nil {
		t.Fatalf("renew session: %v", err)
	}
	if !rs.ExpiresAt.After(s.ExpiresAt) || !slices.Equal(rs.Locks, []string{"a", "b"}) {
		t.Fatalf("renewed session = %+v, want a later expiry than %v", rs, s.ExpiresAt)
	}
	if ttl := remainingTTL(t, cli, lease); ttl < 19 {
		t.Fatalf("session lease has %ds after renew, want the full 20s back", ttl)
	}
	// Renewing a lock of the session renews the session.
	if r, err := e.Renew(ctx, "b", b.Token); err != nil || r.TTL != s.TTL || r.Session != s.ID {
		t.Fatalf("renew session lock: %+v, %v", r, err)
	}
	// Releasing one lock leaves the session and its other locks alone.
	if err := e.Release(ctx, "b", b.Token); err != nil {
		t.Fatalf("release b: %v", err)
	}
	if gs, err := e.GetSession(ctx, s.ID); err != nil || !slices.Equal(gs.Locks, []string{"a"}) {
		t.Fatalf("session after releasing b = %+v, %v", gs, err)
	}
	if ttl := remainingTTL(t, cli, lease); ttl <= 0 {
		t.Fatal("releasing a session lock ended the session's lease")
	}
}

func TestSession_DeleteReleasesAllItsLocks(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.CreateSession(ctx, "w2", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]int64{}
	for i := range 5 {
		name := fmt.Sprintf("s-%d", i)
		held[name] = holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: "w1", Session: s.ID, LockDelay: 5 * time.Second}).Token
	}
	keep := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "other", Owner: "w2", Session: other.ID})

	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatalf("delete session: %v", err)
	}
	for name, tok := range held {
		if !isNotHeld(t, e, name) {
			t.Fatalf("%s still held after its session was deleted", name)
		}
		evs := holdtest.History(t, e, name)
		ended := holdtest.EventsOf(evs, lock.EventReleased)
		if len(ended) != 1 || len(evs) != 2 {
			t.Fatalf("%s: history %+v, want acquired and one released", name, evs)
		}
		if ev := ended[0]; ev.Token != tok || ev.Session != s.ID || ev.Owner != "w1" {
			t.Fatalf("%s: released event %+v, want token %d session %s", name, ev, tok, s.ID)
		}
		// A clean release: lock-delay does not apply.
		if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: "w3"}); err != nil {
			t.Fatalf("%s after session delete: %v (lock-delay must not apply)", name, err)
		}
	}
	if got, err := e.Get(ctx, "other"); err != nil || got.Token != keep.Token {
		t.Fatalf("another session's lock: %+v, %v", got, err)
	}
	if _, err := e.GetSession(ctx, s.ID); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("get deleted session: %v, want ErrSessionNotFound", err)
	}
	if _, err := e.RenewSession(ctx, s.ID); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("renew deleted session: %v, want ErrSessionNotFound", err)
	}
	if err := e.DeleteSession(ctx, s.ID); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("delete deleted session: %v, want ErrSessionNotFound", err)
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "late", Owner: "w1", Session: s.ID}); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("acquire in deleted session: %v, want ErrSessionNotFound", err)
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"sessions/"); len(keys) != 1 {
		t.Fatalf("session keys left: %v, want only the other session's", keys)
	}
	if !isNotHeld(t, e, "late") {
		t.Fatal("acquire in a deleted session took the lock")
	}
}

func TestSession_UnknownSessionIsNotFound(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	// A lease that exists but is no session (a lock's own lease) must not
	// pass for one.
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "own", Owner: "w1"})
	notSession := strconv.FormatInt(int64(lockLease(t, m.Client(), "own")), 16)

	for _, id := range []string{"abc123", notSession} {
		for _, wait := range []time.Duration{0, 5 * time.Second} {
			_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "x", Owner: "w1", Session: id, Wait: wait})
			if !errors.Is(err, lock.ErrSessionNotFound) {
				t.Errorf("acquire with session %s wait %s: %v, want ErrSessionNotFound", id, wait, err)
			}
		}
		if _, err := e.GetSession(ctx, id); !errors.Is(err, lock.ErrSessionNotFound) {
			t.Errorf("get session %s: %v, want ErrSessionNotFound", id, err)
		}
		if _, err := e.RenewSession(ctx, id); !errors.Is(err, lock.ErrSessionNotFound) {
			t.Errorf("renew session %s: %v, want ErrSessionNotFound", id, err)
		}
		if err := e.DeleteSession(ctx, id); !errors.Is(err, lock.ErrSessionNotFound) {
			t.Errorf("delete session %s: %v, want ErrSessionNotFound", id, err)
		}
	}
	if !isNotHeld(t, e, "x") {
		t.Fatal("acquire with an unknown session took the lock")
	}
	if _, err := e.Get(ctx, "own"); err != nil {
		t.Fatalf("deleting a non-session lease by its ID touched the lock: %v", err)
	}
	if n := len(holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"queue/")); n != 0 {
		t.Fatalf("%d queue entries left", n)
	}
}

func TestSession_ExpiryReleasesAllLocksWithOneSessionExpiredEach(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w1", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"se-a", "se-b", "se-c"}
	tokens := map[string]int64{}
	for _, n := range names {
		tokens[n] = holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: "w1", Session: s.ID}).Token
	}
	poll.Until(t, 15*time.Second, "the session's locks go with its lease", func() bool {
		for _, n := range names {
			if !isNotHeld(t, e, n) {
				return false
			}
		}
		return true
	})
	oneEach := func() bool {
		for _, n := range names {
			if len(holdtest.EventsOf(holdtest.History(t, e, n), lock.EventSessionExpired)) != 1 {
				return false
			}
		}
		return true
	}
	poll.Until(t, 10*time.Second, "one session_expired event per lock", oneEach)
	poll.Consistently(t, time.Second, "still exactly one session_expired per lock", oneEach)
	for _, n := range names {
		evs := holdtest.History(t, e, n)
		if len(evs) != 2 {
			t.Fatalf("%s: history %+v, want acquired and session_expired", n, evs)
		}
		if ev := evs[0]; ev.Type != lock.EventSessionExpired || ev.Token != tokens[n] || ev.Session != s.ID || ev.Owner != "w1" {
			t.Fatalf("%s: end event %+v, want session_expired with token %d", n, ev, tokens[n])
		}
	}
	if _, err := e.GetSession(ctx, s.ID); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("get expired session: %v, want ErrSessionNotFound", err)
	}
	if _, err := e.RenewSession(ctx, s.ID); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("renew expired session: %v, want ErrSessionNotFound", err)
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "se-a", Owner: "w1", Session: s.ID}); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("acquire in expired session: %v, want ErrSessionNotFound", err)
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"sessions/"); len(keys) != 0 {
		t.Fatalf("session keys left: %v", keys)
	}
}
