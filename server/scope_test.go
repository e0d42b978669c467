package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/tests/testserver"
)

// Two teams and an operator on one node, as docs/SECURITY.md sets them
// up: team A writes its names, administers a.ops., reads shared.; team B
// writes its names and shared.; ops administers everything.
const (
	teamATok = "team-a-token-0123456789abcdef"
	teamBTok = "team-b-token-0123456789abcdef"
	opsTok   = "ops-token-0123456789abcdef01"
)

const twoTeams = `
credentials:
  - name: team-a
    tokens: ["` + teamATok + `"]
    rules: {"a.": write, "a.ops.": admin, "shared.": read}
  - name: team-b
    tokens: ["` + teamBTok + `"]
    rules: {"b.": write, "shared.": write}
  - name: ops
    tokens: ["` + opsTok + `"]
    rules: {"": admin}
`

func startTwoTeams(t *testing.T) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.WithPolicy(t, twoTeams))
}

// scopedCall is a request about the thing named by %[1]s, and the role
// its route needs.
type scopedCall struct {
	kind, method, path, body string
	need                     auth.Role
}

// scopedCalls are a request of every route that acts on a name, by kind.
var scopedCalls = []scopedCall{
	{"lock", "POST", "/v1/locks/%[1]s", `{"owner":"w","ttl":"30s"}`, auth.Write},
	{"lock", "GET", "/v1/locks/%[1]s", "", auth.Read},
	{"lock", "POST", "/v1/locks/%[1]s/renew", `{"token":1}`, auth.Write},
	{"lock", "DELETE", "/v1/locks/%[1]s?token=1", "", auth.Write},
	{"lock", "POST", "/v1/locks/%[1]s/revoke", `{"reason":"r"}`, auth.Admin},
	{"lock", "POST", "/v1/locks/%[1]s/yield", `{"reason":"r"}`, auth.Write},
	{"lock", "DELETE", "/v1/locks/%[1]s/delay?reason=r", "", auth.Admin},
	{"election", "POST", "/v1/elections/%[1]s/campaign", `{"candidate":"c","ttl":"30s"}`, auth.Write},
	{"election", "GET", "/v1/elections/%[1]s", "", auth.Read},
	{"election", "POST", "/v1/elections/%[1]s/proclaim", `{"token":1,"value":"v"}`, auth.Write},
	{"election", "POST", "/v1/elections/%[1]s/renew", `{"token":1}`, auth.Write},
	{"election", "DELETE", "/v1/elections/%[1]s/leader?token=1", "", auth.Write},
	{"election", "POST", "/v1/elections/%[1]s/leader/transfer", `{"token":1,"to":"x"}`, auth.Write},
	{"election", "POST", "/v1/elections/%[1]s/revoke", `{"reason":"r"}`, auth.Admin},
	{"election", "POST", "/v1/elections/%[1]s/yield", `{"reason":"r"}`, auth.Write},
	{"election", "GET", "/v1/elections/%[1]s/observe", "", auth.Read},
	{"semaphore", "POST", "/v1/semaphores/%[1]s", `{"limit":2,"owner":"w","ttl":"30s"}`, auth.Write},
	{"semaphore", "GET", "/v1/semaphores/%[1]s", "", auth.Read},
	{"semaphore", "POST", "/v1/semaphores/%[1]s/renew", `{"token":1}`, auth.Write},
	{"semaphore", "DELETE", "/v1/semaphores/%[1]s?token=1", "", auth.Write},
	{"semaphore", "POST", "/v1/semaphores/%[1]s/revoke", `{"token":1,"reason":"r"}`, auth.Admin},
	{"semaphore", "POST", "/v1/semaphores/%[1]s/yield", `{"reason":"r"}`, auth.Write},
	{"rwlock", "POST", "/v1/rwlocks/%[1]s", `{"mode":"read","owner":"w","ttl":"30s"}`, auth.Write},
	{"rwlock", "GET", "/v1/rwlocks/%[1]s", "", auth.Read},
	{"rwlock", "POST", "/v1/rwlocks/%[1]s/renew", `{"token":1}`, auth.Write},
	{"rwlock", "DELETE", "/v1/rwlocks/%[1]s?token=1", "", auth.Write},
	{"rwlock", "POST", "/v1/rwlocks/%[1]s/revoke", `{"token":1,"reason":"r"}`, auth.Admin},
	{"rwlock", "POST", "/v1/rwlocks/%[1]s/yield", `{"reason":"r"}`, auth.Write},
	{"fenced", "PUT", "/v1/fenced/%[1]s", `{"token":1,"value":1}`, auth.Write},
	{"fenced", "GET", "/v1/fenced/%[1]s", "", auth.Read},
	{"fenced", "DELETE", "/v1/fenced/%[1]s?reason=r", "", auth.Admin},
	{"key", "PUT", "/v1/kv/%[1]s", `{"value":1}`, auth.Write},
	{"key", "GET", "/v1/kv/%[1]s", "", auth.Read},
	{"key", "DELETE", "/v1/kv/%[1]s", "", auth.Write},
	{"lock set", "POST", "/v1/locksets", `{"names":["%[1]s","%[1]s-2"],"owner":"w","ttl":"30s"}`, auth.Write},
	{"lock set", "POST", "/v1/locksets/renew", `{"names":["%[1]s","%[1]s-2"],"token":1}`, auth.Write},
	{"lock set", "POST", "/v1/locksets/release", `{"names":["%[1]s","%[1]s-2"],"token":1}`, auth.Write},
	{"session owner", "POST", "/v1/sessions", `{"owner":"%[1]s","ttl":"30s"}`, auth.Write},
	{"history", "GET", "/v1/history?lock=%[1]s", "", auth.Read},
	{"events", "GET", "/v1/events?lock=%[1]s", "", auth.Read},
	{"fence of a fenced write", "PUT", "/v1/fenced/a.res-%[1]s", `{"token":1,"value":1,"lock":"%[1]s"}`, auth.Read},
	{"fence of a key's write", "PUT", "/v1/kv/a.key-%[1]s", `{"value":1,"lock":"%[1]s","token":1}`, auth.Read},
}

