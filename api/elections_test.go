package api_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testserver"
)

// Member names of docs/API.md's Leader.
var leaderKeys = []string{"name", "candidate", "value", "token", "term", "ttl", "elected_at", "expires_at", "metadata"}

func (s *testServer) campaign(t *testing.T, name, body string) api.Leader {
	t.Helper()
	return testserver.WantJSON[api.Leader](t, s.Do("POST", "/v1/elections/"+name+"/campaign", body), http.StatusCreated)
}

// TestCampaign_LeadsThenRefusesTheNextWithTheLeaderNamed: the first
// campaign leads with term 1; the next, without wait, is refused with the
// leader in the problem; a waiting one is listed as a candidate.
func TestCampaign_LeadsThenRefusesTheNextWithTheLeaderNamed(t *testing.T) {
	s := newTestServer(t)
	r := s.Do("POST", "/v1/elections/billing/campaign", `{"candidate":"node-a","value":{"addr":"10.0.0.5:8080"},"ttl":"15s"}`)
	testserver.WantStatus(t, r, http.StatusCreated)
	testserver.WantKeys(t, "leader", testserver.RawObject(t, r.Body), leaderKeys, []string{"session", "lock_delay"})
	l := testserver.DecodeAs[api.Leader](t, r)
	if l.Name != "billing" || l.Candidate != "node-a" || l.Term != 1 || l.Token <= 0 || string(l.Value) != `{"addr":"10.0.0.5:8080"}` || l.TTL != "15s" {
		t.Fatalf("leader %+v", l)
	}
	p := testserver.WantProblem(t, s.Do("POST", "/v1/elections/billing/campaign", `{"candidate":"node-b"}`), http.StatusConflict, "election_held")
	if p.Leader == nil || p.Leader.Candidate != "node-a" || p.Leader.Token != l.Token || p.Holder != nil {
		t.Fatalf("problem %+v; want the leader named", p)
	}
	waiting := make(chan *testserver.Response, 1)
	go func() {
		waiting <- s.Do("POST", "/v1/elections/billing/campaign", `{"candidate":"node-c","wait":"30s"}`)
	}()
	poll.Until(t, 10*time.Second, "node-c waits in line", func() bool {
		r := s.Do("GET", "/v1/elections/billing", "")
		return r.Status == http.StatusOK && len(testserver.DecodeAs[api.Leader](t, r).Candidates) == 1
	})
	got := testserver.WantJSON[api.Leader](t, s.Do("GET", "/v1/elections/billing", ""), http.StatusOK)
	if c := got.Candidates[0]; c.Candidate != "node-c" || c.Position != 1 {
		t.Fatalf("candidates %+v", got.Candidates)
	}
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/elections/billing/leader?token=%d", l.Token), ""), http.StatusNoContent)
	next := testserver.WantJSON[api.Leader](t, <-waiting, http.StatusCreated)
	if next.Candidate != "node-c" || next.Term != 2 || next.Token <= l.Token || string(next.Value) != "null" {
		t.Fatalf("the next leader %+v", next)
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/elections/nobody", ""), http.StatusNotFound, "no_leader")
}

// TestCampaign_BadInputIsRefusedNamingTheFieldAndWritesNothing.
func TestCampaign_BadInputIsRefusedNamingTheFieldAndWritesNothing(t *testing.T) {
	s := newTestServer(t)
	big := `"` + strings.Repeat("x", 5000) + `"`
	for _, c := range []struct {
		path, body, field string
		status            int
	}{
		{"/v1/elections/a%20b/campaign", `{}`, "name", 400},
		{"/v1/elections/ok/campaign", `{"candidate":""}`, "candidate", 400},
		{"/v1/elections/ok/campaign", `{"ttl":"1s"}`, "ttl", 400},
		{"/v1/elections/ok/campaign", `{"wait":"10m"}`, "wait", 400},
		{"/v1/elections/ok/campaign", `{"session":""}`, "session", 400},
		{"/v1/elections/ok/campaign", `{"session":"zz","ttl":"5s"}`, "session", 400},
		{"/v1/elections/ok/campaign", `{"value":` + big + `}`, "value", 413},
		{"/v1/elections/ok/campaign", `{"valeu":1}`, "valeu", 400},
		{"/v1/elections/ok/proclaim", `{"value":1}`, "token", 400},
		{"/v1/elections/ok/proclaim", `{"token":5}`, "value", 400},
		{"/v1/elections/ok/renew", `{}`, "token", 400},
		{"/v1/elections/ok/leader/transfer", `{"to":"b"}`, "token", 400},
		{"/v1/elections/ok/leader/transfer", `{"token":5}`, "to", 400},
		{"/v1/elections/ok/leader/transfer", `{"token":5,"to":""}`, "to", 400},
		{"/v1/elections/ok/leader/transfer", `{"token":5,"to":"b\u0007"}`, "to", 400},
	} {
		before := s.Keys()
		p := testserver.WantProblem(t, s.Do("POST", c.path, c.body), c.status, map[int]string{400: "invalid_request", 413: "value_too_large"}[c.status])
		if p.Field != c.field {
			t.Errorf("POST %s %s: field %q, want %q (%s)", c.path, c.body, p.Field, c.field, p.Detail)
		}
		if after := s.Keys(); !maps.Equal(before, after) {
			t.Errorf("POST %s %s wrote to etcd", c.path, c.body)
		}
	}
	testserver.WantProblem(t, s.Do("DELETE", "/v1/elections/ok/leader", ""), http.StatusBadRequest, "invalid_request")
}

// TestTransfer_HandsLeadershipToTheNamedCandidate: the candidate named
// leads at once, ahead of the one before it in line, and its waiting
// campaign answers with that leadership; a candidate not in line is
// refused.
func TestTransfer_HandsLeadershipToTheNamedCandidate(t *testing.T) {
	s := newTestServer(t)
	l := s.campaign(t, "sched", `{"candidate":"a"}`)
	waiting := map[string]chan *testserver.Response{"b": make(chan *testserver.Response, 1), "c": make(chan *testserver.Response, 1)}
	for i, who := range []string{"b", "c"} {
		go func() {
			waiting[who] <- s.Do("POST", "/v1/elections/sched/campaign", fmt.Sprintf(`{"candidate":%q,"wait":"30s"}`, who))
		}()
		poll.Until(t, 10*time.Second, who+" waits in line", func() bool {
			return len(testserver.WantJSON[api.Leader](t, s.Do("GET", "/v1/elections/sched", ""), http.StatusOK).Candidates) == i+1
		})
	}
	transfer := func(to string) *testserver.Response {
		return s.Do("POST", "/v1/elections/sched/leader/transfer", fmt.Sprintf(`{"token":%d,"to":%q}`, l.Token, to))
	}
	testserver.WantProblem(t, transfer("z"), http.StatusConflict, "candidate_not_waiting")
	got := testserver.WantJSON[api.Leader](t, transfer("c"), http.StatusOK)
	if got.Candidate != "c" || got.Term != 2 || got.Token <= l.Token {
		t.Fatalf("transfer answered %+v, want c leading term 2", got)
	}
	c := testserver.WantJSON[api.Leader](t, <-waiting["c"], http.StatusCreated)
	if c.Token != got.Token {
		t.Fatalf("c's campaign answered token %d, want the transferred %d", c.Token, got.Token)
	}
	testserver.WantProblem(t, transfer("b"), http.StatusConflict, "token_mismatch")
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/elections/sched/leader?token=%d", c.Token), ""), http.StatusNoContent)
	testserver.WantJSON[api.Leader](t, <-waiting["b"], http.StatusCreated)
}

// TestProclaim_ChangesTheValueForTheLeaderOnly.
func TestProclaim_ChangesTheValueForTheLeaderOnly(t *testing.T) {
	s := newTestServer(t)
	l := s.campaign(t, "p", `{"candidate":"a","value":1}`)
	got := testserver.WantJSON[api.Leader](t, s.Do("POST", "/v1/elections/p/proclaim", fmt.Sprintf(`{"token":%d,"value":[2]}`, l.Token)), http.StatusOK)
	if got.Token != l.Token || got.Term != 1 || string(got.Value) != "[2]" {
		t.Fatalf("proclaim answered %+v", got)
	}
	if now := testserver.WantJSON[api.Leader](t, s.Do("GET", "/v1/elections/p", ""), http.StatusOK); string(now.Value) != "[2]" {
		t.Fatalf("GET after proclaim: value %s", now.Value)
	}
	testserver.WantProblem(t, s.Do("POST", "/v1/elections/p/proclaim", fmt.Sprintf(`{"token":%d,"value":3}`, l.Token-1)), http.StatusConflict, "token_mismatch")
	testserver.WantProblem(t, s.Do("POST", "/v1/elections/q/proclaim", `{"token":1,"value":3}`), http.StatusNotFound, "no_leader")
	renewed := testserver.WantJSON[api.Leader](t, s.Do("POST", "/v1/elections/p/renew", fmt.Sprintf(`{"token":%d}`, l.Token)), http.StatusOK)
	if string(renewed.Value) != "[2]" || renewed.ExpiresAt == nil {
		t.Fatalf("renew answered %+v", renewed)
	}
	list := testserver.WantJSON[api.LeaderList](t, s.Do("GET", "/v1/elections", ""), http.StatusOK)
	if len(list.Elections) != 1 || string(list.Elections[0].Value) != "[2]" {
		t.Fatalf("list %+v", list)
	}
}

// TestElections_AreNotLocks: a lock and an election of one name are two
// things, listed apart; a fenced write may require either.
func TestElections_AreNotLocks(t *testing.T) {
	s := newTestServer(t)
	lk := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/x", `{"owner":"w"}`), http.StatusCreated)
	for _, n := range []string{"x", "y", "z"} {
		s.campaign(t, n, `{"candidate":"c"}`)
	}
	if locks := testserver.WantJSON[api.LockList](t, s.Do("GET", "/v1/locks", ""), http.StatusOK); len(locks.Locks) != 1 {
		t.Fatalf("locks %+v", locks)
	}
	page := testserver.WantJSON[api.LeaderList](t, s.Do("GET", "/v1/elections?limit=2", ""), http.StatusOK)
	if len(page.Elections) != 2 || page.NextCursor == "" {
		t.Fatalf("first page %+v", page)
	}
	rest := testserver.WantJSON[api.LeaderList](t, s.Do("GET", "/v1/elections?limit=2&cursor="+page.NextCursor, ""), http.StatusOK)
	if len(rest.Elections) != 1 || rest.Elections[0].Name != "z" || rest.NextCursor != "" {
		t.Fatalf("second page %+v", rest)
	}
	x := testserver.WantJSON[api.Leader](t, s.Do("GET", "/v1/elections/x", ""), http.StatusOK)
	testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/r", fmt.Sprintf(`{"token":%d,"value":1,"election":"x"}`, lk.Token)), http.StatusConflict, "not_holder")
	testserver.WantStatus(t, s.Do("PUT", "/v1/fenced/r", fmt.Sprintf(`{"token":%d,"value":1,"election":"x"}`, x.Token)), http.StatusOK)
	p := testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/r", `{"token":1,"value":1,"election":"x","lock":"x"}`), http.StatusBadRequest, "invalid_request")
	if p.Field != "election" {
		t.Fatalf("both lock and election: field %q", p.Field)
	}
}

// leaderMessage decodes an observe message.
func leaderMessage(t *testing.T, st *stream) (sseMessage, api.Leader) {
	t.Helper()
	select {
	case m, ok := <-st.msgs:
		if !ok {
			t.Fatal("observe stream ended")
		}
		var l api.Leader
		if err := json.Unmarshal([]byte(m.Data), &l); err != nil {
			t.Fatalf("message data %q: %v", m.Data, err)
		}
		return m, l
	case <-time.After(20 * time.Second):
		t.Fatal("no message within 20s")
	}
	panic("unreachable")
}

// TestObserve_SendsTheStateThenEachChangeAndResumes: the first message
// is the state; then leader and vacant messages, one per change; a
// reconnect with Last-Event-ID gets exactly the changes after it.
func TestObserve_SendsTheStateThenEachChangeAndResumes(t *testing.T) {
	s := newTestServer(t)
	st := s.openStreamAt(t, "/v1/elections/o/observe", "")
	if m, l := leaderMessage(t, st); m.Event != "vacant" || l.Name != "o" || m.ID == "" {
		t.Fatalf("first message %+v", m)
	}
	l := s.campaign(t, "o", `{"candidate":"a","value":"v1"}`)
	testserver.WantStatus(t, s.Do("POST", "/v1/elections/o/proclaim", fmt.Sprintf(`{"token":%d,"value":"v2"}`, l.Token)), http.StatusOK)
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/elections/o/leader?token=%d", l.Token), ""), http.StatusNoContent)
	var ids []string
	for i, want := range []struct{ event, value string }{{"leader", `"v1"`}, {"leader", `"v2"`}, {"vacant", ""}} {
		m, got := leaderMessage(t, st)
		if m.Event != want.event || want.value != "" && (string(got.Value) != want.value || got.Token != l.Token || got.Term != 1) {
			t.Fatalf("change %d: %+v; want %s %s", i, m, want.event, want.value)
		}
		ids = append(ids, m.ID)
	}
	re := s.openStreamAt(t, "/v1/elections/o/observe", ids[0])
	for _, id := range ids[1:] {
		if m, _ := leaderMessage(t, re); m.ID != id {
			t.Fatalf("resumed after %s: message %+v; want id %s", ids[0], m, id)
		}
	}
	re.none()
}

// TestCampaign_InTheSessionThatLeadsIsIdempotent: the session that leads
// campaigns again and gets its leadership back, 200, not a second one.
func TestCampaign_InTheSessionThatLeadsIsIdempotent(t *testing.T) {
	s := newTestServer(t)
	sess := testserver.WantJSON[api.Session](t, s.Do("POST", "/v1/sessions", `{"owner":"node-a","ttl":"30s"}`), http.StatusCreated)
	body := fmt.Sprintf(`{"candidate":"node-a","session":%q,"value":"v"}`, sess.ID)
	first := s.campaign(t, "idem", body)
	again := testserver.WantJSON[api.Leader](t, s.Do("POST", "/v1/elections/idem/campaign", body), http.StatusOK)
	if again.Token != first.Token || again.Term != 1 || again.Session != sess.ID {
		t.Fatalf("campaign again in the leading session: %+v; want %+v", again, first)
	}
	got := testserver.WantJSON[api.Session](t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusOK)
	if len(got.Elections) != 1 || got.Elections[0] != "idem" || len(got.Locks) != 0 {
		t.Fatalf("session %+v; want it to lead idem", got)
	}
}
