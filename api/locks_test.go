package api_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testserver"
)

func TestAcquire_FreshLockAnswers201WithTheLock(t *testing.T) {
	s := newTestServer(t)
	before := time.Now().Add(-time.Second)
	r := s.Do("POST", "/v1/locks/nightly-recon", `{"owner":"w1","ttl":"30s","metadata":{"k":"v"}}`)
	testserver.WantStatus(t, r, http.StatusCreated)
	obj := testserver.RawObject(t, r.Body)
	// docs/API.md's Lock shows "session"; a lock with a lease of its own has
	// none, and the server leaves the member out (reported, not hidden).
	testserver.WantKeys(t, "lock", obj, without(lockKeys, "session"), append(lockExtra, "session"))
	wantString(t, obj, "name", "nightly-recon")
	wantString(t, obj, "owner", "w1")
	wantString(t, obj, "ttl", "30s")
	if !regexp.MustCompile(`^[1-9][0-9]*$`).Match(obj["token"]) {
		t.Errorf("token = %s, want a positive JSON integer", obj["token"])
	}
	acquired := wantTimestamp(t, obj, "acquired_at")
	expires := wantTimestamp(t, obj, "expires_at")
	if acquired.Before(before) || acquired.After(time.Now().Add(time.Second)) {
		t.Errorf("acquired_at %v is not now", acquired)
	}
	if d := expires.Sub(acquired); d < 29*time.Second || d > 31*time.Second {
		t.Errorf("expires_at - acquired_at = %s, want about 30s", d)
	}
	if string(obj["metadata"]) != `{"k":"v"}` {
		t.Errorf("metadata = %s, want {\"k\":\"v\"}", obj["metadata"])
	}

	l := testserver.DecodeAs[api.Lock](t, r)
	r = s.Do("GET", "/v1/locks/nightly-recon", "")
	got := testserver.WantJSON[api.Lock](t, r, http.StatusOK)
	testserver.WantKeys(t, "lock", testserver.RawObject(t, r.Body), without(lockKeys, "session"), append(lockExtra, "session"))
	if got.Token != l.Token || got.Owner != "w1" || got.TTL != "30s" || got.Metadata["k"] != "v" ||
		!time.Time(got.AcquiredAt).Equal(time.Time(l.AcquiredAt)) {
		t.Errorf("GET answered %+v, want the acquired lock %+v", got, l)
	}
}

func TestAcquire_EmptyBodyDefaultsOwnerToClientAddressAndTTLTo30s(t *testing.T) {
	s := newTestServer(t)
	r := s.Do("POST", "/v1/locks/defaults", "")
	testserver.WantStatus(t, r, http.StatusCreated)
	obj := testserver.RawObject(t, r.Body)
	wantString(t, obj, "owner", "127.0.0.1")
	wantString(t, obj, "ttl", "30s")
	if string(obj["metadata"]) != "{}" {
		t.Errorf("metadata = %s, want {}", obj["metadata"])
	}
	// Durations come back in Go syntax.
	if l := s.acquire("minute", `{"ttl":"1m"}`); l.TTL != "1m0s" {
		t.Errorf("ttl = %q, want %q", l.TTL, "1m0s")
	}
}

func TestAcquire_HeldLockAnswersLockHeldWithTheHolder(t *testing.T) {
	s := newTestServer(t)
	held := s.acquire("busy", `{"owner":"w1","metadata":{"job":"recon"}}`)
	for _, body := range []string{`{"owner":"w2"}`, `{"owner":"w2","wait":"0s"}`} {
		t.Run(body, func(t *testing.T) {
			r := s.Do("POST", "/v1/locks/busy", body)
			if r.Took > 5*time.Second {
				t.Errorf("answered after %s; without wait it must answer at once", r.Took)
			}
			p := testserver.WantProblem(t, r, http.StatusConflict, "lock_held")
			if p.Holder == nil || p.Holder.Name != "busy" || p.Holder.Owner != "w1" || p.Holder.Token != held.Token || p.Holder.Metadata["job"] != "recon" {
				t.Fatalf("holder = %+v, want w1's hold with token %d", p.Holder, held.Token)
			}
			holder := testserver.RawObject(t, testserver.RawObject(t, r.Body)["holder"])
			testserver.WantKeys(t, "holder", holder, without(lockKeys, "session"), append(lockExtra, "session"))
			wantTimestamp(t, holder, "expires_at")
		})
	}
	// The refused acquires changed nothing.
	if got := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/busy", ""), http.StatusOK); got.Token != held.Token {
		t.Fatalf("token %d after refused acquires, want %d", got.Token, held.Token)
	}
}

