package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/baton-dev/baton/tests/testserver"
)

const (
	runawayTok = "runaway-token-0123456789abcd"
	calmTok    = "calm-token-0123456789abcdef"
)

// A runaway client's credential with a rate and a streams quota, and a
// calm one's without, on one node.
const quotaPolicy = `
credentials:
  - name: runaway
    tokens: ["` + runawayTok + `"]
    rules: {"r.": write}
    quotas: {rate: 0.5, burst: 2, streams: 1, holds: 2, sessions: 1, waiters: 1}
  - name: calm
    tokens: ["` + calmTok + `"]
    rules: {"c.": write}
`

// TestQuota_RateRefusesTheRunawayAlone: past its burst, the runaway's
// requests get 429 quota_exceeded naming the rate quota and its limit,
// with Retry-After; the other credential's requests are untouched.
func TestQuota_RateRefusesTheRunawayAlone(t *testing.T) {
	s := testserver.Start(t, testserver.WithPolicy(t, quotaPolicy))
	for range 2 {
		testserver.WantStatus(t, s.DoAs(runawayTok, "GET", "/v1/locks", ""), http.StatusOK)
	}
	r := s.DoAs(runawayTok, "POST", "/v1/locks/r.job", `{"owner":"w"}`)
	p := testserver.WantProblem(t, r, http.StatusTooManyRequests, "quota_exceeded")
	if p.Quota != "rate" || p.Limit != 1 || p.RetryAfter < 1 || r.Header.Get("Retry-After") == "" {
		t.Errorf("problem %+v, Retry-After %q; want quota rate, limit 1 and a Retry-After", p, r.Header.Get("Retry-After"))
	}
	for range 10 {
		testserver.WantStatus(t, s.DoAs(calmTok, "GET", "/v1/locks", ""), http.StatusOK)
	}
	// The refused acquire wrote nothing.
	for k := range s.Keys() {
		if strings.Contains(k, "r.job") {
			t.Errorf("the refused acquire left %s", k)
		}
	}
	m := s.DoAs(calmTok, "GET", "/metrics", "")
	testserver.WantStatus(t, m, http.StatusOK)
	if !strings.Contains(string(m.Body), `baton_quota_exceeded_total{credential="runaway",quota="rate"} 1`) {
		t.Error("/metrics does not count the refusal by credential and quota")
	}
}

// TestQuota_StreamsCapsOneCredentialsStreams: the runaway's second event
// stream on the node is refused; the calm credential opens its own.
func TestQuota_StreamsCapsOneCredentialsStreams(t *testing.T) {
	s := testserver.Start(t, testserver.WithPolicy(t, strings.Replace(quotaPolicy, "rate: 0.5, burst: 2, ", "", 1)))
	openEvents(t, s, runawayTok, "/v1/events")
	p := testserver.WantProblem(t, send(t, s, "Bearer "+runawayTok, "GET", "/v1/events", ""), http.StatusTooManyRequests, "quota_exceeded")
	if p.Quota != "streams" || p.Limit != 1 {
		t.Errorf("problem %+v; want quota streams, limit 1", p)
	}
	openEvents(t, s, calmTok, "/v1/events")
}

// TestQuota_HoldsSessionsAndWaitersThroughTheAPI: the engine's quotas
// answer 429 quota_exceeded too, naming the quota, and the other team
// goes on.
func TestQuota_HoldsSessionsAndWaitersThroughTheAPI(t *testing.T) {
	s := testserver.Start(t, testserver.WithPolicy(t, strings.Replace(quotaPolicy, "rate: 0.5, burst: 2, ", "", 1)))
	for _, n := range []string{"r.1", "r.2"} {
		testserver.WantStatus(t, s.DoAs(runawayTok, "POST", "/v1/locks/"+n, `{"owner":"w","ttl":"60s"}`), http.StatusCreated)
	}
	for _, tc := range []struct{ method, path, body, quota string }{
		{"POST", "/v1/locks/r.3", `{"owner":"w","ttl":"60s"}`, "holds"},
		{"POST", "/v1/locksets", `{"names":["r.4","r.5"],"owner":"w","ttl":"60s"}`, "holds"},
		{"POST", "/v1/semaphores/r.sem", `{"limit":3,"owner":"w","ttl":"60s"}`, "holds"},
	} {
		p := testserver.WantProblem(t, s.DoAs(runawayTok, tc.method, tc.path, tc.body), http.StatusTooManyRequests, "quota_exceeded")
		if p.Quota != tc.quota || p.Limit != 2 {
			t.Errorf("%s %s: %+v; want quota %s, limit 2", tc.method, tc.path, p, tc.quota)
		}
	}
	testserver.WantStatus(t, s.DoAs(runawayTok, "POST", "/v1/sessions", `{"owner":"r.w","ttl":"60s"}`), http.StatusCreated)
	if p := testserver.WantProblem(t, s.DoAs(runawayTok, "POST", "/v1/sessions", `{"owner":"r.w","ttl":"60s"}`), http.StatusTooManyRequests, "quota_exceeded"); p.Quota != "sessions" {
		t.Errorf("second session: %+v", p)
	}
	for _, n := range []string{"c.1", "c.2", "c.3"} {
		testserver.WantStatus(t, s.DoAs(calmTok, "POST", "/v1/locks/"+n, `{"owner":"w","ttl":"60s"}`), http.StatusCreated)
	}
}
