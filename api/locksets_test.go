package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testserver"
)

// Member names of docs/API.md's LockSet.
var lockSetKeys = []string{"names", "token", "locks"}

// TestLockSet_TakesEveryNameOrNoneAndReleasesThemTogether: a set answers
// 201 with one token on every lock, each an ordinary lock naming the set;
// a set that meets a held lock answers 409 with the holders and takes
// nothing; a waiting set shows in each queue and is granted when the
// holder releases; release, renew and their errors.
func TestLockSet_TakesEveryNameOrNoneAndReleasesThemTogether(t *testing.T) {
	s := newTestServer(t)
	r := s.Do("POST", "/v1/locksets", `{"names":["acct-2","acct-1"],"owner":"transfer","ttl":"20s","metadata":{"id":"t1"}}`)
	testserver.WantStatus(t, r, http.StatusCreated)
	testserver.WantKeys(t, "lock set", testserver.RawObject(t, r.Body), lockSetKeys, nil)
	set := testserver.DecodeAs[api.LockSet](t, r)
	if !slices.Equal(set.Names, []string{"acct-2", "acct-1"}) || len(set.Locks) != 2 || set.Locks[1].Name != "acct-1" {
		t.Fatalf("set %+v", set)
	}
	for _, name := range set.Names {
		l := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/"+name, ""), http.StatusOK)
		if l.Token != set.Token || !slices.Equal(l.Set, set.Names) || l.Metadata["id"] != "t1" || l.Owner != "transfer" {
			t.Fatalf("lock %s = %+v", name, l)
		}
	}
	p := testserver.WantProblem(t, s.Do("POST", "/v1/locksets", `{"names":["acct-3","acct-1"],"owner":"other"}`), http.StatusConflict, "lock_held")
	if len(p.Holders) != 1 || p.Holders[0].Name != "acct-1" || p.Holders[0].Token != set.Token || p.Holder != nil {
		t.Fatalf("lock_held %+v, want acct-1's holder", p)
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/acct-3", ""), http.StatusNotFound, "not_held")

	waiting := make(chan *testserver.Response, 1)
	go func() {
		waiting <- s.Do("POST", "/v1/locksets", `{"names":["acct-3","acct-1"],"owner":"next","wait":"30s"}`)
	}()
	poll.Until(t, 10*time.Second, "the set waits in both queues", func() bool { return s.waiters("acct-1") == 1 && s.waiters("acct-3") == 1 })
	l := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/acct-1", ""), http.StatusOK)
	if len(l.Waiters) != 1 || !slices.Equal(l.Waiters[0].Set, []string{"acct-3", "acct-1"}) {
		t.Fatalf("waiters %+v", l.Waiters)
	}
	renewed := testserver.WantJSON[api.LockSet](t, s.Do("POST", "/v1/locksets/renew", fmt.Sprintf(`{"names":["acct-1","acct-2"],"token":%d}`, set.Token)), http.StatusOK)
	if renewed.Token != set.Token || len(renewed.Locks) != 2 {
		t.Fatalf("renewed %+v", renewed)
	}
	testserver.WantProblem(t, s.Do("POST", "/v1/locksets/release", fmt.Sprintf(`{"names":["acct-1","acct-2"],"token":%d}`, set.Token+1)), http.StatusConflict, "token_mismatch")
	testserver.WantStatus(t, s.Do("POST", "/v1/locksets/release", fmt.Sprintf(`{"names":["acct-1","acct-2"],"token":%d}`, set.Token)), http.StatusNoContent)
	next := testserver.WantJSON[api.LockSet](t, <-waiting, http.StatusCreated)
	if next.Token <= set.Token {
		t.Fatalf("next set's token %d, not above %d", next.Token, set.Token)
	}
	// acct-1 is the next set's now, acct-2 nobody's.
	testserver.WantProblem(t, s.Do("POST", "/v1/locksets/release", fmt.Sprintf(`{"names":["acct-1","acct-2"],"token":%d}`, set.Token)), http.StatusConflict, "token_mismatch")
	// A member revoked on its own: the set is no longer whole.
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/acct-3/revoke", `{"reason":"test"}`), http.StatusNoContent)
	p = testserver.WantProblem(t, s.Do("POST", "/v1/locksets/renew", fmt.Sprintf(`{"names":["acct-3","acct-1"],"token":%d}`, next.Token)), http.StatusNotFound, "not_held")
	if !strings.Contains(p.Detail, "acct-3") {
		t.Fatalf("detail %q does not name the lost lock", p.Detail)
	}
	testserver.WantStatus(t, s.Do("POST", "/v1/locksets/release", fmt.Sprintf(`{"names":["acct-3","acct-1"],"token":%d}`, next.Token)), http.StatusNoContent)
	testserver.WantProblem(t, s.Do("POST", "/v1/locksets/release", fmt.Sprintf(`{"names":["acct-3","acct-1"],"token":%d}`, next.Token)), http.StatusNotFound, "not_held")
	acquired := s.history("type=acquired")
	at := map[int64]int{}
	for _, ev := range acquired {
		if len(ev.Set) > 0 {
			at[ev.Revision]++
		}
	}
	if len(at) != 2 || at[set.Token] != 2 || at[next.Token] != 2 {
		t.Fatalf("set members' acquired events by revision: %v", at)
	}
}

// TestLockSet_InASessionIsIdempotent: the session that holds a set gets
// it again with 200, whatever the order of names.
func TestLockSet_InASessionIsIdempotent(t *testing.T) {
	s := newTestServer(t)
	sess := s.createSession(`{"owner":"w","ttl":"30s"}`)
	body := func(names string) string { return fmt.Sprintf(`{"names":%s,"session":%q}`, names, sess.ID) }
	first := testserver.WantJSON[api.LockSet](t, s.Do("POST", "/v1/locksets", body(`["s1","s2"]`)), http.StatusCreated)
	again := testserver.WantJSON[api.LockSet](t, s.Do("POST", "/v1/locksets", body(`["s2","s1"]`)), http.StatusOK)
	if again.Token != first.Token || again.Locks[0].Name != "s2" || again.Locks[0].Session != sess.ID {
		t.Fatalf("again %+v, first %+v", again, first)
	}
	got := testserver.WantJSON[api.Session](t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusOK)
	if !slices.Equal(got.Locks, []string{"s1", "s2"}) {
		t.Fatalf("session locks %v", got.Locks)
	}
}

func TestLockSet_BadInputNamesTheFieldAndWritesNothing(t *testing.T) {
	s := newTestServer(t)
	sess := s.createSession(`{"owner":"w"}`)
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("n%d", i))
	}
	rows := []badRequest{
		{rule: "no names", method: "POST", path: "/v1/locksets", body: `{"owner":"w"}`, field: "names"},
		{rule: "one name", method: "POST", path: "/v1/locksets", body: `{"names":["a"]}`, field: "names"},
		{rule: "65 names", method: "POST", path: "/v1/locksets", body: `{"names":[` + strings.Join(many, ",") + `]}`, field: "names"},
		{rule: "a name twice", method: "POST", path: "/v1/locksets", body: `{"names":["a","b","a"]}`, field: "names"},
		{rule: "an invalid name", method: "POST", path: "/v1/locksets", body: `{"names":["a","b c"]}`, field: "names"},
		{rule: "an empty name", method: "POST", path: "/v1/locksets", body: `{"names":["a",""]}`, field: "names"},
		{rule: "names not strings", method: "POST", path: "/v1/locksets", body: `{"names":[1,2]}`, field: "names"},
		{rule: "names not a list", method: "POST", path: "/v1/locksets", body: `{"names":"a,b"}`, field: "names"},
		{rule: "a lock_delay", method: "POST", path: "/v1/locksets", body: `{"names":["a","b"],"lock_delay":"1s"}`, field: "lock_delay"},
		{rule: "ttl with a session", method: "POST", path: "/v1/locksets", body: fmt.Sprintf(`{"names":["a","b"],"ttl":"10s","session":%q}`, sess.ID), field: "ttl"},
		{rule: "wait too long", method: "POST", path: "/v1/locksets", body: `{"names":["a","b"],"wait":"6m"}`, field: "wait"},
		{rule: "ttl too short", method: "POST", path: "/v1/locksets", body: `{"names":["a","b"],"ttl":"1s"}`, field: "ttl"},
		{rule: "a bad session", method: "POST", path: "/v1/locksets", body: `{"names":["a","b"],"session":"zz"}`, field: "session"},
		{rule: "an unknown query parameter", method: "POST", path: "/v1/locksets?wait=1s", body: `{"names":["a","b"]}`, field: "wait"},
		{rule: "release without a token", method: "POST", path: "/v1/locksets/release", body: `{"names":["a","b"]}`, field: "token"},
		{rule: "release with token 0", method: "POST", path: "/v1/locksets/release", body: `{"names":["a","b"],"token":0}`, field: "token"},
		{rule: "release with one name", method: "POST", path: "/v1/locksets/release", body: `{"names":["a"],"token":5}`, field: "names"},
		{rule: "renew without names", method: "POST", path: "/v1/locksets/renew", body: `{"token":5}`, field: "names"},
		{rule: "renew with a name twice", method: "POST", path: "/v1/locksets/renew", body: `{"names":["a","a"],"token":5}`, field: "names"},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) { checkBadRequest(t, s, row) })
	}
}