// TestScope_EveryRouteChecksItsNameAgainstTheRules is the matrix of
// credentials × kinds × actions: team A's request about a name of each of
// its rules, and about team B's, for every route that acts on a name.
// What a rule allows reaches the engine (whatever it answers then, never
// 403); what it does not is a 403 forbidden naming the role needed and
// the credential's prefixes, and writes nothing.
func TestScope_EveryRouteChecksItsNameAgainstTheRules(t *testing.T) {
	s := startTwoTeams(t)
	for _, name := range []struct {
		prefix string
		role   auth.Role // team A's role on it
	}{{"a.", auth.Write}, {"a.ops.", auth.Admin}, {"shared.", auth.Read}, {"b.", 0}, {"", 0}} {
		for _, call := range scopedCalls {
			n := name.prefix + unique("x")
			path := strings.ReplaceAll(call.path, "%[1]s", n)
			body := strings.ReplaceAll(call.body, "%[1]s", n)
			t.Run(fmt.Sprintf("%s %s on %q", call.method, call.kind, name.prefix), func(t *testing.T) {
				before := s.Revision()
				r := send(t, s, "Bearer "+teamATok, call.method, path, body)
				if name.role.Allows(call.need) {
					if r.Status == http.StatusForbidden {
						t.Fatalf("%s %s: 403 where the rule gives %s: %s", call.method, path, name.role, r.Body)
					}
					return
				}
				p := testserver.WantProblem(t, r, http.StatusForbidden, "forbidden")
				if p.Role != call.need.String() || !slices.Equal(p.Prefixes, []string{"a.", "a.ops.", "shared."}) {
					t.Errorf("problem role %q prefixes %q; want %s and team A's three prefixes", p.Role, p.Prefixes, call.need)
				}
				if !strings.Contains(p.Detail, n) {
					t.Errorf("detail %q does not name %q", p.Detail, n)
				}
				if w := s.WrittenSince(before); len(w) > 0 {
					t.Errorf("the refusal wrote %q", w)
				}
			})
		}
	}
}

