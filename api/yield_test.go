package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testserver"
)

// yieldKeys are the members of docs/API.md's answer to a request to yield.
var yieldKeys = []string{"kind", "name", "tokens", "owner", "reason", "requested_at", "revision"}

// TestYield_RecordsTheRequestForTheHolderAndEndsNothing: a request to
// yield answers 202 with the hold asked; the holder's event stream and the
// history get yield_requested naming the asker and the reason; the hold
// goes on until its holder releases it.
func TestYield_RecordsTheRequestForTheHolderAndEndsNothing(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("nightly", `{"owner":"w1"}`)
	st := s.openStream(t, fmt.Sprintf("?kind=lock&name=nightly&since=%d", l.Token), "")

	r := s.Do("POST", "/v1/locks/nightly/yield", `{"owner":"batch-7","reason":"backup needs it"}`)
	testserver.WantKeys(t, "yield answer", testserver.RawObject(t, r.Body), yieldKeys, nil)
	y := testserver.WantJSON[api.YieldRequested](t, r, http.StatusAccepted)
	if y.Kind != "lock" || y.Name != "nightly" || !slices.Equal(y.Tokens, []int64{l.Token}) || y.Owner != "batch-7" || y.Reason != "backup needs it" || y.Revision <= l.Token {
		t.Fatalf("answer %+v, want lock nightly's token %d asked by batch-7", y, l.Token)
	}

	_, ev := st.next()
	want := api.Event{Revision: y.Revision, Time: y.RequestedAt, Type: "yield_requested", Kind: "lock", Name: "nightly", Lock: "nightly",
		Owner: "batch-7", Token: l.Token, Reason: "backup needs it"}
	if fmt.Sprint(ev) != fmt.Sprint(want) {
		t.Fatalf("streamed %+v, want %+v", ev, want)
	}
	if got := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/nightly", ""), http.StatusOK); got.Token != l.Token {
		t.Fatalf("lock after the request: %+v, want still token %d", got, l.Token)
	}
	s.release("nightly", l.Token)
	evs := s.history("kind=lock&name=nightly")
	if types := typesOf(evs); !slices.Equal(types, []string{"released", "yield_requested", "acquired"}) {
		t.Fatalf("history %v, want the request between the acquire and the release", types)
	}
	if fmt.Sprint(evs[1]) != fmt.Sprint(want) {
		t.Fatalf("history has %+v, want %+v", evs[1], want)
	}
	// Without a body, the asker is the client's address.
	s.acquire("nightly", `{"owner":"w2"}`)
	y = testserver.WantJSON[api.YieldRequested](t, s.Do("POST", "/v1/locks/nightly/yield", ""), http.StatusAccepted)
	if y.Owner == "" || y.Reason != "" {
		t.Fatalf("answer %+v, want the client's address as owner and no reason", y)
	}
}

func typesOf(evs []api.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// TestYield_ToNothingHeldAnswers404AndWritesNothing: a free lock, an
// ended hold, a token that holds nothing and an election without a
// leader are refused, and etcd's revision does not move.
func TestYield_ToNothingHeldAnswers404AndWritesNothing(t *testing.T) {
	s := newTestServer(t)
	l := s.acquire("gone", `{"owner":"w1"}`)
	s.release("gone", l.Token)
	held := s.acquire("held", `{"owner":"w1"}`)
	p := s.permit(t, "jobs", `{"limit":2,"owner":"w1"}`)
	for _, tc := range []struct{ path, body, code string }{
		{"/v1/locks/gone/yield", `{"reason":"x"}`, "not_held"},
		{"/v1/locks/never/yield", "", "not_held"},
		{"/v1/locks/held/yield", fmt.Sprintf(`{"token":%d}`, held.Token+100), "not_held"},
		{"/v1/elections/vacant/yield", "", "no_leader"},
		{"/v1/semaphores/idle/yield", "", "not_held"},
		{"/v1/semaphores/jobs/yield", fmt.Sprintf(`{"token":%d}`, p.Token+100), "not_held"},
		{"/v1/rwlocks/idle/yield", `{"reason":"x"}`, "not_held"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			before := s.Revision()
			testserver.WantProblem(t, s.Do("POST", tc.path, tc.body), http.StatusNotFound, tc.code)
			if w := s.WrittenSince(before); len(w) > 0 {
				t.Fatalf("the refusal wrote %q", w)
			}
		})
	}
}

