package scopecheck

import (
	"strings"
	"testing"

	"github.com/baton-dev/baton/tests/chaos/check"
)

var narrow = Rules{"n.": Write, "shared.": Read}

var prefixes = []string{"n.", "shared."}

// run is a short run of a narrow client that did nothing wrong: it took
// n.a, was refused chaos-1 and shared.a, listed locks, and streamed the
// events from the start.
func run() ([]Request, []check.AuditEvent) {
	reqs := []Request{
		{ID: 0, Method: "POST", Path: "/v1/locks/n.a", Names: []string{"n.a"}, Need: Write, Status: 201},
		{ID: 1, Method: "POST", Path: "/v1/locks/chaos-1", Names: []string{"chaos-1"}, Need: Write, Status: 403, Code: "forbidden", Role: Write, Prefixes: prefixes},
		{ID: 2, Method: "POST", Path: "/v1/locks/shared.a", Names: []string{"shared.a"}, Need: Write, Status: 403, Code: "forbidden", Role: Write, Prefixes: prefixes},
		{ID: 3, Method: "GET", Path: "/v1/locks?limit=2", Status: 200, Seen: []Seen{{Name: "n.a"}, {Name: "shared.a"}}},
		{ID: 4, Method: "GET", Path: "/v1/events?since=0", Stream: StreamEvents, Status: 200, Seen: []Seen{
			{Revision: 5, Type: "acquired", Kind: "lock", Name: "n.a"},
			{Revision: 7, Type: "acquired", Kind: "lock", Name: "shared.a"},
			{Revision: 9, Type: "released", Kind: "lock", Name: "n.a"},
		}},
		{ID: 5, Method: "GET", Path: "/v1/kv/events?since=0", Stream: StreamKeys, Status: 200},
	}
	events := []check.AuditEvent{
		{Revision: 5, Type: "acquired", Kind: "lock", Name: "n.a", Lock: "n.a", Credential: "narrow"},
		{Revision: 6, Type: "acquired", Kind: "lock", Name: "chaos-1", Lock: "chaos-1", Credential: "operator"},
		{Revision: 7, Type: "acquired", Kind: "lock", Name: "shared.a", Lock: "shared.a", Credential: "operator"},
		{Revision: 9, Type: "released", Kind: "lock", Name: "n.a", Lock: "n.a", Credential: "narrow"},
		{Revision: 10, Type: "put", Kind: "key", Name: "cfg/1", Credential: "operator"},
	}
	return reqs, events
}

func checkRun(reqs []Request, events []check.AuditEvent) Report {
	return Check(reqs, events, Config{Credential: "narrow", Rules: narrow})
}

func TestCheck_ANarrowClientThatStayedInItsRulesPasses(t *testing.T) {
	reqs, events := run()
	rep := checkRun(reqs, events)
	if len(rep.Problems) > 0 {
		t.Fatalf("problems in a clean run: %q", rep.Problems)
	}
	if rep.Writes != 1 || rep.Refused != 2 || rep.ReadOnly != 1 || rep.Streamed != 3 || rep.Expected != 2 || rep.Trail != 2 {
		t.Errorf("counts %+v; want 1 write, 2 refused (1 read-only), 3 streamed, 2 expected, 2 in the trail", rep)
	}
}

// TestCheck_EachPlantedViolationIsReported plants one violation at a time
// in the clean run and wants Check to name it.
func TestCheck_EachPlantedViolationIsReported(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(reqs []Request, events []check.AuditEvent) ([]Request, []check.AuditEvent)
		want  string
	}{
		{"an acquire outside the rules succeeded", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[1].Status, r[1].Code = 201, ""
			return r, e
		}, `["chaos-1"] is outside its rules for write`},
		{"a write on a read-only name succeeded", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[2].Status, r[2].Code = 201, ""
			return r, e
		}, `["shared.a"] is outside its rules for write`},
		{"a name outside was looked up before the refusal", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[1].Status, r[1].Code = 404, "not_held"
			return r, e
		}, "must be refused 403 forbidden before anything else"},
		{"a read outside the rules succeeded", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			return append(r, Request{ID: 6, Method: "GET", Path: "/v1/kv/cfg%2F1", Names: []string{"cfg/1"}, Status: 200}), e
		}, `["cfg/1"] is outside its rules for read`},
		{"a write inside the rules was refused", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[0].Status, r[0].Code = 403, "forbidden"
			return r, e
		}, `but its rules give write on ["n.a"]`},
		{"a refusal lists other prefixes", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[1].Prefixes = []string{""}
			return r, e
		}, "its 403 lists the prefixes"},
		{"a list gave a name outside", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[3].Seen = append(r[3].Seen, Seen{Name: "chaos-1"})
			return r, e
		}, `gave it 1 names its rules do not let it read, first an entry naming "chaos-1"`},
		{"a lock set's entry named a member outside", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[3].Seen[1].Set = []string{"shared.a", "chaos-1"}
			return r, e
		}, `first an entry naming "chaos-1"`},
		{"a stream gave an event outside", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[4].Seen = append(r[4].Seen, Seen{Revision: 6, Type: "acquired", Kind: "lock", Name: "chaos-1"})
			return r, e
		}, `first the acquired event at revision 6 naming "chaos-1"; the names: ["chaos-1"]`},
		{"a stream left out an event it may read", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[4].Seen = append(r[4].Seen[:1], r[4].Seen[2])
			return r, e
		}, `left out 1 events the trail has and the credential may read, between revisions its connections gave: [acquired "shared.a" at 7]`},
		{"the key stream left out a key's put", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			r[5].Seen = []Seen{{Revision: 12, Type: "put", Kind: "key", Name: "shared.k"}}
			return r, append(e, check.AuditEvent{Revision: 11, Type: "put", Kind: "key", Name: "n.k", Credential: "narrow"},
				check.AuditEvent{Revision: 12, Type: "put", Kind: "key", Name: "shared.k", Credential: "operator"})
		}, `the kv-events stream left out 1 events`},
		{"the trail has its credential's event outside", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			e[1].Credential = "narrow"
			return r, e
		}, `the trail has an event of narrow on "chaos-1" (acquired at revision 6)`},
		{"nothing was checked", func(r []Request, e []check.AuditEvent) ([]Request, []check.AuditEvent) {
			return nil, e
		}, "checked too little: no write inside its rules succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs, events := tc.plant(run())
			rep := checkRun(reqs, events)
			found := false
			for _, p := range rep.Problems {
				found = found || strings.Contains(p, tc.want)
			}
			if !found {
				t.Errorf("problems %q; want one saying %q", rep.Problems, tc.want)
			}
		})
	}
}

