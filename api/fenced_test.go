package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testserver"
)

func TestFenced_WriteThenReadTheSameObject(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("recon", `{"owner":"w1"}`)
	value := `{"balance":42,"ids":[1,2,3],"note":"ok"}`
	r := s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":%s,"lock":"recon"}`, l.Token, value))
	put := testserver.WantJSON[api.FencedValue](t, r, http.StatusOK)
	obj := testserver.RawObject(t, r.Body)
	testserver.WantKeys(t, "fenced value", obj, fencedKeys, nil)
	wantString(t, obj, "resource", "ledger")
	if string(obj["value"]) != value {
		t.Errorf("value = %s, want %s", obj["value"], value)
	}
	if put.Token != l.Token || put.Revision <= l.Token {
		t.Errorf("put answered %+v, want token %d and a revision above it", put, l.Token)
	}

	r = s.Do("GET", "/v1/fenced/ledger", "")
	got := testserver.WantJSON[api.FencedValue](t, r, http.StatusOK)
	testserver.WantKeys(t, "fenced value", testserver.RawObject(t, r.Body), fencedKeys, nil)
	if got.Resource != "ledger" || got.Token != put.Token || got.Revision != put.Revision || string(got.Value) != value {
		t.Errorf("GET answered %+v, want what PUT answered %+v", got, put)
	}

	// Any JSON is a value, without a lock too; equal tokens are accepted.
	for _, v := range []string{`"text"`, `7`, `null`, `[]`, `true`} {
		got := testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":%s}`, l.Token, v)), http.StatusOK)
		if string(got.Value) != v || got.Token != l.Token {
			t.Errorf("put %s answered %+v", v, got)
		}
	}
}

func TestFenced_LowerTokenIsStaleAndChangesNothing(t *testing.T) {
	s := newTestServer(t)
	old := s.acquire("recon", `{"owner":"w1"}`)
	s.release("recon", old.Token)
	cur := s.acquire("recon", `{"owner":"w2"}`)
	testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":"new"}`, cur.Token)), http.StatusOK)

	p := testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":"old"}`, old.Token)), http.StatusConflict, "stale_token")
	if p.MaxToken != cur.Token {
		t.Errorf("max_token = %d, want %d", p.MaxToken, cur.Token)
	}
	got := testserver.WantJSON[api.FencedValue](t, s.Do("GET", "/v1/fenced/ledger", ""), http.StatusOK)
	if string(got.Value) != `"new"` || got.Token != cur.Token {
		t.Fatalf("after a stale write the value is %+v, want the newer holder's", got)
	}
	// A higher token moves the maximum up.
	newer := s.acquire("other", `{"owner":"w3"}`)
	testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":"newer"}`, newer.Token)), http.StatusOK)
	p = testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":"x"}`, cur.Token)), http.StatusConflict, "stale_token")
	if p.MaxToken != newer.Token {
		t.Errorf("max_token = %d, want %d", p.MaxToken, newer.Token)
	}
}

func TestFenced_NamedLockMustBeHeldWithExactlyTheToken(t *testing.T) {
	s := newTestServer(t)
	old := s.acquire("recon", `{"owner":"w1"}`)
	s.release("recon", old.Token)
	cur := s.acquire("recon", `{"owner":"w2"}`)
	s.acquire("later", `{"owner":"w3"}`) // so that cur.Token+1 has been issued
	for _, tc := range []struct {
		name  string
		token int64
		lock  string
	}{
		{"lock never held", cur.Token, "other"},
		{"lock held by a newer token", old.Token, "recon"},
		{"token above the holder's", cur.Token + 1, "recon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"token":%d,"value":1,"lock":%q}`, tc.token, tc.lock)
			testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/ledger", body), http.StatusConflict, "not_holder")
		})
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/fenced/ledger", ""), http.StatusNotFound, "not_found")

	got := testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":1,"lock":"recon"}`, cur.Token)), http.StatusOK)
	if got.Token != cur.Token {
		t.Fatalf("put with the holder's token answered %+v", got)
	}
	s.release("recon", cur.Token)
	testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":2,"lock":"recon"}`, cur.Token)), http.StatusConflict, "not_holder")
}

func TestFenced_UnknownResourceAnswersNotFound(t *testing.T) {
	s := newTestServer(t)
	testserver.WantProblem(t, s.Do("GET", "/v1/fenced/nothing-here", ""), http.StatusNotFound, "not_found")
}

func TestResetFenced_AdminResetAnswers204AndThen404(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("reg", `{"owner":"w"}`)
	if r := s.Do("PUT", "/v1/fenced/reg", fmt.Sprintf(`{"token":%d,"value":1}`, l.Token)); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/v1/fenced/reg?reason=typo", ""); r.Status != 204 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/fenced/reg", ""), 404, "not_found")
	testserver.WantProblem(t, s.Do("DELETE", "/v1/fenced/reg", ""), 404, "not_found")
	testserver.WantProblem(t, s.Do("DELETE", "/v1/fenced/reg?why=typo", ""), 400, "invalid_request")
	h := testserver.WantJSON[api.History](t, s.Do("GET", "/v1/history?kind=fence&name=reg", ""), 200)
	if len(h.Events) != 1 || h.Events[0].Type != "fence_reset" || h.Events[0].Detail != "typo" || h.Events[0].Kind != "fence" {
		t.Fatalf("history: %+v", h.Events)
	}
}