// TestScope_CallsAcrossNamesNeedAGlobalRule: maintenance acts on every
// name, so an admin of a prefix may not run it; another credential's
// session is the operator's alone.
func TestScope_CallsAcrossNamesNeedAGlobalRule(t *testing.T) {
	s := startTwoTeams(t)
	testserver.WantProblem(t, s.DoAs(teamATok, "POST", "/v1/maintenance/recover", ""), http.StatusForbidden, "forbidden")
	sess := testserver.WantJSON[api.Session](t, s.DoAs(teamBTok, "POST", "/v1/sessions", `{"owner":"b.worker","ttl":"30s"}`), http.StatusCreated)
	testserver.WantProblem(t, s.DoAs(teamATok, "DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusForbidden, "forbidden")
	testserver.WantProblem(t, s.DoAs(teamATok, "GET", "/v1/sessions/"+sess.ID, ""), http.StatusForbidden, "forbidden")
	testserver.WantStatus(t, s.DoAs(opsTok, "DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusNoContent)
	testserver.WantProblem(t, s.DoAs(teamATok, "POST", "/v1/locks/shared.x", `{"owner":"w"}`), http.StatusForbidden, "forbidden")

	// Metrics count the denials by credential and the rule that decided.
	r := s.DoAs(opsTok, "GET", "/metrics", "")
	testserver.WantStatus(t, r, http.StatusOK)
	m := string(r.Body)
	for _, want := range []string{
		`baton_auth_denials_total{credential="team-a",rule="global"} 1`, // maintenance
		`baton_auth_denials_total{credential="team-a",rule="none"} 1`,   // team B's session's owner
		`baton_auth_denials_total{credential="team-a",rule="\"shared.\""} 1`,
		`baton_auth_denials_total{credential="team-a",rule="\"shared.\""} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestScope_AnAdminRuleActsOnOthersHoldsUnderItOnly: team A's admin rule
// on a.ops. lets it end the operator's hold there; on a.y, where its rule
// is write, the operator's hold is not its to end.
func TestScope_AnAdminRuleActsOnOthersHoldsUnderItOnly(t *testing.T) {
	s := startTwoTeams(t)
	ops := testserver.WantJSON[api.Lock](t, s.DoAs(opsTok, "POST", "/v1/locks/a.ops.x", `{"owner":"ops","ttl":"60s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.DoAs(teamATok, "DELETE", fmt.Sprintf("/v1/locks/a.ops.x?token=%d", ops.Token), ""), http.StatusNoContent)
	mine := testserver.WantJSON[api.Lock](t, s.DoAs(opsTok, "POST", "/v1/locks/a.y", `{"owner":"ops","ttl":"60s"}`), http.StatusCreated)
	// a.y is team A's to write, not to administer: the hold is the
	// operator's.
	testserver.WantProblem(t, s.DoAs(teamATok, "DELETE", fmt.Sprintf("/v1/locks/a.y?token=%d", mine.Token), ""), http.StatusForbidden, "forbidden")
}

// TestScope_ListsShowEachTeamOnlyItsNames: every list a team pages
// through holds exactly the names it may read, and no page before the
// last is short, though the other team's names sort between its own.
func TestScope_ListsShowEachTeamOnlyItsNames(t *testing.T) {
	s := startTwoTeams(t)
	all := []string{"a.1", "a.2", "a.3", "a.ops.1", "b.1", "b.2", "c.1", "shared.1", "shared.2", "z.1"}
	for _, n := range all {
		testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/locks/"+n, `{"owner":"ops","ttl":"60s"}`), http.StatusCreated)
		testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/elections/"+n+"/campaign", `{"candidate":"ops","ttl":"60s"}`), http.StatusCreated)
		testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/semaphores/"+n, `{"limit":1,"owner":"ops","ttl":"60s"}`), http.StatusCreated)
		testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/rwlocks/"+n, `{"mode":"read","owner":"ops","ttl":"60s"}`), http.StatusCreated)
		testserver.WantStatus(t, s.DoAs(opsTok, "PUT", "/v1/kv/"+n, `{"value":1}`), http.StatusCreated)
		testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/sessions", `{"owner":"`+n+`","ttl":"60s"}`), http.StatusCreated)
	}
	lists := []struct{ path, member, field string }{
		{"/v1/locks", "locks", "name"},
		{"/v1/elections", "elections", "name"},
		{"/v1/semaphores", "semaphores", "name"},
		{"/v1/rwlocks", "rwlocks", "name"},
		{"/v1/kv", "keys", "key"},
		{"/v1/sessions", "sessions", "owner"},
	}
	for _, team := range []struct {
		tok  string
		want []string
	}{
		{teamATok, []string{"a.1", "a.2", "a.3", "a.ops.1", "shared.1", "shared.2"}},
		{teamBTok, []string{"b.1", "b.2", "shared.1", "shared.2"}},
		{opsTok, all},
	} {
		for _, l := range lists {
			for _, prefix := range []string{"", "a.", "shared.", "b.", "s"} {
				want := slices.DeleteFunc(slices.Clone(team.want), func(n string) bool { return !strings.HasPrefix(n, prefix) })
				if got := pageThrough(t, s, team.tok, l.path, prefix, l.member, l.field); !slices.Equal(got, want) {
					t.Errorf("%s?prefix=%s as %s: %q, want %q", l.path, prefix, team.tok[:6], got, want)
				}
			}
		}
	}
}

// TestScope_AListsBadPrefixIsA400WhateverTheRules: a prefix no name (key,
// owner) can begin with is a 400 naming prefix, for team A as for the
// operator, though team A's page would read no range at all.
func TestScope_AListsBadPrefixIsA400WhateverTheRules(t *testing.T) {
	s := startTwoTeams(t)
	for _, l := range []struct{ path, prefix string }{
		{"/v1/locks", "b!"},
		{"/v1/elections", "b!"},
		{"/v1/semaphores", "b!"},
		{"/v1/rwlocks", "b!"},
		{"/v1/kv", "b//c"},
		{"/v1/sessions", "b\x01"},
	} {
		for _, tok := range []string{teamATok, opsTok} {
			r := s.DoAs(tok, "GET", l.path+"?"+url.Values{"prefix": {l.prefix}}.Encode(), "")
			if p := testserver.WantProblem(t, r, http.StatusBadRequest, "invalid_request"); p.Field != "prefix" {
				t.Errorf("%s?prefix=%q as %s: the problem names %q, want prefix", l.path, l.prefix, tok[:6], p.Field)
			}
		}
	}
}

// pageThrough lists path two at a time and returns the field of every
// entry; it fails on a page short of two that is not the last.
func pageThrough(t *testing.T, s *testserver.Server, tok, path, prefix, member, field string) []string {
	t.Helper()
	var got []string
	cursor := ""
	for range 20 {
		q := url.Values{"limit": {"2"}, "prefix": {prefix}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := s.DoAs(tok, "GET", path+"?"+q.Encode(), "")
		page := testserver.WantJSON[map[string]json.RawMessage](t, r, http.StatusOK)
		var entries []map[string]any
		if err := json.Unmarshal(page[member], &entries); err != nil {
			t.Fatalf("%s: %v in %s", path, err, r.Body)
		}
		for _, e := range entries {
			got = append(got, e[field].(string))
		}
		var next string
		if raw, ok := page["next_cursor"]; ok {
			_ = json.Unmarshal(raw, &next)
		}
		if next == "" {
			return got
		}
		if len(entries) < 2 {
			t.Fatalf("%s?prefix=%s: a page of %d before the last", path, prefix, len(entries))
		}
		cursor = next
	}
	t.Fatalf("%s: more than 20 pages", path)
	return nil
}

// TestScope_HistoryAndEventsShowOnlyReadableNames: a team's history
// pages and event stream (replayed and live) hold only its names; asking
// for one of the other team's is a 403.
func TestScope_HistoryAndEventsShowOnlyReadableNames(t *testing.T) {
	s := startTwoTeams(t)
	for _, n := range []string{"a.h1", "b.h1", "shared.h1", "b.h2", "a.h2", "c.h1"} {
		l := testserver.WantJSON[api.Lock](t, s.DoAs(opsTok, "POST", "/v1/locks/"+n, `{"owner":"ops","ttl":"60s"}`), http.StatusCreated)
		testserver.WantStatus(t, s.DoAs(opsTok, "DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", n, l.Token), ""), http.StatusNoContent)
	}
	h := testserver.WantJSON[api.History](t, s.DoAs(teamATok, "GET", "/v1/history?limit=3", ""), http.StatusOK)
	var names []string
	for _, e := range h.Events {
		names = append(names, e.Lock)
	}
	if !slices.Equal(names, []string{"a.h2", "a.h2", "shared.h1"}) {
		t.Errorf("team A's newest three events are of %q; want a.h2's two and shared.h1's release", names)
	}
	testserver.WantProblem(t, s.DoAs(teamATok, "GET", "/v1/history?lock=b.h1", ""), http.StatusForbidden, "forbidden")

	stream := openEvents(t, s, teamATok, "/v1/events?since=0")
	// A live event after the replay ends the reading below.
	testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/locks/b.live", `{"owner":"ops","ttl":"60s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/locks/a.live", `{"owner":"ops","ttl":"60s"}`), http.StatusCreated)
	var seen []string
	for !slices.Contains(seen, "a.live") {
		seen = append(seen, nextEventLock(t, stream))
	}
	want := []string{"a.h1", "a.h1", "shared.h1", "shared.h1", "a.h2", "a.h2", "a.live"}
	if !slices.Equal(seen, want) {
		t.Errorf("team A's stream: %q, want %q", seen, want)
	}
}

// openEvents opens an event stream as tok and returns its reader. Reads
// of it block: the deadline ends them if no line comes.
func openEvents(t *testing.T, s *testserver.Server, tok, path string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.TS.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := s.TS.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	return bufio.NewReader(resp.Body)
}

// nextEventLock reads the stream to its next event and returns the lock
// it is about.
func nextEventLock(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev api.Event
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			return ev.Lock
		}
	}
}

// TestScope_WhatAThingNamesBesideItselfIsRedacted: a lock set's other
// members and a session's other holds are another team's names; a view
// of a lock or a session the credential may read leaves them out, in
// answers, lists, problems, history pages and streams.
func TestScope_WhatAThingNamesBesideItselfIsRedacted(t *testing.T) {
	s := startTwoTeams(t)
	testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/locksets", `{"names":["shared.a","c.secret"],"owner":"ops","ttl":"60s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/locksets", `{"names":["a.held","c.other"],"owner":"ops","ttl":"60s"}`), http.StatusCreated)
	sess := testserver.WantJSON[api.Session](t, s.DoAs(opsTok, "POST", "/v1/sessions", `{"owner":"shared.feeder","ttl":"60s"}`), http.StatusCreated)
	for _, n := range []string{"shared.z", "c.hidden"} {
		testserver.WantStatus(t, s.DoAs(opsTok, "POST", "/v1/locks/"+n, `{"owner":"ops","session":"`+sess.ID+`"}`), http.StatusCreated)
	}
	stream := openEvents(t, s, teamATok, "/v1/events?since=0")

	wantOnly := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	l := testserver.WantJSON[api.Lock](t, s.DoAs(teamATok, "GET", "/v1/locks/shared.a", ""), http.StatusOK)
	wantOnly("GET /v1/locks/shared.a's set", l.Set, "shared.a")
	list := testserver.WantJSON[api.LockList](t, s.DoAs(teamATok, "GET", "/v1/locks?prefix=shared.a", ""), http.StatusOK)
	if len(list.Locks) != 1 {
		t.Fatalf("list: %+v", list)
	}
	wantOnly("the listed lock's set", list.Locks[0].Set, "shared.a")
	p := testserver.WantProblem(t, s.DoAs(teamATok, "POST", "/v1/locks/a.held", `{"owner":"w"}`), http.StatusConflict, "lock_held")
	if p.Holder == nil {
		t.Fatal("lock_held without its holder")
	}
	wantOnly("lock_held's holder's set", p.Holder.Set, "a.held")
	got := testserver.WantJSON[api.Session](t, s.DoAs(teamATok, "GET", "/v1/sessions/"+sess.ID, ""), http.StatusOK)
	wantOnly("the session's locks", got.Locks, "shared.z")
	h := testserver.WantJSON[api.History](t, s.DoAs(teamATok, "GET", "/v1/history?lock=shared.a", ""), http.StatusOK)
	for _, e := range h.Events {
		wantOnly("a history event's set", e.Set, "shared.a")
	}
	for {
		line, err := stream.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(data, "c.") {
			t.Fatalf("team A's stream names another team's lock: %s", data)
		}
		if ev.Lock == "shared.z" {
			break // the last of the events made above
		}
	}
}