func TestCheck_AnEndedSessionAndAFaultAreNoViolations(t *testing.T) {
	reqs, events := run()
	reqs = append(reqs,
		Request{ID: 6, Method: "DELETE", Path: "/v1/sessions/abc", Names: []string{"kv1-2"}, Session: true, Status: 404, Code: "session_not_found"},
		Request{ID: 7, Method: "POST", Path: "/v1/locks/chaos-2", Names: []string{"chaos-2"}, Err: "connection refused"},
		Request{ID: 8, Method: "POST", Path: "/v1/locks/chaos-2", Names: []string{"chaos-2"}, Status: 503, Code: "unavailable"},
	)
	rep := checkRun(reqs, events)
	if len(rep.Problems) > 0 || rep.Gone != 1 || rep.Faulted != 2 {
		t.Errorf("problems %q, %d gone, %d faulted; want none, 1 and 2", rep.Problems, rep.Gone, rep.Faulted)
	}
}

func TestCheck_AStreamResumedBeforeItsLastRevisionMissesNothing(t *testing.T) {
	reqs, events := run()
	// The connection was cut after revision 7's first event; the next
	// resumes after 6 and gives 7 and 9 again.
	reqs[4].Seen = reqs[4].Seen[:2]
	reqs = append(reqs, Request{ID: 6, Method: "GET", Path: "/v1/events", Stream: StreamEvents, Since: 6, Status: 200,
		Seen: []Seen{{Revision: 7, Type: "acquired", Kind: "lock", Name: "shared.a"}, {Revision: 9, Type: "released", Kind: "lock", Name: "n.a"}}})
	if rep := checkRun(reqs, events); len(rep.Problems) > 0 {
		t.Errorf("problems %q; want none", rep.Problems)
	}
}

func TestRules_TheLongestPrefixDecides(t *testing.T) {
	rules := Rules{"": Read, "n.": Write, "n.audit.": Read}
	for _, tc := range []struct {
		name string
		need Role
		want bool
	}{
		{"x", Read, true}, {"x", Write, false}, {"n.x", Write, true}, {"n.x", Admin, false},
		{"n.audit.q", Write, false}, {"n.audit.q", Read, true}, {"n.", Write, true},
	} {
		if got := rules.Allows(tc.name, tc.need); got != tc.want {
			t.Errorf("Allows(%q, %s) = %v, want %v", tc.name, tc.need, got, tc.want)
		}
	}
	if narrow.Allows("x", Read) || narrow.Allows("n.x", "") {
		t.Error("a name no rule covers, or no role, is allowed")
	}
}

func TestWithout_LeavesOutTheScopeWorkloadsNames(t *testing.T) {
	_, events := run()
	events = append(events, check.AuditEvent{Revision: 11, Type: "acquired", Kind: "lock", Name: "x", Lock: "x", Set: []string{"x", "n.b"}},
		check.AuditEvent{Revision: 12, Type: "gap"})
	var revs []int64
	for _, ev := range Without(events, "n.", "shared.") {
		revs = append(revs, ev.Revision)
	}
	if len(revs) != 3 || revs[0] != 6 || revs[1] != 10 || revs[2] != 12 {
		t.Errorf("kept revisions %v; want 6, 10 and the gap at 12", revs)
	}
}