func TestAcquire_TokensGrowWithEveryAcquireOfAnyLock(t *testing.T) {
	s := newTestServer(t)
	var last int64
	for i, name := range []string{"a", "b", "a", "c", "b", "a"} {
		l := s.acquire(name, fmt.Sprintf(`{"owner":"w%d"}`, i))
		if l.Token <= last {
			t.Fatalf("acquire %d of %q: token %d, not above %d", i, name, l.Token, last)
		}
		last = l.Token
		s.release(name, l.Token)
	}
}

func TestAcquire_WaitThatRunsOutAnswersLockHeldWithTheHolder(t *testing.T) {
	s := newTestServer(t)
	held := s.acquire("slow", `{"owner":"w1"}`)
	r := s.Do("POST", "/v1/locks/slow", `{"owner":"w2","wait":"1s"}`)
	p := testserver.WantProblem(t, r, http.StatusConflict, "lock_held")
	if p.Holder == nil || p.Holder.Owner != "w1" || p.Holder.Token != held.Token {
		t.Fatalf("holder = %+v, want w1 with token %d", p.Holder, held.Token)
	}
	if r.Took < time.Second || r.Took > 10*time.Second {
		t.Errorf("answered after %s, want after the 1s wait", r.Took)
	}
	poll.Until(t, 10*time.Second, "out of the queue", func() bool { return s.stats().Waiters == 0 })
}

// acquireAsync runs an acquire in a goroutine; the answer arrives on the
// channel (a nil response means the request failed, reported by t.Error).
func (s *testServer) acquireAsync(ctx context.Context, name, body string) <-chan *testserver.Response {
	ch := make(chan *testserver.Response, 1)
	go func() {
		r, err := s.Send(ctx, "POST", "/v1/locks/"+name, body)
		if err != nil && ctx.Err() == nil {
			s.t.Errorf("acquire %s %s: %v", name, body, err)
		}
		ch <- r
	}()
	return ch
}

// answer waits for an async answer, at most testserver.RequestTimeout.
func answer(t *testing.T, ch <-chan *testserver.Response) *testserver.Response {
	t.Helper()
	select {
	case r := <-ch:
		if r == nil {
			t.Fatal("request failed")
		}
		return r
	case <-time.After(testserver.RequestTimeout):
		t.Fatal("no answer")
	}
	return nil
}

func TestAcquire_WaitersAreServedFirstComeFirstServed(t *testing.T) {
	s := newTestServer(t)
	first := s.acquire("queue", `{"owner":"w1"}`)
	w2 := s.acquireAsync(context.Background(), "queue", `{"owner":"w2","wait":"30s"}`)
	poll.Until(t, 10*time.Second, "w2 queued", func() bool { return s.waiters("queue") == 1 })
	w3 := s.acquireAsync(context.Background(), "queue", `{"owner":"w3","wait":"30s"}`)
	poll.Until(t, 10*time.Second, "w3 queued", func() bool { return s.waiters("queue") == 2 })

	// A direct acquire never overtakes the queue.
	testserver.WantProblem(t, s.Do("POST", "/v1/locks/queue", `{"owner":"w4"}`), http.StatusConflict, "lock_held")

	s.release("queue", first.Token)
	second := testserver.WantJSON[api.Lock](t, answer(t, w2), http.StatusCreated)
	if second.Owner != "w2" || second.Token <= first.Token {
		t.Fatalf("after w1 released: %+v, want w2 with a token above %d", second, first.Token)
	}
	select {
	case r := <-w3:
		t.Fatalf("w3 answered while w2 holds the lock: %d %s", r.Status, r.Body)
	default:
	}
	s.release("queue", second.Token)
	third := testserver.WantJSON[api.Lock](t, answer(t, w3), http.StatusCreated)
	if third.Owner != "w3" || third.Token <= second.Token {
		t.Fatalf("after w2 released: %+v, want w3 with a token above %d", third, second.Token)
	}
	if n := s.stats().Waiters; n != 0 {
		t.Fatalf("%d queue entries left after every waiter was served", n)
	}
}

