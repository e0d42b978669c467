package api_test

import (
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testserver"
)

// Member names of docs/API.md's Permit.
var permitKeys = []string{"name", "owner", "token", "limit", "ttl", "acquired_at", "expires_at", "metadata"}

func (s *testServer) permit(t *testing.T, name, body string) api.Hold {
	t.Helper()
	return testserver.WantJSON[api.Hold](t, s.Do("POST", "/v1/semaphores/"+name, body), http.StatusCreated)
}

// TestSemaphore_GrantsTheLimitThenRefusesWithTheHolders: two permits of a
// semaphore of 2, each with its own token; the third is refused with the
// holders; another limit is refused with the semaphore's; a waiter gets
// the permit a release frees.
func TestSemaphore_GrantsTheLimitThenRefusesWithTheHolders(t *testing.T) {
	s := newTestServer(t)
	r := s.Do("POST", "/v1/semaphores/jobs", `{"limit":2,"owner":"w1","ttl":"15s"}`)
	testserver.WantStatus(t, r, http.StatusCreated)
	testserver.WantKeys(t, "permit", testserver.RawObject(t, r.Body), permitKeys, []string{"session"})
	p1 := testserver.DecodeAs[api.Hold](t, r)
	p2 := s.permit(t, "jobs", `{"limit":2,"owner":"w2"}`)
	if p1.Name != "jobs" || p1.Limit != 2 || p1.TTL != "15s" || p2.Token <= p1.Token {
		t.Fatalf("permits %+v, %+v", p1, p2)
	}
	full := testserver.WantProblem(t, s.Do("POST", "/v1/semaphores/jobs", `{"limit":2,"owner":"w3"}`), http.StatusConflict, "semaphore_full")
	if len(full.Holders) != 2 || full.Holders[0].Token != p1.Token || full.Holders[1].Owner != "w2" || full.Holder != nil {
		t.Fatalf("semaphore_full %+v; want both holders", full)
	}
	mismatch := testserver.WantProblem(t, s.Do("POST", "/v1/semaphores/jobs", `{"limit":5,"owner":"w3"}`), http.StatusConflict, "limit_mismatch")
	if mismatch.Limit != 2 {
		t.Fatalf("limit_mismatch %+v; want limit 2", mismatch)
	}
	waiting := make(chan *testserver.Response, 1)
	go func() { waiting <- s.Do("POST", "/v1/semaphores/jobs", `{"limit":2,"owner":"w3","wait":"30s"}`) }()
	poll.Until(t, 10*time.Second, "w3 waits in line", func() bool {
		r := s.Do("GET", "/v1/semaphores/jobs", "")
		return r.Status == http.StatusOK && len(testserver.DecodeAs[api.Semaphore](t, r).Waiters) == 1
	})
	got := testserver.WantJSON[api.Semaphore](t, s.Do("GET", "/v1/semaphores/jobs", ""), http.StatusOK)
	if got.Limit != 2 || len(got.Holders) != 2 || got.Waiters[0].Owner != "w3" || got.Waiters[0].Position != 1 {
		t.Fatalf("semaphore %+v", got)
	}
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/semaphores/jobs?token=%d", p1.Token), ""), http.StatusNoContent)
	p3 := testserver.WantJSON[api.Hold](t, <-waiting, http.StatusCreated)
	if p3.Owner != "w3" || p3.Token <= p2.Token {
		t.Fatalf("the waiter's permit %+v", p3)
	}
	testserver.WantProblem(t, s.Do("DELETE", fmt.Sprintf("/v1/semaphores/jobs?token=%d", p1.Token), ""), http.StatusNotFound, "not_held")
	renewed := testserver.WantJSON[api.Hold](t, s.Do("POST", "/v1/semaphores/jobs/renew", fmt.Sprintf(`{"token":%d}`, p3.Token)), http.StatusOK)
	if renewed.Token != p3.Token || renewed.Limit != 2 {
		t.Fatalf("renew answered %+v", renewed)
	}
	testserver.WantStatus(t, s.Do("POST", "/v1/semaphores/jobs/revoke", fmt.Sprintf(`{"token":%d,"reason":"wedged"}`, p2.Token)), http.StatusNoContent)
	evs := s.history("kind=semaphore&name=jobs&type=revoked")
	if len(evs) != 1 || evs[0].Token != p2.Token || evs[0].Detail != "wedged" || evs[0].Kind != "semaphore" {
		t.Fatalf("revoked events %+v", evs)
	}
	if acq := s.history("kind=semaphore&name=jobs&type=acquired"); len(acq) != 3 || acq[0].Limit != 2 {
		t.Fatalf("acquired events %+v; want 3 with the limit", acq)
	}
}

