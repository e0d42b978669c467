package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"testing"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testserver"
)

func TestListLocks_PagesThroughAPrefixSortedByName(t *testing.T) {
	s := newTestServer(t)
	var want []string
	tokens := map[string]int64{}
	for _, n := range []string{"job-7", "job-2", "other-1", "job-5", "job-1", "job-6", "jo", "job-3", "job-4", "jobs"} {
		l := s.acquire(n, fmt.Sprintf(`{"owner":"w-%s"}`, n))
		tokens[n] = l.Token
		if len(n) > 4 && n[:4] == "job-" {
			want = append(want, n)
		}
	}
	sort.Strings(want)

	var got []string
	cursor := ""
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("pages never end")
		}
		q := url.Values{"prefix": {"job-"}, "limit": {"3"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := s.Do("GET", "/v1/locks?"+q.Encode(), "")
		list := testserver.WantJSON[api.LockList](t, r, http.StatusOK)
		obj := testserver.RawObject(t, r.Body)
		last := len(got)+len(list.Locks) == len(want)
		if last {
			testserver.WantKeys(t, "last page", obj, []string{"locks"}, []string{"next_cursor"})
		} else {
			testserver.WantKeys(t, "page", obj, []string{"locks", "next_cursor"}, nil)
		}
		if len(list.Locks) > 3 {
			t.Fatalf("page %d has %d locks, limit 3", page, len(list.Locks))
		}
		var raw struct{ Locks []map[string]json.RawMessage }
		decodeInto(t, r.Body, &raw)
		for _, l := range raw.Locks {
			testserver.WantKeys(t, "listed lock", l, without(lockKeys, "session"), append(lockExtra, "session"))
			wantTimestamp(t, l, "expires_at")
		}
		for i, l := range list.Locks {
			if l.Token != tokens[l.Name] || l.Owner != "w-"+l.Name || l.TTL != "30s" {
				t.Errorf("page %d lock %d = %+v", page, i, l)
			}
			got = append(got, l.Name)
		}
		if list.NextCursor == "" {
			break
		}
		cursor = list.NextCursor
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}

	// Without parameters: every lock, sorted, in one page.
	all := testserver.WantJSON[api.LockList](t, s.Do("GET", "/v1/locks", ""), http.StatusOK)
	var names []string
	for _, l := range all.Locks {
		names = append(names, l.Name)
	}
	if !sort.StringsAreSorted(names) || len(names) != len(tokens) || all.NextCursor != "" {
		t.Fatalf("full list %v (next %q), want all %d locks sorted", names, all.NextCursor, len(tokens))
	}
	// Nothing held under a prefix: an empty array, not null.
	r := s.Do("GET", "/v1/locks?prefix=none", "")
	testserver.WantStatus(t, r, http.StatusOK)
	if string(testserver.RawObject(t, r.Body)["locks"]) != "[]" {
		t.Fatalf("empty list answered %s, want locks []", r.Body)
	}
}

// historyPages reads the audit trail of query page by page with limit,
// starting before before (0: from now).
func historyPages(t *testing.T, s *testServer, query string, limit int, before int64) []api.Event {
	t.Helper()
	var all []api.Event
	for page := 0; ; page++ {
		if page > 100 {
			t.Fatal("pages never end")
		}
		q := fmt.Sprintf("%s&limit=%d", query, limit)
		if before != 0 {
			q += fmt.Sprintf("&before=%d", before)
		}
		r := s.Do("GET", "/v1/history?"+q, "")
		h := testserver.WantJSON[api.History](t, r, http.StatusOK)
		// A page ends between revisions: it exceeds the limit only to
		// end its limit-th event's revision, and holds the limit unless
		// the trail ends (query has no filter that may cut it short).
		if len(h.Events) > limit && h.Events[limit-1].Revision != h.Events[len(h.Events)-1].Revision {
			t.Fatalf("page of %d events at revisions %v, limit %d", len(h.Events), revisions(h.Events), limit)
		}
		all = append(all, h.Events...)
		if h.NextBefore == 0 {
			return all
		}
		if len(h.Events) < limit {
			t.Fatalf("page of %d events at revisions %v, limit %d, before the trail's end", len(h.Events), revisions(h.Events), limit)
		}
		before = h.NextBefore
	}
}

func revisions(evs []api.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Revision
	}
	return out
}