func TestAcquire_LockDelayAfterRevokeAnswersLockHeldWithRetryAfter(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("delayed", `{"owner":"w1","lock_delay":"30s"}`)
	if l.LockDelay != "30s" {
		t.Errorf("lock_delay = %q, want 30s", l.LockDelay)
	}
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/delayed/revoke", `{"reason":"wedged"}`), http.StatusNoContent)

	r := s.Do("POST", "/v1/locks/delayed", `{"owner":"w2"}`)
	p := testserver.WantProblem(t, r, http.StatusConflict, "lock_held")
	if p.RetryAfter < 1 || p.RetryAfter > 30 {
		t.Errorf("retry_after = %d, want 1..30 seconds", p.RetryAfter)
	}
	if h := r.Header.Get("Retry-After"); h != strconv.FormatInt(p.RetryAfter, 10) {
		t.Errorf("Retry-After header %q, want %d like retry_after", h, p.RetryAfter)
	}

	// A clean release ends the hold without lock-delay.
	l = s.acquire("released", `{"owner":"w1","lock_delay":"30s"}`)
	s.release("released", l.Token)
	s.acquire("released", `{"owner":"w2"}`)
}

func TestAcquire_MinHoldKeepsTheLockAfterAnEarlyRelease(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("cron", `{"owner":"host-a","min_hold":"1m"}`)
	if l.MinHold != "1m0s" {
		t.Errorf("min_hold = %q, want 1m0s", l.MinHold)
	}
	s.release("cron", l.Token)

	r := s.Do("POST", "/v1/locks/cron", `{"owner":"host-b"}`)
	p := testserver.WantProblem(t, r, http.StatusConflict, "lock_held")
	if p.RetryAfter < 1 || p.RetryAfter > 60 {
		t.Errorf("retry_after = %d, want 1..60 seconds", p.RetryAfter)
	}
	if h := r.Header.Get("Retry-After"); h != strconv.FormatInt(p.RetryAfter, 10) {
		t.Errorf("Retry-After header %q, want %d like retry_after", h, p.RetryAfter)
	}
	end := time.Time(l.AcquiredAt).Add(time.Minute)
	g := testserver.WantProblem(t, s.Do("GET", "/v1/locks/cron", ""), http.StatusNotFound, "not_held")
	if g.DelayedUntil == nil || !time.Time(*g.DelayedUntil).Equal(end) {
		t.Errorf("delayed_until = %v, want the window's end %s", g.DelayedUntil, end)
	}
	list := testserver.WantJSON[api.LockList](t, s.Do("GET", "/v1/locks?prefix=cr", ""), http.StatusOK)
	if len(list.Delayed) != 1 || list.Delayed[0].Cause != "released" {
		t.Errorf("delayed = %+v, want cron, released inside its window", list.Delayed)
	}
}

func TestRenew_ExtendsTheLockAndKeepsItsToken(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("renewed", `{"owner":"w1","ttl":"10s"}`)
	r := s.Do("POST", "/v1/locks/renewed/renew", fmt.Sprintf(`{"token":%d}`, l.Token))
	got := testserver.WantJSON[api.Lock](t, r, http.StatusOK)
	obj := testserver.RawObject(t, r.Body)
	testserver.WantKeys(t, "lock", obj, without(lockKeys, "session"), append(lockExtra, "session"))
	wantTimestamp(t, obj, "acquired_at")
	expires := wantTimestamp(t, obj, "expires_at")
	if got.Token != l.Token || got.Owner != "w1" || got.TTL != "10s" {
		t.Errorf("renew answered %+v, want token %d of w1 with ttl 10s", got, l.Token)
	}
	if d := time.Until(expires); d < 8*time.Second || d > 11*time.Second {
		t.Errorf("expires_at is %s from now, want about the 10s TTL", d)
	}
}

