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

// Member names of docs/API.md's Hold of a read/write lock.
var rwHoldKeys = []string{"name", "mode", "owner", "token", "ttl", "acquired_at", "expires_at", "metadata"}

func (s *testServer) rwHold(t *testing.T, name, body string, status int) api.Hold {
	t.Helper()
	return testserver.WantJSON[api.Hold](t, s.Do("POST", "/v1/rwlocks/"+name, body), status)
}

// TestRWLock_ReadersShareWritersWaitInLineAndFenceWrites: two readers
// share; a writer is refused with both named, then waits in line; a
// reader behind it waits too; the writer's token fences a write that
// names the rwlock, and a reader's does not.
func TestRWLock_ReadersShareWritersWaitInLineAndFenceWrites(t *testing.T) {
	s := newTestServer(t)
	r := s.Do("POST", "/v1/rwlocks/cat", `{"mode":"read","owner":"r1","ttl":"15s"}`)
	testserver.WantStatus(t, r, http.StatusCreated)
	testserver.WantKeys(t, "hold", testserver.RawObject(t, r.Body), rwHoldKeys, []string{"session"})
	r1 := testserver.DecodeAs[api.Hold](t, r)
	r2 := s.rwHold(t, "cat", `{"mode":"read","owner":"r2"}`, http.StatusCreated)
	if r1.Mode != "read" || r2.Token <= r1.Token {
		t.Fatalf("read holds %+v, %+v", r1, r2)
	}
	p := testserver.WantProblem(t, s.Do("POST", "/v1/rwlocks/cat", `{"mode":"write","owner":"w"}`), http.StatusConflict, "lock_held")
	if len(p.Holders) != 2 || p.Holders[0].Mode != "read" || p.Holder != nil {
		t.Fatalf("lock_held %+v; want the two readers", p)
	}
	writer := make(chan *testserver.Response, 1)
	go func() { writer <- s.Do("POST", "/v1/rwlocks/cat", `{"mode":"write","owner":"w","wait":"30s"}`) }()
	waitersAre(t, s, "cat", 1)
	reader := make(chan *testserver.Response, 1)
	go func() { reader <- s.Do("POST", "/v1/rwlocks/cat", `{"mode":"read","owner":"r3","wait":"30s"}`) }()
	waitersAre(t, s, "cat", 2)
	got := testserver.WantJSON[api.RWLock](t, s.Do("GET", "/v1/rwlocks/cat", ""), http.StatusOK)
	if got.Mode != "read" || len(got.Holders) != 2 || got.Waiters[0].Mode != "write" || got.Waiters[1].Mode != "read" {
		t.Fatalf("rwlock %+v", got)
	}
	for _, h := range []api.Hold{r1, r2} {
		testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/rwlocks/cat?token=%d", h.Token), ""), http.StatusNoContent)
	}
	w := testserver.WantJSON[api.Hold](t, <-writer, http.StatusCreated)
	if w.Mode != "write" || w.Token <= r2.Token {
		t.Fatalf("write hold %+v", w)
	}
	testserver.WantStatus(t, s.Do("PUT", "/v1/fenced/catalog", fmt.Sprintf(`{"token":%d,"value":1,"rwlock":"cat"}`, w.Token)), http.StatusOK)
	testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/catalog", fmt.Sprintf(`{"token":%d,"value":1,"rwlock":"cat"}`, r2.Token)), http.StatusConflict, "not_holder")
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/rwlocks/cat?token=%d", w.Token), ""), http.StatusNoContent)
	r3 := testserver.WantJSON[api.Hold](t, <-reader, http.StatusCreated)
	testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/catalog", fmt.Sprintf(`{"token":%d,"value":2,"rwlock":"cat"}`, r3.Token)), http.StatusConflict, "not_holder")
	renewed := testserver.WantJSON[api.Hold](t, s.Do("POST", "/v1/rwlocks/cat/renew", fmt.Sprintf(`{"token":%d}`, r3.Token)), http.StatusOK)
	if renewed.Token != r3.Token || renewed.Mode != "read" {
		t.Fatalf("renew answered %+v", renewed)
	}
	testserver.WantStatus(t, s.Do("POST", "/v1/rwlocks/cat/revoke", fmt.Sprintf(`{"token":%d,"reason":"x"}`, r3.Token)), http.StatusNoContent)
	testserver.WantProblem(t, s.Do("GET", "/v1/rwlocks/cat", ""), http.StatusNotFound, "not_held")
	if evs := s.history("kind=rwlock&name=cat&type=acquired"); len(evs) != 4 || evs[0].Mode != "read" || evs[1].Mode != "write" {
		t.Fatalf("acquired events %+v", evs)
	}
}

