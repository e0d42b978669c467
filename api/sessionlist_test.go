package api_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testserver"
)

// listedSessionKeys are the members of a listed session: a Session's but
// `locks`, which only GET /v1/sessions/{id} reads.
var listedSessionKeys = without(sessionKeys, "locks")

// listSessions pages through GET /v1/sessions with q (limit and prefix)
// and returns the sessions in the order listed, checking each page's shape.
func (s *testServer) listSessions(q url.Values) []api.ListedSession {
	s.t.Helper()
	t := s.t
	var got []api.ListedSession
	cursor := ""
	for page := 0; ; page++ {
		if page > 50 {
			t.Fatal("pages never end")
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := s.Do("GET", "/v1/sessions?"+q.Encode(), "")
		list := testserver.WantJSON[api.SessionList](t, r, http.StatusOK)
		var raw struct{ Sessions []map[string]json.RawMessage }
		decodeInto(t, r.Body, &raw)
		for _, obj := range raw.Sessions {
			testserver.WantKeys(t, "listed session", obj, listedSessionKeys, []string{"created_at"})
			// etcd's lessor ends a lease up to 500ms after its TTL
			// reaches 0; until then it is listed expiring about now.
			if exp := wantTimestamp(t, obj, "expires_at"); time.Until(exp) < -time.Second {
				t.Errorf("listed session expired at %v", exp)
			}
		}
		got = append(got, list.Sessions...)
		if list.NextCursor == "" {
			return got
		}
		cursor = list.NextCursor
	}
}

func ownersAndIDs(ss []api.ListedSession) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Owner + "/" + s.ID
	}
	return out
}

func TestListSessions_PagesByOwnerPrefixWithCursors(t *testing.T) {
	s := newTestServer(t)
	var all, workers []string
	for _, o := range []string{"worker-2", "batch", "worker-1", "worker-10", "worker-1", "work", "worker-3"} {
		sess := s.createSession(`{"ttl":"30s","owner":"` + o + `"}`)
		all = append(all, o+"\x00"+sess.ID)
		if strings.HasPrefix(o, "worker-") {
			workers = append(workers, o+"\x00"+sess.ID)
		}
	}
	// The listing's order: by owner, then by ID.
	slices.Sort(all)
	slices.Sort(workers)
	slash := func(ks []string) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = strings.Replace(k, "\x00", "/", 1)
		}
		return out
	}

	r := s.Do("GET", "/v1/sessions?limit=2&prefix=worker-", "")
	first := testserver.WantJSON[api.SessionList](t, r, http.StatusOK)
	testserver.WantKeys(t, "page", testserver.RawObject(t, r.Body), []string{"sessions", "next_cursor"}, nil)
	if len(first.Sessions) != 2 {
		t.Fatalf("first page has %d sessions, want 2", len(first.Sessions))
	}
	if got := ownersAndIDs(s.listSessions(url.Values{"limit": {"2"}, "prefix": {"worker-"}})); !slices.Equal(got, slash(workers)) {
		t.Errorf("prefix worker-, limit 2: listed %v, want %v", got, slash(workers))
	}
	if got := ownersAndIDs(s.listSessions(url.Values{"limit": {"3"}})); !slices.Equal(got, slash(all)) {
		t.Errorf("limit 3: listed %v, want %v", got, slash(all))
	}
	r = s.Do("GET", "/v1/sessions", "")
	list := testserver.WantJSON[api.SessionList](t, r, http.StatusOK)
	testserver.WantKeys(t, "last page", testserver.RawObject(t, r.Body), []string{"sessions"}, nil)
	if got := ownersAndIDs(list.Sessions); !slices.Equal(got, slash(all)) {
		t.Errorf("default limit: listed %v, want %v", got, slash(all))
	}
	for _, l := range list.Sessions {
		if l.TTL != "30s" {
			t.Errorf("listed %+v, want ttl 30s", l)
		}
	}
	// An owner prefix is any printable text, escaped in the query.
	s.createSession(`{"ttl":"30s","owner":"team a/ü"}`)
	if got := s.listSessions(url.Values{"prefix": {"team a/"}}); len(got) != 1 || got[0].Owner != "team a/ü" {
		t.Errorf("prefix \"team a/\": listed %+v, want the session of \"team a/ü\"", got)
	}
	if got := s.listSessions(url.Values{"prefix": {"nobody"}}); len(got) != 0 {
		t.Errorf("prefix nobody: listed %+v, want none", got)
	}
}

func TestListSessions_DeletedSessionLeavesTheList(t *testing.T) {
	s := newTestServer(t)
	a := s.createSession(`{"ttl":"30s","owner":"w-a"}`)
	b := s.createSession(`{"ttl":"30s","owner":"w-b"}`)
	s.acquire("in-b", `{"owner":"w-b","session":"`+b.ID+`"}`)
	if got := s.listSessions(url.Values{}); len(got) != 2 {
		t.Fatalf("listed %+v, want 2 sessions", got)
	}
	testserver.WantStatus(t, s.Do("DELETE", "/v1/sessions/"+b.ID, ""), http.StatusNoContent)
	if got := ownersAndIDs(s.listSessions(url.Values{})); !slices.Equal(got, []string{"w-a/" + a.ID}) {
		t.Errorf("after deleting w-b's session: listed %v, want only w-a's", got)
	}
}

func TestListSessions_ExpiredSessionLeavesTheList(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	s := newTestServer(t)
	short := s.createSession(`{"ttl":"2s","owner":"w-short"}`)
	if got := s.listSessions(url.Values{}); len(got) != 1 || got[0].ID != short.ID {
		t.Fatalf("listed %+v, want the 2s session", got)
	}
	poll.Until(t, 10*time.Second, "rid of the expired session", func() bool {
		return len(s.listSessions(url.Values{})) == 0
	})
}

func TestListSessions_BadQueryAnswers400NamingTheField(t *testing.T) {
	s := newTestServer(t)
	s.createSession(`{"ttl":"30s","owner":"w1"}`)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct{ query, field string }{
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=-5", "limit"},
		{"limit=ten", "limit"},
		{"cursor=%21%21%21", "cursor"},           // not base64
		{"cursor=" + b64("w1"), "cursor"},        // no session ID
		{"cursor=" + b64("w1\x00xyz"), "cursor"}, // not a lease ID
		{"cursor=" + b64("\x00694d"), "cursor"},  // no owner
		{"prefix=%01", "prefix"},                 // not printable
		{"prefix=" + url.QueryEscape(strings.Repeat("o", 129)), "prefix"},
		{"owner=w1", "owner"}, // unknown parameter
		{"limit=1&limit=2", "limit"},
	} {
		r := s.Do("GET", "/v1/sessions?"+c.query, "")
		p := testserver.WantProblem(t, r, http.StatusBadRequest, "invalid_request")
		if p.Field != c.field {
			t.Errorf("?%s: field %q, want %q (%s)", c.query, p.Field, c.field, p.Detail)
		}
	}
}