// TestSemaphore_BadInputIsRefusedNamingTheFieldAndWritesNothing.
func TestSemaphore_BadInputIsRefusedNamingTheFieldAndWritesNothing(t *testing.T) {
	s := newTestServer(t)
	for _, c := range []struct {
		path, body, field string
	}{
		{"/v1/semaphores/a%20b", `{"limit":2}`, "name"},
		{"/v1/semaphores/ok", `{}`, "limit"},
		{"/v1/semaphores/ok", `{"limit":0}`, "limit"},
		{"/v1/semaphores/ok", `{"limit":10001}`, "limit"},
		{"/v1/semaphores/ok", `{"limit":"3"}`, "limit"},
		{"/v1/semaphores/ok", `{"limit":2,"owner":""}`, "owner"},
		{"/v1/semaphores/ok", `{"limit":2,"ttl":"1s"}`, "ttl"},
		{"/v1/semaphores/ok", `{"limit":2,"wait":"10m"}`, "wait"},
		{"/v1/semaphores/ok", `{"limit":2,"session":""}`, "session"},
		{"/v1/semaphores/ok", `{"limit":2,"lock_delay":"5s"}`, "lock_delay"},
		{"/v1/semaphores/ok", `{"limit":2,"min_hold":"-5s"}`, "min_hold"},
		{"/v1/semaphores/ok", `{"limit":2,"min_hold":"48h"}`, "min_hold"},
		{"/v1/semaphores/ok/renew", `{}`, "token"},
		{"/v1/semaphores/ok/revoke", `{"reason":"x"}`, "token"},
	} {
		before := s.Keys()
		p := testserver.WantProblem(t, s.Do("POST", c.path, c.body), http.StatusBadRequest, "invalid_request")
		if p.Field != c.field {
			t.Errorf("POST %s %s: field %q, want %q (%s)", c.path, c.body, p.Field, c.field, p.Detail)
		}
		if after := s.Keys(); !maps.Equal(before, after) {
			t.Errorf("POST %s %s wrote to etcd", c.path, c.body)
		}
	}
	testserver.WantProblem(t, s.Do("DELETE", "/v1/semaphores/ok", ""), http.StatusBadRequest, "invalid_request")
	testserver.WantProblem(t, s.Do("GET", "/v1/semaphores/ok", ""), http.StatusNotFound, "not_held")
}

// TestSemaphores_AreListedAPageAtATimeApartFromLocks.
func TestSemaphore_PermitWithMinHoldKeepsItsSeat(t *testing.T) {
	s := newTestServer(t)
	r := s.Do("POST", "/v1/semaphores/jobs", `{"limit":1,"owner":"a","min_hold":"1m"}`)
	h := testserver.WantJSON[api.Hold](t, r, http.StatusCreated)
	if h.MinHold != "1m0s" {
		t.Errorf("min_hold = %q, want 1m0s", h.MinHold)
	}
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/semaphores/jobs?token=%d", h.Token), ""), http.StatusNoContent)
	p := testserver.WantProblem(t, s.Do("POST", "/v1/semaphores/jobs", `{"limit":1,"owner":"b"}`), http.StatusConflict, "semaphore_full")
	if p.RetryAfter < 1 || p.RetryAfter > 60 {
		t.Errorf("retry_after = %d, want 1..60 seconds: the window's rest", p.RetryAfter)
	}
}

func TestSemaphores_AreListedAPageAtATimeApartFromLocks(t *testing.T) {
	s := newTestServer(t)
	s.acquire("a", `{"owner":"w"}`)
	for _, n := range []string{"a", "b", "c"} {
		s.permit(t, n, `{"limit":3,"owner":"x"}`)
	}
	s.permit(t, "b", `{"limit":3,"owner":"y"}`)
	if locks := testserver.WantJSON[api.LockList](t, s.Do("GET", "/v1/locks", ""), http.StatusOK); len(locks.Locks) != 1 {
		t.Fatalf("locks %+v", locks)
	}
	page := testserver.WantJSON[api.SemaphoreList](t, s.Do("GET", "/v1/semaphores?limit=2", ""), http.StatusOK)
	if len(page.Semaphores) != 2 || page.NextCursor == "" || len(page.Semaphores[1].Holders) != 2 || page.Semaphores[1].Limit != 3 {
		t.Fatalf("first page %+v", page)
	}
	rest := testserver.WantJSON[api.SemaphoreList](t, s.Do("GET", "/v1/semaphores?limit=2&cursor="+page.NextCursor, ""), http.StatusOK)
	if len(rest.Semaphores) != 1 || rest.Semaphores[0].Name != "c" || rest.NextCursor != "" {
		t.Fatalf("second page %+v", rest)
	}
	ss := testserver.WantJSON[api.SemaphoreList](t, s.Do("GET", "/v1/semaphores?prefix=b", ""), http.StatusOK)
	if len(ss.Semaphores) != 1 || ss.Semaphores[0].Name != "b" {
		t.Fatalf("prefix b %+v", ss)
	}
}