func waitersAre(t *testing.T, s *testServer, name string, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the acquires wait in line", func() bool {
		r := s.Do("GET", "/v1/rwlocks/"+name, "")
		return r.Status == http.StatusOK && len(testserver.DecodeAs[api.RWLock](t, r).Waiters) == n
	})
}

// TestRWLock_WriteInTheSessionThatHoldsItIsIdempotent.
func TestRWLock_WriteInTheSessionThatHoldsItIsIdempotent(t *testing.T) {
	s := newTestServer(t)
	sess := s.createSession(`{"owner":"w"}`)
	first := s.rwHold(t, "cfg", `{"mode":"write","session":"`+sess.ID+`"}`, http.StatusCreated)
	again := s.rwHold(t, "cfg", `{"mode":"write","session":"`+sess.ID+`"}`, http.StatusOK)
	if again.Token != first.Token {
		t.Fatalf("again %+v, first %+v", again, first)
	}
	got := testserver.WantJSON[api.Session](t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusOK)
	if len(got.RWLocks) != 1 || got.RWLocks[0] != "cfg" || len(got.Locks) != 0 {
		t.Fatalf("session %+v", got)
	}
	list := testserver.WantJSON[api.RWLockList](t, s.Do("GET", "/v1/rwlocks", ""), http.StatusOK)
	if len(list.RWLocks) != 1 || list.RWLocks[0].Mode != "write" {
		t.Fatalf("list %+v", list)
	}
}

// TestRWLock_BadInputIsRefusedNamingTheFieldAndWritesNothing.
func TestRWLock_BadInputIsRefusedNamingTheFieldAndWritesNothing(t *testing.T) {
	s := newTestServer(t)
	for _, c := range []struct {
		path, body, field string
	}{
		{"/v1/rwlocks/a%20b", `{"mode":"read"}`, "name"},
		{"/v1/rwlocks/ok", `{}`, "mode"},
		{"/v1/rwlocks/ok", `{"mode":"exclusive"}`, "mode"},
		{"/v1/rwlocks/ok", `{"mode":1}`, "mode"},
		{"/v1/rwlocks/ok", `{"mode":"read","owner":""}`, "owner"},
		{"/v1/rwlocks/ok", `{"mode":"read","ttl":"1s"}`, "ttl"},
		{"/v1/rwlocks/ok", `{"mode":"write","wait":"10m"}`, "wait"},
		{"/v1/rwlocks/ok", `{"mode":"write","lock_delay":"1s"}`, "lock_delay"},
		{"/v1/rwlocks/ok", `{"mode":"read","min_hold":"soon"}`, "min_hold"},
		{"/v1/rwlocks/ok", `{"mode":"write","limit":2}`, "limit"},
		{"/v1/rwlocks/ok/renew", `{}`, "token"},
		{"/v1/rwlocks/ok/revoke", `{}`, "token"},
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
	testserver.WantProblem(t, s.Do("DELETE", "/v1/rwlocks/ok", ""), http.StatusBadRequest, "invalid_request")
	p := testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/r", `{"token":1,"value":1,"rwlock":"x","lock":"x"}`), http.StatusBadRequest, "invalid_request")
	if p.Field != "rwlock" {
		t.Fatalf("lock and rwlock: field %q", p.Field)
	}
}
