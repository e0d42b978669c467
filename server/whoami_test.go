package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testserver"
)

// whoami asks GET /v1/whoami with token, and returns the answer decoded
// and as raw members, after checking that it does not carry the token.
func whoami(t *testing.T, s *testserver.Server, token string) (api.Whoami, map[string]json.RawMessage) {
	t.Helper()
	r := s.DoAs(token, "GET", "/v1/whoami", "")
	w := testserver.WantJSON[api.Whoami](t, r, http.StatusOK)
	if token != "" && strings.Contains(string(r.Body), token) {
		t.Errorf("GET /v1/whoami reveals the token: %s", r.Body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &raw); err != nil {
		t.Fatal(err)
	}
	return w, raw
}

func wantRules(t *testing.T, w api.Whoami, want ...api.Rule) {
	t.Helper()
	if !reflect.DeepEqual(w.Rules, want) {
		t.Errorf("rules %+v, want %+v", w.Rules, want)
	}
}

// wantNo fails when the answer has any of members.
func wantNo(t *testing.T, raw map[string]json.RawMessage, members ...string) {
	t.Helper()
	for _, m := range members {
		if v, ok := raw[m]; ok {
			t.Errorf("the answer has %s %s; want none", m, v)
		}
	}
}

// TestWhoami_AScopedCredentialSeesItsNameAndItsRules: team A of a policy
// file reads its name and its rules, sorted by prefix, and nothing about
// quotas it does not have; team B reads its own.
func TestWhoami_AScopedCredentialSeesItsNameAndItsRules(t *testing.T) {
	s := startTwoTeams(t)
	w, raw := whoami(t, s, teamATok)
	if !w.Authentication || w.Credential != "team-a" {
		t.Errorf("authentication %v, credential %q; want true, team-a", w.Authentication, w.Credential)
	}
	wantRules(t, w, api.Rule{Prefix: "a.", Role: "write"}, api.Rule{Prefix: "a.ops.", Role: "admin"}, api.Rule{Prefix: "shared.", Role: "read"})
	wantNo(t, raw, "quotas", "usage")

	w, _ = whoami(t, s, teamBTok)
	if w.Credential != "team-b" {
		t.Errorf("team B's token reads credential %q", w.Credential)
	}
	wantRules(t, w, api.Rule{Prefix: "b.", Role: "write"}, api.Rule{Prefix: "shared.", Role: "write"})

	testserver.WantProblem(t, s.DoAs(wrongTok, "GET", "/v1/whoami", ""), http.StatusUnauthorized, "unauthorized")
	testserver.WantProblem(t, s.Do("GET", "/v1/whoami", ""), http.StatusUnauthorized, "unauthorized")
}

// TestWhoami_AGlobalCredential: an operator of the policy file has one
// rule on every name; a line of the line format without prefixes reads
// as its role on every name, under its cred-… ID.
func TestWhoami_AGlobalCredential(t *testing.T) {
	w, _ := whoami(t, startTwoTeams(t), opsTok)
	if w.Credential != "ops" {
		t.Errorf("credential %q, want ops", w.Credential)
	}
	wantRules(t, w, api.Rule{Prefix: "", Role: "admin"})

	s := startWithAuth(t)
	for _, c := range []struct {
		token string
		role  string
	}{{readTok, "read"}, {writeTok, "write"}, {adminTok, "admin"}} {
		w, raw := whoami(t, s, c.token)
		if w.Credential != auth.CredentialID(c.token) || !w.Authentication {
			t.Errorf("%s: credential %q, want %s", c.role, w.Credential, auth.CredentialID(c.token))
		}
		wantRules(t, w, api.Rule{Prefix: "", Role: c.role})
		wantNo(t, raw, "quotas", "usage")
	}
}

// TestWhoami_WithoutAuthentication: a node without --auth-file says so,
// and that every request may do everything.
func TestWhoami_WithoutAuthentication(t *testing.T) {
	s := testserver.Start(t)
	r := s.Do("GET", "/v1/whoami", "")
	testserver.WantStatus(t, r, http.StatusOK)
	if got, want := strings.TrimSpace(string(r.Body)), `{"authentication":false,"rules":[{"prefix":"","role":"admin"}]}`; got != want {
		t.Errorf("GET /v1/whoami = %s, want %s", got, want)
	}
}

const (
	quotaedTok = "quotaed-token-0123456789abcdef"
	rateTok    = "rate-only-token-0123456789abc"
)

// A credential with every quota, and one with a rate alone.
const whoamiQuotas = `
credentials:
  - name: quotaed
    tokens: ["` + quotaedTok + `"]
    rules: {"q.": write}
    quotas: {holds: 5, sessions: 2, waiters: 1, streams: 3, rate: 1000, burst: 2000}
  - name: rate-only
    tokens: ["` + rateTok + `"]
    rules: {"r.": write}
    quotas: {rate: 100}
`

// TestWhoami_QuotasWithWhatTheyCountNow: a credential reads its quotas
// and what its holds, sessions and waiters count now, as they change; a
// credential with no quota of those reads its quotas without usage.
func TestWhoami_QuotasWithWhatTheyCountNow(t *testing.T) {
	s := testserver.Start(t, testserver.WithPolicy(t, whoamiQuotas))
	w, _ := whoami(t, s, quotaedTok)
	if w.Quotas == nil || *w.Quotas != (api.Quotas{Holds: 5, Sessions: 2, Waiters: 1, Streams: 3, Rate: 1000, Burst: 2000}) {
		t.Fatalf("quotas %+v", w.Quotas)
	}
	wantUsage(t, w, 0, 0, 0)

	sess := testserver.WantJSON[api.Session](t, s.DoAs(quotaedTok, "POST", "/v1/sessions", `{"owner":"q.worker","ttl":"60s"}`), http.StatusCreated)
	lk := testserver.WantJSON[api.Lock](t, s.DoAs(quotaedTok, "POST", "/v1/locks/q.one", `{"owner":"w","ttl":"60s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.DoAs(quotaedTok, "POST", "/v1/locks/q.two", `{"owner":"w","session":"`+sess.ID+`"}`), http.StatusCreated)
	testserver.WantStatus(t, s.DoAs(quotaedTok, "POST", "/v1/semaphores/q.pool", `{"limit":3,"owner":"w","ttl":"60s"}`), http.StatusCreated)
	wantUsageSoon(t, s, 3, 1, 0)

	// An acquire waiting behind q.one counts as a waiter while it waits,
	// and its hold is reserved meanwhile, as the holds quota counts it.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.SendAs(ctx, quotaedTok, "POST", "/v1/locks/q.one", `{"owner":"w2","ttl":"60s","wait":"1m"}`)
	}()
	wantUsageSoon(t, s, 4, 1, 1)
	cancel()
	<-done
	wantUsageSoon(t, s, 3, 1, 0)

	// Ends are counted as the node's watch sees them: the session's end
	// ends q.two with it.
	testserver.WantStatus(t, s.DoAs(quotaedTok, "DELETE", fmt.Sprintf("/v1/locks/q.one?token=%d", lk.Token), ""), http.StatusNoContent)
	testserver.WantStatus(t, s.DoAs(quotaedTok, "DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusNoContent)
	wantUsageSoon(t, s, 1, 0, 0)

	w, raw := whoami(t, s, rateTok)
	if w.Quotas == nil || *w.Quotas != (api.Quotas{Rate: 100}) {
		t.Errorf("the rate-only credential's quotas %+v", w.Quotas)
	}
	wantNo(t, raw, "usage")
	if q := string(raw["quotas"]); q != `{"rate":100}` {
		t.Errorf("quotas %s, want the rate alone", q)
	}
}

func wantUsage(t *testing.T, w api.Whoami, holds, sessions, waiters int) {
	t.Helper()
	if !usageIs(w, holds, sessions, waiters) {
		t.Errorf("usage %s, want holds %d, sessions %d, waiters %d", usageString(w), holds, sessions, waiters)
	}
}

// wantUsageSoon waits for the quotaed credential's usage to read holds,
// sessions and waiters.
func wantUsageSoon(t *testing.T, s *testserver.Server, holds, sessions, waiters int) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("usage of holds %d, sessions %d, waiters %d", holds, sessions, waiters), func() bool {
		w, _ := whoami(t, s, quotaedTok)
		return usageIs(w, holds, sessions, waiters)
	})
}

func usageIs(w api.Whoami, holds, sessions, waiters int) bool {
	u := w.Usage
	return u != nil && u.Holds != nil && *u.Holds == holds && u.Sessions != nil && *u.Sessions == sessions &&
		u.Waiters != nil && *u.Waiters == waiters
}

func usageString(w api.Whoami) string {
	b, _ := json.Marshal(w.Usage)
	return string(b)
}