func TestReleaseAndRenew_StaleTokenNeverTouchesTheNewerHolder(t *testing.T) {
	s := newTestServer(t)
	old := s.acquire("shared", `{"owner":"w1"}`)
	s.release("shared", old.Token)
	cur := s.acquire("shared", `{"owner":"w2"}`)

	testserver.WantProblem(t, s.Do("DELETE", fmt.Sprintf("/v1/locks/shared?token=%d", old.Token), ""), http.StatusConflict, "token_mismatch")
	testserver.WantProblem(t, s.Do("POST", "/v1/locks/shared/renew", fmt.Sprintf(`{"token":%d}`, old.Token)), http.StatusConflict, "token_mismatch")
	testserver.WantProblem(t, s.Do("DELETE", fmt.Sprintf("/v1/locks/shared?token=%d", cur.Token+1000), ""), http.StatusConflict, "token_mismatch")

	got := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/shared", ""), http.StatusOK)
	if got.Token != cur.Token || got.Owner != "w2" {
		t.Fatalf("after stale release and renew the lock is %+v, want w2's token %d", got, cur.Token)
	}
}

func TestFreeLock_GetRenewReleaseAndRevokeAnswerNotHeld(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("gone", `{"owner":"w1"}`)
	s.release("gone", l.Token)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/locks/gone", ""},
		{"GET", "/v1/locks/never", ""},
		{"POST", "/v1/locks/gone/renew", fmt.Sprintf(`{"token":%d}`, l.Token)},
		{"DELETE", fmt.Sprintf("/v1/locks/gone?token=%d", l.Token), ""},
		{"POST", "/v1/locks/gone/revoke", `{"reason":"x"}`},
		{"POST", "/v1/locks/never/revoke", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			testserver.WantProblem(t, s.Do(tc.method, tc.path, tc.body), http.StatusNotFound, "not_held")
		})
	}
}

func TestRelease_EndsTheHoldAndIsAuditedAndItsLeaseServesTheNext(t *testing.T) {
	s := newTestServer(t)
	// The first audit record grants the history's retention lease, which
	// stays; and the released lock's own lease waits, keyless, for the
	// next acquire with its TTL (the engine's lease pool).
	warm := s.acquire("warmup", `{"owner":"w0"}`)
	s.release("warmup", warm.Token)
	leases := s.Leases()
	l := s.acquire("done", `{"owner":"w1"}`)
	if n := len(s.Leases()); n != len(leases) {
		t.Fatalf("acquire after a release: %d leases, want %d: the released lease is reused, not a new one granted", n, len(leases))
	}
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/locks/done?token=%d", l.Token), ""), http.StatusNoContent)
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/done", ""), http.StatusNotFound, "not_held")
	for id := range s.Leases() {
		if !leases[id] {
			t.Errorf("lease %x appeared: a released lock's lease must go back to the pool", id)
		}
	}
	evs := s.history("lock=done")
	if len(evs) != 2 || evs[0].Type != "released" || evs[0].Token != l.Token || evs[0].Owner != "w1" || evs[1].Type != "acquired" {
		t.Fatalf("history %+v, want released then acquired with token %d", evs, l.Token)
	}
}

func TestRevoke_EndsTheHoldAndIsAuditedAsRevoked(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("stuck", `{"owner":"w1"}`)
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/stuck/revoke", `{"reason":"holder wedged"}`), http.StatusNoContent)
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/stuck", ""), http.StatusNotFound, "not_held")
	evs := s.history("lock=stuck")
	if len(evs) != 2 || evs[0].Type != "revoked" || evs[0].Token != l.Token || evs[0].Detail != "holder wedged" {
		t.Fatalf("history %+v, want revoked with token %d and the reason", evs, l.Token)
	}
	// The old holder can no longer release.
	testserver.WantProblem(t, s.Do("DELETE", fmt.Sprintf("/v1/locks/stuck?token=%d", l.Token), ""), http.StatusNotFound, "not_held")
	// Revoke with no body works too (every field is optional).
	s.acquire("stuck", `{"owner":"w2"}`)
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/stuck/revoke", ""), http.StatusNoContent)
}

