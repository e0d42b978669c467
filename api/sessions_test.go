package api_test

import (
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

func TestSession_CreateGetRenewAndDelete(t *testing.T) {
	s := newTestServer(t)
	r := s.Do("POST", "/v1/sessions", `{"ttl":"30s","owner":"worker-1"}`)
	testserver.WantStatus(t, r, http.StatusCreated)
	obj := testserver.RawObject(t, r.Body)
	testserver.WantKeys(t, "session", obj, sessionKeys, []string{"created_at"})
	wantString(t, obj, "owner", "worker-1")
	wantString(t, obj, "ttl", "30s")
	if string(obj["locks"]) != "[]" {
		t.Errorf("locks = %s, want []", obj["locks"])
	}
	if exp := wantTimestamp(t, obj, "expires_at"); time.Until(exp) < 28*time.Second || time.Until(exp) > 31*time.Second {
		t.Errorf("expires_at %v is not about 30s from now", exp)
	}
	sess := testserver.DecodeAs[api.Session](t, r)
	// id is the etcd lease ID in hex.
	if !regexp.MustCompile(`^[0-9a-f]{1,16}$`).MatchString(sess.ID) {
		t.Errorf("id = %q, want a lease ID in hex", sess.ID)
	}

	r = s.Do("GET", "/v1/sessions/"+sess.ID, "")
	got := testserver.WantJSON[api.Session](t, r, http.StatusOK)
	testserver.WantKeys(t, "session", testserver.RawObject(t, r.Body), sessionKeys, []string{"created_at"})
	if got.ID != sess.ID || got.Owner != "worker-1" || got.TTL != "30s" {
		t.Errorf("GET answered %+v, want %+v", got, sess)
	}

	r = s.Do("POST", "/v1/sessions/"+sess.ID+"/renew", "")
	renewed := testserver.WantJSON[api.Session](t, r, http.StatusOK)
	obj = testserver.RawObject(t, r.Body)
	testserver.WantKeys(t, "session", obj, sessionKeys, []string{"created_at"})
	// etcd reports a lease's remaining TTL in whole seconds, rounded down.
	if d := time.Until(wantTimestamp(t, obj, "expires_at")); renewed.ID != sess.ID || d < 28*time.Second || d > 31*time.Second {
		t.Errorf("renew answered %+v expiring in %s, want the session with a fresh 30s", renewed, d)
	}

	testserver.WantStatus(t, s.Do("DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusNoContent)
	testserver.WantProblem(t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusNotFound, "session_not_found")
	testserver.WantProblem(t, s.Do("DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusNotFound, "session_not_found")
}

func TestSession_AcquireInASessionIsIdempotentAndListed(t *testing.T) {
	s := newTestServer(t)
	sess := s.createSession(`{"ttl":"20s","owner":"worker-1"}`)
	body := fmt.Sprintf(`{"owner":"worker-1","session":%q}`, sess.ID)

	r := s.Do("POST", "/v1/locks/in-session", body)
	testserver.WantStatus(t, r, http.StatusCreated)
	obj := testserver.RawObject(t, r.Body)
	testserver.WantKeys(t, "lock", obj, lockKeys, lockExtra)
	wantString(t, obj, "session", sess.ID)
	wantString(t, obj, "ttl", "20s")
	wantTimestamp(t, obj, "acquired_at")
	wantTimestamp(t, obj, "expires_at")
	first := testserver.DecodeAs[api.Lock](t, r)

	// Again in the same session: 200 and the same hold.
	again := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/in-session", body), http.StatusOK)
	if again.Token != first.Token || again.Session != sess.ID {
		t.Fatalf("idempotent acquire answered %+v, want token %d", again, first.Token)
	}
	// Another session does not share it.
	other := s.createSession(`{"owner":"worker-2"}`)
	p := testserver.WantProblem(t, s.Do("POST", "/v1/locks/in-session", fmt.Sprintf(`{"session":%q}`, other.ID)), http.StatusConflict, "lock_held")
	if p.Holder == nil || p.Holder.Session != sess.ID {
		t.Fatalf("holder %+v, want the first session's hold", p.Holder)
	}

	s.acquire("also-in-session", body)
	got := testserver.WantJSON[api.Session](t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusOK)
	if fmt.Sprint(got.Locks) != "[also-in-session in-session]" {
		t.Fatalf("session locks %v, want both, sorted", got.Locks)
	}
	// Renewing the lock renews the session; the token stays.
	renewed := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/in-session/renew", fmt.Sprintf(`{"token":%d}`, first.Token)), http.StatusOK)
	if renewed.Token != first.Token || renewed.Session != sess.ID {
		t.Fatalf("renew answered %+v", renewed)
	}
	// A session lock can be released on its own; the session stays.
	s.release("in-session", first.Token)
	got = testserver.WantJSON[api.Session](t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusOK)
	if fmt.Sprint(got.Locks) != "[also-in-session]" {
		t.Fatalf("session locks after a release %v, want [also-in-session]", got.Locks)
	}
}

func TestSession_DeleteReleasesEveryLockAuditedAsReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	s := newTestServer(t)
	sess := s.createSession(`{"owner":"worker-1"}`)
	body := fmt.Sprintf(`{"owner":"worker-1","session":%q}`, sess.ID)
	a := s.acquire("s-a", body)
	b := s.acquire("s-b", body)
	testserver.WantStatus(t, s.Do("DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusNoContent)
	for _, l := range []api.Lock{a, b} {
		testserver.WantProblem(t, s.Do("GET", "/v1/locks/"+l.Name, ""), http.StatusNotFound, "not_held")
		evs := s.history("lock=" + l.Name)
		if len(evs) != 2 || evs[0].Type != "released" || evs[0].Token != l.Token || evs[0].Session != sess.ID {
			t.Errorf("history of %s: %+v, want one released with token %d in session %s", l.Name, evs, l.Token, sess.ID)
		}
	}
	// The expiry recorder must not record these ends a second time. It
	// handles etcd's changes in order, so once it has recorded a later
	// expiry (a sentinel lock left to run out its shortest TTL), it has
	// seen the session's end.
	s.acquire("sentinel", `{"owner":"sentinel","ttl":"2s"}`)
	poll.Until(t, 10*time.Second, "the sentinel recorded", func() bool {
		evs := s.history("lock=sentinel")
		return len(evs) == 2 && evs[0].Type == "expired"
	})
	for _, ev := range s.history("") {
		if ev.Lock != "sentinel" && ev.Type != "acquired" && ev.Type != "released" {
			t.Errorf("unexpected event %+v", ev)
		}
	}
}

func TestSession_UnknownSessionAnswersSessionNotFound(t *testing.T) {
	s := newTestServer(t)
	// A live lease that is no session (a lock's own lease, the history's
	// retention lease) must not pass for one either.
	s.acquire("own-lease", `{"owner":"w1"}`)
	ids := []string{"694d2279b4919071", "1", "zz", "-1", "0"}
	for id := range s.Leases() {
		ids = append(ids, strconv.FormatInt(int64(id), 16))
	}
	for _, id := range ids {
		for _, tc := range []struct{ method, path, body string }{
			{"GET", "/v1/sessions/" + id, ""},
			{"POST", "/v1/sessions/" + id + "/renew", ""},
			{"DELETE", "/v1/sessions/" + id, ""},
		} {
			t.Run(tc.method+" "+tc.path, func(t *testing.T) {
				testserver.WantProblem(t, s.Do(tc.method, tc.path, tc.body), http.StatusNotFound, "session_not_found")
			})
		}
	}
	t.Run("acquire with an unknown session", func(t *testing.T) {
		testserver.WantProblem(t, s.Do("POST", "/v1/locks/lonely", `{"session":"694d2279b4919071"}`), http.StatusNotFound, "session_not_found")
		testserver.WantProblem(t, s.Do("GET", "/v1/locks/lonely", ""), http.StatusNotFound, "not_held")
	})
}

func TestSession_ExpiredSessionAnswersSessionNotFoundAndEndsItsLocks(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	s := newTestServer(t)
	sess := s.createSession(`{"owner":"worker-1","ttl":"2s"}`)
	l := s.acquire("short-lived", fmt.Sprintf(`{"owner":"worker-1","session":%q}`, sess.ID))

	poll.Until(t, 15*time.Second, "expired", func() bool {
		return s.Do("GET", "/v1/sessions/"+sess.ID, "").Status == http.StatusNotFound
	})
	testserver.WantProblem(t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusNotFound, "session_not_found")
	testserver.WantProblem(t, s.Do("POST", "/v1/sessions/"+sess.ID+"/renew", ""), http.StatusNotFound, "session_not_found")
	testserver.WantProblem(t, s.Do("DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusNotFound, "session_not_found")
	testserver.WantProblem(t, s.Do("POST", "/v1/locks/other", fmt.Sprintf(`{"session":%q}`, sess.ID)), http.StatusNotFound, "session_not_found")
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/short-lived", ""), http.StatusNotFound, "not_held")

	var ended api.Event
	poll.Until(t, 10*time.Second, "recorded as session_expired", func() bool {
		evs := s.history("lock=short-lived")
		if len(evs) == 0 || evs[0].Type == "acquired" {
			return false
		}
		ended = evs[0]
		return true
	})
	if ended.Type != "session_expired" || ended.Token != l.Token || ended.Session != sess.ID {
		t.Fatalf("end event %+v, want session_expired with token %d", ended, l.Token)
	}
	if evs := s.history("lock=short-lived"); len(evs) != 2 {
		t.Fatalf("history %+v, want acquired and session_expired once each", evs)
	}
}

// TestSession_BoundToAStream: a stream-bound session says so, its stream
// answers attached then heartbeats, and it ends once the stream has been
// closed for its grace.
func TestSession_BoundToAStream(t *testing.T) {
	s := newTestServer(t)
	sess := testserver.WantJSON[api.Session](t, s.Do("POST", "/v1/sessions", `{"owner":"w1","bind":"stream","grace":"600ms"}`), http.StatusCreated)
	if sess.Bind != "stream" || sess.Grace != "600ms" {
		t.Fatalf("session %+v, want bound to a stream with grace 600ms", sess)
	}
	st := s.openStreamAt(t, "/v1/sessions/"+sess.ID+"/stream", "")
	for _, want := range []string{"attached", "heartbeat"} {
		select {
		case m := <-st.msgs:
			if m.Event != want {
				t.Fatalf("stream message %+v, want %s", m, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s message", want)
		}
	}
	testserver.WantJSON[api.Session](t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusOK)
	st.cancel()
	poll.Until(t, 10*time.Second, "the session ends after its grace", func() bool {
		return s.Do("GET", "/v1/sessions/"+sess.ID, "").Status == http.StatusNotFound
	})
	testserver.WantProblem(t, s.Do("GET", "/v1/sessions/"+sess.ID+"/stream", ""), http.StatusNotFound, "session_not_found")
}

func TestSession_BindBadInputIsRefusedNamingTheField(t *testing.T) {
	s := newTestServer(t)
	ttl := s.createSession(`{"ttl":"30s"}`)
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/v1/sessions", `{"bind":"tcp"}`, "bind"},
		{"POST", "/v1/sessions", `{"bind":"stream","grace":"100ms"}`, "grace"},
		{"POST", "/v1/sessions", `{"bind":"stream","grace":"2m"}`, "grace"},
		{"POST", "/v1/sessions", `{"bind":"stream","ttl":"30s"}`, "ttl"},
		{"POST", "/v1/sessions", `{"grace":"2s"}`, "grace"},
		{"GET", "/v1/sessions/" + ttl.ID + "/stream", "", "session"},
	} {
		before := s.Keys()
		p := testserver.WantProblem(t, s.Do(c.method, c.path, c.body), http.StatusBadRequest, "invalid_request")
		if p.Field != c.field {
			t.Errorf("%s %s %s: field %q, want %q (%s)", c.method, c.path, c.body, p.Field, c.field, p.Detail)
		}
		if after := s.Keys(); len(after) != len(before) {
			t.Errorf("%s %s %s wrote to etcd", c.method, c.path, c.body)
		}
	}
}
