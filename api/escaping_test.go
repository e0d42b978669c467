package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testserver"
)

// A client may percent-encode any character of a name: the dashboard's
// encodeURIComponent turns ':' into %3A. Found by FuzzHTTP: echo handed
// such a parameter over still encoded, and "a:b" failed as a name.
func TestPathParams_PercentEncodedNamesMeanTheSameLock(t *testing.T) {
	s := newTestServer(t)
	l := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/a%3Ab", `{"owner":"w1"}`), http.StatusCreated)
	if l.Name != "a:b" {
		t.Fatalf("acquired %q, want a:b", l.Name)
	}
	if got := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/%61%3A%62", ""), http.StatusOK); got.Token != l.Token {
		t.Fatalf("GET by another spelling: token %d, want %d", got.Token, l.Token)
	}
	testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/r%3A1", `{"token":1,"value":1}`), http.StatusOK)
	if got := testserver.WantJSON[api.FencedValue](t, s.Do("GET", "/v1/fenced/r:1", ""), http.StatusOK); got.Resource != "r:1" {
		t.Fatalf("fenced resource %q, want r:1", got.Resource)
	}
	// An encoded '/' is part of the name, and no name may hold one: it
	// must not reach another route (/v1/locks/x/renew) either.
	if p := testserver.WantProblem(t, s.Do("POST", "/v1/locks/x%2Frenew", `{}`), http.StatusBadRequest, "invalid_request"); p.Field != "name" {
		t.Fatalf("field %q, want name", p.Field)
	}
	sess := s.createSession(`{"owner":"w"}`)
	if got := testserver.WantJSON[api.Session](t, s.Do("GET", "/v1/sessions/%"+hexByte(sess.ID[0])+sess.ID[1:], ""), http.StatusOK); got.ID != sess.ID {
		t.Fatalf("session %q, want %q", got.ID, sess.ID)
	}
	testserver.WantStatus(t, s.Do("DELETE", "/v1/locks/a%3ab?token="+strconv.FormatInt(l.Token, 10), ""), http.StatusNoContent)
}

func hexByte(b byte) string {
	return string("0123456789ABCDEF"[b>>4]) + string("0123456789ABCDEF"[b&15])
}