func TestHistory_NewestFirstWithStablePaging(t *testing.T) {
	s := newTestServer(t)
	sess := s.createSession(`{"owner":"w-s"}`)
	var tokens []int64
	for i := range 3 {
		l := s.acquire("h", fmt.Sprintf(`{"owner":"w%d"}`, i))
		tokens = append(tokens, l.Token)
		s.release("h", l.Token)
	}
	l := s.acquire("h", fmt.Sprintf(`{"owner":"w-s","session":%q}`, sess.ID))
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/h/revoke", `{"reason":"audit me"}`), http.StatusNoContent)
	s.acquire("unrelated", `{"owner":"x"}`)

	r := s.Do("GET", "/v1/history?lock=h", "")
	h := testserver.WantJSON[api.History](t, r, http.StatusOK)
	obj := testserver.RawObject(t, r.Body)
	testserver.WantKeys(t, "history", obj, []string{"events"}, []string{"next_before"})
	full := h.Events
	var types []string
	for _, e := range full {
		types = append(types, e.Type)
	}
	if fmt.Sprint(types) != "[revoked acquired released acquired released acquired released acquired]" {
		t.Fatalf("types newest first: %v", types)
	}
	for i := range full {
		if full[i].Lock != "h" {
			t.Errorf("event %+v is not of lock h", full[i])
		}
		if i > 0 && full[i].Revision >= full[i-1].Revision {
			t.Errorf("revisions not newest first: %v", revisions(full))
		}
	}
	// The oldest hold's events carry its token.
	if full[7].Token != tokens[0] || full[6].Token != tokens[0] || full[7].Owner != "w0" {
		t.Errorf("oldest hold's events %+v %+v, want token %d", full[7], full[6], tokens[0])
	}
	// Event shape: every member of docs/API.md appears on the revoke of a
	// session lock; time is a timestamp.
	var raw struct{ Events []map[string]json.RawMessage }
	decodeInto(t, r.Body, &raw)
	testserver.WantKeys(t, "revoked event", raw.Events[0], eventKeys, nil)
	wantTimestamp(t, raw.Events[0], "time")
	if full[0].Token != l.Token || full[0].Session != sess.ID || full[0].Detail != "audit me" || full[0].Owner != "w-s" {
		t.Errorf("revoked event %+v", full[0])
	}
	// An acquired event without a session or detail leaves them out.
	testserver.WantKeys(t, "acquired event", raw.Events[7], without(eventKeys, "session", "detail"), []string{"session", "detail"})

	// Unfiltered, the other lock shows up too, newest first.
	if all := s.history(""); len(all) != len(full)+1 || all[0].Lock != "unrelated" {
		t.Errorf("unfiltered history %+v, want the unrelated acquire first and then h's", all)
	}

	// Pages of 3 give the same events; events added between pages do not
	// shift them (next_before pins the position).
	first := testserver.WantJSON[api.History](t, s.Do("GET", "/v1/history?lock=h&limit=3", ""), http.StatusOK)
	if len(first.Events) != 3 || first.NextBefore == 0 {
		t.Fatalf("first page %+v, want 3 events and next_before", first)
	}
	more := s.acquire("h", `{"owner":"late"}`)
	s.release("h", more.Token)
	paged := append(first.Events, historyPages(t, s, "lock=h", 3, first.NextBefore)...)
	if fmt.Sprint(revisions(paged)) != fmt.Sprint(revisions(full)) {
		t.Fatalf("paged revisions %v, want %v", revisions(paged), revisions(full))
	}
	// A fresh walk with limit 1 sees the two new events first.
	walked := historyPages(t, s, "lock=h", 1, 0)
	if len(walked) != len(full)+2 || walked[0].Type != "released" || walked[0].Owner != "late" {
		t.Fatalf("walk with limit 1: %d events starting %+v", len(walked), walked[0])
	}
}

func TestHistory_PagingKeepsEventsThatShareARevision(t *testing.T) {
	s := newTestServer(t)
	sess := s.createSession(`{"owner":"w"}`)
	body := fmt.Sprintf(`{"owner":"w","session":%q}`, sess.ID)
	for _, n := range []string{"p-a", "p-b", "p-c"} {
		s.acquire(n, body)
	}
	// Deleting the session releases its three locks in one transaction:
	// three released events at one revision.
	testserver.WantStatus(t, s.Do("DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusNoContent)
	full := s.history("")
	if len(full) != 6 {
		t.Fatalf("history %+v, want 3 acquired and 3 released", full)
	}
	for limit := 1; limit <= 6; limit++ {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			paged := historyPages(t, s, "", limit, 0)
			seen := map[string]int{}
			for _, e := range paged {
				seen[e.Type+" "+e.Lock]++
			}
			if len(paged) != len(full) || len(seen) != len(full) {
				t.Fatalf("pages of %d gave %d events %v, want each of the %d once", limit, len(paged), seen, len(full))
			}
		})
	}
}