// TestYield_BadInputNamesTheFieldAndWritesNothing: each wrong member or
// name is a 400 naming it, and etcd's revision does not move.
func TestYield_BadInputNamesTheFieldAndWritesNothing(t *testing.T) {
	s := newTestServer(t)
	s.acquire("held", `{"owner":"w1"}`)
	for _, tc := range []struct{ rule, path, body, field string }{
		{"reason over 1,024 bytes", "/v1/locks/held/yield", fmt.Sprintf(`{"reason":%q}`, strings.Repeat("r", 1025)), "reason"},
		{"bad name", "/v1/locks/a!b/yield", `{"reason":"x"}`, "name"},
		{"name too long", "/v1/elections/" + strings.Repeat("a", 129) + "/yield", "", "name"},
		{"owner empty", "/v1/semaphores/held/yield", `{"owner":""}`, "owner"},
		{"token 0", "/v1/rwlocks/held/yield", `{"token":0}`, "token"},
		{"unknown member", "/v1/locks/held/yield", `{"reason":"x","force":true}`, "force"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			before := s.Revision()
			if p := testserver.WantProblem(t, s.Do("POST", tc.path, tc.body), http.StatusBadRequest, "invalid_request"); p.Field != tc.field {
				t.Errorf("problem names %q, want %q", p.Field, tc.field)
			}
			if w := s.WrittenSince(before); len(w) > 0 {
				t.Fatalf("the refusal wrote %q", w)
			}
		})
	}
}

// TestYield_AsksEveryHoldOfAThingWithSeatsOrTheOneNamed: a semaphore's
// permits and a read/write lock's holds are each asked, at one revision,
// or only the hold whose token the request names; an election's leader is
// asked with its term.
func TestYield_AsksEveryHoldOfAThingWithSeatsOrTheOneNamed(t *testing.T) {
	s := newTestServer(t)
	p1, p2 := s.permit(t, "jobs", `{"limit":3,"owner":"w1"}`), s.permit(t, "jobs", `{"limit":3,"owner":"w2"}`)
	y := testserver.WantJSON[api.YieldRequested](t, s.Do("POST", "/v1/semaphores/jobs/yield", `{"owner":"w3"}`), http.StatusAccepted)
	if !slices.Equal(y.Tokens, []int64{p1.Token, p2.Token}) || y.Kind != "semaphore" {
		t.Fatalf("answer %+v, want both permits %d and %d asked", y, p1.Token, p2.Token)
	}
	evs := s.history("kind=semaphore&name=jobs&type=yield_requested")
	if len(evs) != 2 || evs[0].Revision != y.Revision || evs[1].Revision != y.Revision || evs[0].Token+evs[1].Token != p1.Token+p2.Token {
		t.Fatalf("history %+v, want a request to each permit at revision %d", evs, y.Revision)
	}
	y = testserver.WantJSON[api.YieldRequested](t, s.Do("POST", "/v1/semaphores/jobs/yield", fmt.Sprintf(`{"token":%d}`, p2.Token)), http.StatusAccepted)
	if !slices.Equal(y.Tokens, []int64{p2.Token}) {
		t.Fatalf("answer %+v, want permit %d alone", y, p2.Token)
	}

	r1 := s.rwHold(t, "cat", `{"mode":"read","owner":"r1"}`, http.StatusCreated)
	r2 := s.rwHold(t, "cat", `{"mode":"read","owner":"r2"}`, http.StatusCreated)
	y = testserver.WantJSON[api.YieldRequested](t, s.Do("POST", "/v1/rwlocks/cat/yield", `{"owner":"writer","reason":"schema change"}`), http.StatusAccepted)
	if !slices.Equal(y.Tokens, []int64{r1.Token, r2.Token}) {
		t.Fatalf("answer %+v, want both readers asked", y)
	}
	for _, ev := range s.history("kind=rwlock&name=cat&type=yield_requested") {
		if ev.Mode != "read" || ev.Owner != "writer" || ev.Reason != "schema change" {
			t.Errorf("event %+v, want a reader's hold asked by writer", ev)
		}
	}

	l := s.campaign(t, "billing", `{"candidate":"node-a"}`)
	y = testserver.WantJSON[api.YieldRequested](t, s.Do("POST", "/v1/elections/billing/yield", `{"reason":"upgrade"}`), http.StatusAccepted)
	evs = s.history("kind=election&name=billing&type=yield_requested")
	if !slices.Equal(y.Tokens, []int64{l.Token}) || len(evs) != 1 || evs[0].Term != l.Term || evs[0].Token != l.Token {
		t.Fatalf("answer %+v, history %+v, want leadership %d of term %d asked", y, evs, l.Token, l.Term)
	}
}