func TestAcquire_ClientThatDisconnectsWhileWaitingLeavesNoTrace(t *testing.T) {
	s := newTestServer(t)
	held := s.acquire("contended", `{"owner":"holder"}`)
	// This node's waiter lease is shared by all its waiters and outlives
	// them; a first wait creates it, so it is not counted as a leftover.
	testserver.WantProblem(t, s.Do("POST", "/v1/locks/contended", `{"owner":"warmup","wait":"100ms"}`), http.StatusConflict, "lock_held")
	poll.Until(t, 10*time.Second, "out of the queue", func() bool { return s.stats().Waiters == 0 })
	leases := s.Leases()
	keys := s.Keys()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := s.acquireAsync(ctx, "contended", `{"owner":"leaver","wait":"30s"}`)
	poll.Until(t, 10*time.Second, "the waiter queued", func() bool { return s.waiters("contended") == 1 })
	cancel()
	select {
	case r := <-ch:
		if r != nil {
			t.Fatalf("the cancelled request got an answer: %d %s", r.Status, r.Body)
		}
	case <-time.After(testserver.RequestTimeout):
		t.Fatal("the cancelled request did not return")
	}

	poll.Until(t, 10*time.Second, "the queue entry gone", func() bool { return s.stats().Waiters == 0 })
	poll.Until(t, 10*time.Second, "the waiter's lease gone", func() bool {
		for id := range s.Leases() {
			if !leases[id] {
				return false
			}
		}
		return true
	})
	for k := range s.Keys() {
		if !keys[k] {
			t.Errorf("key %s appeared", k)
		}
	}
	got := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/contended", ""), http.StatusOK)
	if got.Token != held.Token {
		t.Fatalf("lock token %d, want the holder's %d", got.Token, held.Token)
	}
	// With no waiter left, the next acquire after the release gets the
	// lock at once: no ghost in the queue.
	s.release("contended", held.Token)
	s.acquire("contended", `{"owner":"next"}`)
	for _, ev := range s.history("lock=contended") {
		if ev.Owner == "leaver" {
			t.Errorf("the departed waiter left an event: %+v", ev)
		}
	}
}

func TestLockDelay_GetListAndClearShowTheDelay(t *testing.T) {
	s := newTestServer(t)
	s.acquire("late", `{"owner":"w1","lock_delay":"1h"}`)
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/late/revoke", `{"reason":"test"}`), http.StatusNoContent)

	r := s.Do("GET", "/v1/locks/late", "")
	p := testserver.WantProblem(t, r, http.StatusNotFound, "not_held")
	if p.DelayedUntil == nil || p.RetryAfter < 3500 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("problem %+v (Retry-After %q), want delayed_until and about 3600 s of retry_after", p, r.Header.Get("Retry-After"))
	}
	list := testserver.WantJSON[api.LockList](t, s.Do("GET", "/v1/locks", ""), http.StatusOK)
	if len(list.Delayed) != 1 || list.Delayed[0].Name != "late" || list.Delayed[0].Cause != "revoked" {
		t.Fatalf("list's delays %+v, want late's, caused by revoked", list.Delayed)
	}
	testserver.WantStatus(t, s.Do("DELETE", "/v1/locks/late/delay?reason=mistake", ""), http.StatusNoContent)
	testserver.WantProblem(t, s.Do("DELETE", "/v1/locks/late/delay", ""), http.StatusNotFound, "not_delayed")
	s.acquire("late", `{"owner":"w2"}`)
}

// A wait longer than 5m, over HTTP: an acquire with keep_place whose wait
// runs out answers 409 with place_kept, the lock released meanwhile is
// granted to the session's place, and the session's next acquire answers
// 200 with it.
func TestAcquire_KeepPlaceKeepsTheSessionsPlaceBetweenRequests(t *testing.T) {
	s := newTestServer(t)
	held := s.acquire("long", `{"owner":"holder"}`)
	sess := s.createSession(`{"owner":"w"}`)
	body := fmt.Sprintf(`{"session":%q,"wait":"100ms","keep_place":true}`, sess.ID)
	p := testserver.WantProblem(t, s.Do("POST", "/v1/locks/long", body), http.StatusConflict, "lock_held")
	if !p.PlaceKept || p.Holder == nil || p.Holder.Owner != "holder" {
		t.Fatalf("problem %+v, want the holder and place_kept", p)
	}
	if n := s.waiters("long"); n != 1 {
		t.Fatalf("%d queued after the wait ran out, want the kept place", n)
	}
	s.release("long", held.Token)
	l := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/long", body), http.StatusOK)
	if l.Session != sess.ID || l.Token <= held.Token {
		t.Fatalf("the session's next acquire got %+v, want the lock granted to its place", l)
	}
}
