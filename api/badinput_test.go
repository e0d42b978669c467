package api_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testserver"
)

// badRequest is one request that breaks one rule of docs/API.md.
type badRequest struct {
	rule        string
	method      string
	path        string
	body        string
	contentType string // default application/json when there is a body
	status      int    // default 400
	code        string // default invalid_request
	field       string // the member naming the culprit; "" for none
}

func metadataPairs(n, valueLen int) string {
	pairs := make([]string, n)
	for i := range pairs {
		pairs[i] = fmt.Sprintf("%q:%q", fmt.Sprintf("k%d", i), strings.Repeat("v", valueLen))
	}
	return `{"metadata":{` + strings.Join(pairs, ",") + `}}`
}

func TestBadInput_AnswersProblemNamingTheFieldAndWritesNothing(t *testing.T) {
	s := newTestServer(t)
	sess := s.createSession(`{"owner":"w"}`)
	held := s.acquire("held", `{"owner":"w"}`)
	testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":1}`, held.Token)), http.StatusOK)
	testserver.WantJSON[api.Key](t, s.Do("PUT", "/v1/kv/config/db", `{"value":1}`), http.StatusCreated)
	for _, row := range slices.Concat(badLockRequests(sess, held), badOtherRequests(sess, held), badKeyRequests(held)) {
		t.Run(row.rule, func(t *testing.T) { checkBadRequest(t, s, row) })
	}
	// Nothing changed hands either.
	if got := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/held", ""), http.StatusOK); got.Token != held.Token {
		t.Fatalf("held lock's token %d, want %d", got.Token, held.Token)
	}
	if got := testserver.WantJSON[api.FencedValue](t, s.Do("GET", "/v1/fenced/ledger", ""), http.StatusOK); string(got.Value) != "1" {
		t.Fatalf("fenced value %s, want 1", got.Value)
	}
	if got := testserver.WantJSON[api.KeyList](t, s.Do("GET", "/v1/kv", ""), http.StatusOK); len(got.Keys) != 1 || got.Keys[0].Version != 1 || string(got.Keys[0].Value) != "1" {
		t.Fatalf("keys %+v, want config/db alone, as first written", got.Keys)
	}
}

// badKeyRequests break the rules of keys: their names, values, compares,
// fences and queries.
func badKeyRequests(held api.Lock) []badRequest {
	return []badRequest{
		{rule: "key with an empty segment", method: "PUT", path: "/v1/kv/config//db", body: `{"value":1}`, field: "key"},
		{rule: "key ending in a slash", method: "PUT", path: "/v1/kv/config/", body: `{"value":1}`, field: "key"},
		{rule: "key with a space", method: "PUT", path: "/v1/kv/config%20db", body: `{"value":1}`, field: "key"},
		{rule: "key over 512 bytes", method: "PUT", path: "/v1/kv/" + strings.Repeat("a/", 256) + "a", body: `{"value":1}`, field: "key"},
		{rule: "key named events", method: "PUT", path: "/v1/kv/events", body: `{"value":1}`, field: "key"},
		{rule: "key without value", method: "PUT", path: "/v1/kv/config/db", body: `{"session":""}`, field: "value"},
		{rule: "key value not JSON", method: "PUT", path: "/v1/kv/config/db", body: `{"value":nope}`, field: "body"},
		{rule: "key unknown field", method: "PUT", path: "/v1/kv/config/db", body: `{"value":1,"ttl":"5s"}`, field: "ttl"},
		{rule: "key field in another case", method: "PUT", path: "/v1/kv/config/db", body: `{"value":1,"Lock":"x","token":1}`, field: "Lock"},
		{rule: "key negative if_revision", method: "PUT", path: "/v1/kv/config/db", body: `{"value":2,"if_revision":-1}`, field: "if_revision"},
		{rule: "key session not an ID", method: "PUT", path: "/v1/kv/config/db", body: `{"value":2,"session":"nope"}`, field: "session"},
		{rule: "key fenced without token", method: "PUT", path: "/v1/kv/config/db", body: `{"value":2,"lock":"held"}`, field: "token"},
		{rule: "key token without hold", method: "PUT", path: "/v1/kv/config/db", body: fmt.Sprintf(`{"value":2,"token":%d}`, held.Token), field: "token"},
		{rule: "key fenced twice", method: "PUT", path: "/v1/kv/config/db", body: fmt.Sprintf(`{"value":2,"lock":"held","election":"e","token":%d}`, held.Token), field: "election"},
		{rule: "key fenced by a bad name", method: "PUT", path: "/v1/kv/config/db", body: fmt.Sprintf(`{"value":2,"lock":"a/b","token":%d}`, held.Token), field: "lock"},
		{rule: "key value over 64 KiB", method: "PUT", path: "/v1/kv/config/db", body: fmt.Sprintf(`{"value":"%s"}`, strings.Repeat("v", 65<<10)), field: "value", status: http.StatusRequestEntityTooLarge, code: "value_too_large"},
		{rule: "key wait without wait_revision", method: "GET", path: "/v1/kv/config/db?wait=1s", field: "wait"},
		{rule: "key wait_revision not a number", method: "GET", path: "/v1/kv/config/db?wait_revision=x", field: "wait_revision"},
		{rule: "key wait not a duration", method: "GET", path: "/v1/kv/config/db?wait_revision=1&wait=soon", field: "wait"},
		{rule: "key if_revision 0 on delete", method: "DELETE", path: "/v1/kv/config/db?if_revision=0", field: "if_revision"},
		{rule: "key unknown query", method: "DELETE", path: "/v1/kv/config/db?force=1", field: "force"},
		{rule: "keys bad prefix", method: "GET", path: "/v1/kv?prefix=a//b", field: "prefix"},
		{rule: "keys bad cursor", method: "GET", path: "/v1/kv?cursor=!!", field: "cursor"},
		{rule: "keys limit 0", method: "GET", path: "/v1/kv?limit=0", field: "limit"},
		{rule: "key events bad prefix", method: "GET", path: "/v1/kv/events?prefix=a//", field: "prefix"},
	}
}

// badLockRequests break the rules of acquire, get, renew, release and
// revoke.
func badLockRequests(sess api.Session, held api.Lock) []badRequest {
	long := strings.Repeat("a", 129)
	return []badRequest{
		// Acquire: strict JSON.
		{rule: "unknown body field", method: "POST", path: "/v1/locks/x", body: `{"owner":"w","colour":"red"}`, field: "colour"},
		{rule: "unknown query parameter on acquire", method: "POST", path: "/v1/locks/x?wait=10s", body: `{"owner":"w"}`, field: "wait"},
		{rule: "owner of the wrong type", method: "POST", path: "/v1/locks/x", body: `{"owner":5}`, field: "owner"},
		{rule: "ttl of the wrong type", method: "POST", path: "/v1/locks/x", body: `{"ttl":30}`, field: "ttl"},
		{rule: "metadata of the wrong type", method: "POST", path: "/v1/locks/x", body: `{"metadata":["a"]}`, field: "metadata"},
		{rule: "metadata value of the wrong type", method: "POST", path: "/v1/locks/x", body: `{"metadata":{"k":1}}`, field: "metadata.k"},
		{rule: "metadata value nested", method: "POST", path: "/v1/locks/x", body: `{"metadata":{"a":"x","k":{"n":"v"}}}`, field: "metadata.k"},
		{rule: "body that is no object", method: "POST", path: "/v1/locks/x", body: `["owner"]`, field: "body"},
		{rule: "invalid JSON", method: "POST", path: "/v1/locks/x", body: `{"owner":}`, field: "body"},
		{rule: "truncated JSON", method: "POST", path: "/v1/locks/x", body: `{"owner":"w"`, field: "body"},
		{rule: "trailing object", method: "POST", path: "/v1/locks/x", body: `{"owner":"w"} {"owner":"v"}`, field: "body"},
		{rule: "trailing brace", method: "POST", path: "/v1/locks/x", body: `{"owner":"w"}}`, field: "body"},
		{rule: "trailing bracket", method: "POST", path: "/v1/locks/x", body: `{"owner":"w"}]`, field: "body"},
		{rule: "body that is not JSON", method: "POST", path: "/v1/locks/x", body: `<lock/>`, contentType: "application/xml", status: 415, code: "unsupported_media_type"},
		// Acquire: the rules of names, owners, metadata and durations.
		{rule: "name too long", method: "POST", path: "/v1/locks/" + long, body: `{}`, field: "name"},
		{rule: "name with a bad character", method: "POST", path: "/v1/locks/a!b", body: `{}`, field: "name"},
		{rule: "name with a non-ASCII character", method: "POST", path: "/v1/locks/caf%C3%A9", body: `{}`, field: "name"},
		{rule: "owner too long", method: "POST", path: "/v1/locks/x", body: `{"owner":"` + long + `"}`, field: "owner"},
		{rule: "owner not printable", method: "POST", path: "/v1/locks/x", body: `{"owner":"bell\u0007"}`, field: "owner"},
		{rule: "owner empty", method: "POST", path: "/v1/locks/x", body: `{"owner":""}`, field: "owner"},
		{rule: "metadata with 17 pairs", method: "POST", path: "/v1/locks/x", body: metadataPairs(17, 1), field: "metadata"},
		{rule: "metadata over 4 KiB", method: "POST", path: "/v1/locks/x", body: metadataPairs(2, 2100), field: "metadata"},
		{rule: "metadata with an empty key", method: "POST", path: "/v1/locks/x", body: `{"metadata":{"":"v"}}`, field: "metadata"},
		{rule: "ttl below 2s", method: "POST", path: "/v1/locks/x", body: `{"ttl":"1s"}`, field: "ttl"},
		{rule: "ttl zero", method: "POST", path: "/v1/locks/x", body: `{"ttl":"0s"}`, field: "ttl"},
		{rule: "ttl above 24h", method: "POST", path: "/v1/locks/x", body: `{"ttl":"25h"}`, field: "ttl"},
		{rule: "ttl not a duration", method: "POST", path: "/v1/locks/x", body: `{"ttl":"abc"}`, field: "ttl"},
		{rule: "ttl with a session", method: "POST", path: "/v1/locks/x", body: fmt.Sprintf(`{"ttl":"30s","session":%q}`, sess.ID), field: "ttl"},
		{rule: "session not an ID", method: "POST", path: "/v1/locks/x", body: `{"session":"zz"}`, field: "session"},
		{rule: "session empty", method: "POST", path: "/v1/locks/x", body: `{"session":""}`, field: "session"},
		{rule: "wait above 5m", method: "POST", path: "/v1/locks/x", body: `{"wait":"6m"}`, field: "wait"},
		{rule: "wait negative", method: "POST", path: "/v1/locks/held", body: `{"wait":"-1s"}`, field: "wait"},
		{rule: "keep_place without a session", method: "POST", path: "/v1/locks/held", body: `{"wait":"1s","keep_place":true}`, field: "keep_place"},
		{rule: "keep_place without a wait", method: "POST", path: "/v1/locks/held", body: fmt.Sprintf(`{"session":%q,"keep_place":true}`, sess.ID), field: "keep_place"},
		{rule: "keep_place of the wrong type", method: "POST", path: "/v1/locks/held", body: `{"keep_place":"yes"}`, field: "keep_place"},
		{rule: "keep_place on a lock set", method: "POST", path: "/v1/locksets", body: `{"names":["a","b"],"keep_place":true}`, field: "keep_place"},
		{rule: "lock_delay negative", method: "POST", path: "/v1/locks/x", body: `{"lock_delay":"-1s"}`, field: "lock_delay"},
		{rule: "lock_delay not a duration", method: "POST", path: "/v1/locks/x", body: `{"lock_delay":"soon"}`, field: "lock_delay"},
		{rule: "min_hold negative", method: "POST", path: "/v1/locks/x", body: `{"min_hold":"-1s"}`, field: "min_hold"},
		{rule: "min_hold above 24h", method: "POST", path: "/v1/locks/x", body: `{"min_hold":"25h"}`, field: "min_hold"},
		{rule: "min_hold not a duration", method: "POST", path: "/v1/locks/x", body: `{"min_hold":"5 minutes"}`, field: "min_hold"},
		{rule: "min_hold on a campaign, negative", method: "POST", path: "/v1/elections/x/campaign", body: `{"min_hold":"-1s"}`, field: "min_hold"},
		{rule: "min_hold on a lock set, not a duration", method: "POST", path: "/v1/locksets", body: `{"names":["a","b"],"min_hold":"1d"}`, field: "min_hold"},

		// Get, renew, release, revoke.
		{rule: "unknown query parameter on get", method: "GET", path: "/v1/locks/held?verbose=1", field: "verbose"},
		{rule: "get with a bad name", method: "GET", path: "/v1/locks/a!b", field: "name"},
		{rule: "renew without token", method: "POST", path: "/v1/locks/held/renew", body: `{}`, field: "token"},
		{rule: "renew without body", method: "POST", path: "/v1/locks/held/renew", field: "body"},
		{rule: "renew with a string token", method: "POST", path: "/v1/locks/held/renew", body: fmt.Sprintf(`{"token":"%d"}`, held.Token), field: "token"},
		{rule: "renew with a fractional token", method: "POST", path: "/v1/locks/held/renew", body: `{"token":1.5}`, field: "token"},
		{rule: "renew with token 0", method: "POST", path: "/v1/locks/held/renew", body: `{"token":0}`, field: "token"},
		{rule: "renew with an unknown field", method: "POST", path: "/v1/locks/held/renew", body: fmt.Sprintf(`{"token":%d,"ttl":"1h"}`, held.Token), field: "ttl"},
		{rule: "unknown query parameter on renew", method: "POST", path: "/v1/locks/held/renew?ttl=1h", body: fmt.Sprintf(`{"token":%d}`, held.Token), field: "ttl"},
		{rule: "release without token", method: "DELETE", path: "/v1/locks/held", field: "token"},
		{rule: "release with token abc", method: "DELETE", path: "/v1/locks/held?token=abc", field: "token"},
		{rule: "release with token 0", method: "DELETE", path: "/v1/locks/held?token=0", field: "token"},
		{rule: "release with token -1", method: "DELETE", path: "/v1/locks/held?token=-1", field: "token"},
		{rule: "release with token twice", method: "DELETE", path: fmt.Sprintf("/v1/locks/held?token=%d&token=%d", held.Token, held.Token), field: "token"},
		{rule: "release with an unknown query parameter", method: "DELETE", path: fmt.Sprintf("/v1/locks/held?token=%d&force=1", held.Token), field: "force"},
		{rule: "release with a bad name", method: "DELETE", path: "/v1/locks/a!b?token=5", field: "name"},
		{rule: "revoke with a reason over 1 KiB", method: "POST", path: "/v1/locks/held/revoke", body: `{"reason":"` + strings.Repeat("r", 1025) + `"}`, field: "reason"},
		{rule: "revoke with an unknown field", method: "POST", path: "/v1/locks/held/revoke", body: `{"why":"x"}`, field: "why"},
		{rule: "unknown query parameter on revoke", method: "POST", path: "/v1/locks/held/revoke?reason=x", field: "reason"},
	}
}

// badOtherRequests break the rules of listings, history, sessions,
// fenced values and the cluster.
func badOtherRequests(sess api.Session, held api.Lock) []badRequest {
	long := strings.Repeat("a", 129)
	return []badRequest{
		// List.
		{rule: "list with limit 0", method: "GET", path: "/v1/locks?limit=0", field: "limit"},
		{rule: "list with limit 1001", method: "GET", path: "/v1/locks?limit=1001", field: "limit"},
		{rule: "list with limit x", method: "GET", path: "/v1/locks?limit=x", field: "limit"},
		{rule: "list with a cursor that is not base64", method: "GET", path: "/v1/locks?cursor=!!!", field: "cursor"},
		{rule: "list with a cursor that is no name", method: "GET", path: "/v1/locks?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("a b")), field: "cursor"},
		{rule: "list with a bad prefix", method: "GET", path: "/v1/locks?prefix=a!", field: "prefix"},
		{rule: "list with an unknown query parameter", method: "GET", path: "/v1/locks?sort=name", field: "sort"},

		// History.
		{rule: "history with limit 0", method: "GET", path: "/v1/history?limit=0", field: "limit"},
		{rule: "history with limit 1001", method: "GET", path: "/v1/history?limit=1001", field: "limit"},
		{rule: "history with limit x", method: "GET", path: "/v1/history?limit=x", field: "limit"},
		{rule: "history with before x", method: "GET", path: "/v1/history?before=x", field: "before"},
		{rule: "history with before 0", method: "GET", path: "/v1/history?before=0", field: "before"},
		{rule: "history with before -1", method: "GET", path: "/v1/history?before=-1", field: "before"},
		{rule: "history with a bad lock", method: "GET", path: "/v1/history?lock=a!b", field: "lock"},
		{rule: "history with an unknown query parameter", method: "GET", path: "/v1/history?after=1", field: "after"},

		// Sessions.
		{rule: "session ttl below 2s", method: "POST", path: "/v1/sessions", body: `{"ttl":"1s"}`, field: "ttl"},
		{rule: "session ttl above 24h", method: "POST", path: "/v1/sessions", body: `{"ttl":"25h"}`, field: "ttl"},
		{rule: "session ttl not a duration", method: "POST", path: "/v1/sessions", body: `{"ttl":"abc"}`, field: "ttl"},
		{rule: "session ttl of the wrong type", method: "POST", path: "/v1/sessions", body: `{"ttl":30}`, field: "ttl"},
		{rule: "session owner too long", method: "POST", path: "/v1/sessions", body: `{"owner":"` + long + `"}`, field: "owner"},
		{rule: "session with an unknown field", method: "POST", path: "/v1/sessions", body: `{"owner":"w","locks":["a"]}`, field: "locks"},
		{rule: "unknown query parameter on session create", method: "POST", path: "/v1/sessions?ttl=1h", body: `{"owner":"w"}`, field: "ttl"},
		{rule: "unknown query parameter on session get", method: "GET", path: "/v1/sessions/" + sess.ID + "?verbose=1", field: "verbose"},
		{rule: "unknown query parameter on session renew", method: "POST", path: "/v1/sessions/" + sess.ID + "/renew?ttl=1h", field: "ttl"},
		{rule: "unknown query parameter on session delete", method: "DELETE", path: "/v1/sessions/" + sess.ID + "?force=1", field: "force"},
		{rule: "session renew with a body field", method: "POST", path: "/v1/sessions/" + sess.ID + "/renew", body: `{"ttl":"1h"}`, field: "ttl"},

		// Fenced values.
		{rule: "fenced without value", method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d}`, held.Token), field: "value"},
		{rule: "fenced without token", method: "PUT", path: "/v1/fenced/ledger", body: `{"value":1}`, field: "token"},
		{rule: "fenced with token 0", method: "PUT", path: "/v1/fenced/ledger", body: `{"token":0,"value":1}`, field: "token"},
		{rule: "fenced with a string token", method: "PUT", path: "/v1/fenced/ledger", body: `{"token":"1","value":1}`, field: "token"},
		{rule: "fenced value not JSON", method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d,"value":nope}`, held.Token), field: "body"},
		{rule: "fenced value over 32 KiB", method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d,"value":"%s"}`, held.Token, strings.Repeat("v", 33<<10)), field: "value", status: http.StatusRequestEntityTooLarge, code: "value_too_large"},
		{rule: "fenced with a bad lock name", method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d,"value":1,"lock":"a!b"}`, held.Token), field: "lock"},
		{rule: "fenced with a bad resource name", method: "PUT", path: "/v1/fenced/a!b", body: fmt.Sprintf(`{"token":%d,"value":1}`, held.Token), field: "resource"},
		{rule: "fenced with an unknown field", method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d,"value":1,"force":true}`, held.Token), field: "force"},
		{rule: "fenced without body", method: "PUT", path: "/v1/fenced/ledger", field: "body"},
		{rule: "unknown query parameter on fenced write", method: "PUT", path: "/v1/fenced/ledger?token=1", body: fmt.Sprintf(`{"token":%d,"value":2}`, held.Token), field: "token"},
		{rule: "unknown query parameter on fenced read", method: "GET", path: "/v1/fenced/ledger?at=1", field: "at"},
		{rule: "unknown query parameter on cluster", method: "GET", path: "/v1/cluster?verbose=1", field: "verbose"},
		{rule: "fenced read with a bad resource name", method: "GET", path: "/v1/fenced/a!b", field: "resource"},
	}
}

// checkBadRequest sends row, which must answer its problem naming its
// field, and write nothing: no key and no lease.
func checkBadRequest(t *testing.T, s *testServer, row badRequest) {
	keys, leases := s.Keys(), s.Leases()
	var rd *strings.Reader
	if row.body != "" {
		rd = strings.NewReader(row.body)
	}
	req := httptest.NewRequest(row.method, row.path, nil)
	if rd != nil {
		req = httptest.NewRequest(row.method, row.path, rd)
		ct := row.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	r := s.Serve(req)
	status, code := row.status, row.code
	if status == 0 {
		status, code = http.StatusBadRequest, "invalid_request"
	}
	p := testserver.WantProblem(t, r, status, code)
	if p.Field != row.field {
		t.Errorf("field = %q, want %q (detail %q)", p.Field, row.field, p.Detail)
	}
	switch {
	case row.field == "body":
		if !strings.Contains(p.Detail, "JSON") && !strings.Contains(p.Detail, "body") {
			t.Errorf("detail %q does not say what is wrong with the body", p.Detail)
		}
	case row.field != "" && !strings.Contains(p.Detail, row.field):
		t.Errorf("detail %q does not name %q", p.Detail, row.field)
	}
	if bytes.Contains(r.Body, []byte("etcdserver")) || bytes.Contains(r.Body, []byte("rpc error")) {
		t.Errorf("problem leaks etcd's error: %s", r.Body)
	}
	for k := range s.Keys() {
		if !keys[k] {
			t.Errorf("key %s written by a bad request", k)
		}
	}
	for id := range s.Leases() {
		if !leases[id] {
			t.Errorf("lease %x granted for a bad request", id)
		}
	}
}

// TestBadInput_ANestedMetadataValueIsNamed: the problem names the member
// at fault and says what its values must be, not that metadata must be a
// string.
func TestBadInput_ANestedMetadataValueIsNamed(t *testing.T) {
	s := newTestServer(t)
	p := testserver.WantProblem(t, s.Do("POST", "/v1/locks/x", `{"metadata":{"env":"prod","owner":{"team":"db"}}}`), http.StatusBadRequest, "invalid_request")
	if want := "metadata.owner: values of metadata must be strings, not a JSON object"; p.Field != "metadata.owner" || p.Detail != want {
		t.Errorf("field %q, detail %q; want metadata.owner and %q", p.Field, p.Detail, want)
	}
}

func TestBadInput_BodyOver64KiBAnswers413(t *testing.T) {
	s := newTestServer(t)
	held := s.acquire("held", `{"owner":"w"}`)
	huge := strings.Repeat("x", api.MaxBodyBytes)
	for _, row := range []struct{ method, path, body string }{
		{"POST", "/v1/locks/x", `{"owner":"w","metadata":{"k":"` + huge + `"}}`},
		{"POST", "/v1/locks/held/renew", fmt.Sprintf(`{"token":%d,"pad":"%s"}`, held.Token, huge)},
		{"POST", "/v1/locks/held/revoke", `{"reason":"` + huge + `"}`},
		{"POST", "/v1/sessions", `{"owner":"` + huge + `"}`},
		{"PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":"%s"}`, held.Token, huge)},
		{"PUT", "/v1/fenced/ledger", strings.Repeat(" ", api.MaxBodyBytes+1)},
	} {
		t.Run(row.method+" "+row.path, func(t *testing.T) {
			keys := s.Keys()
			req := httptest.NewRequest(row.method, row.path, strings.NewReader(row.body))
			req.Header.Set("Content-Type", "application/json")
			testserver.WantProblem(t, s.Serve(req), http.StatusRequestEntityTooLarge, "body_too_large")
			for k := range s.Keys() {
				if !keys[k] {
					t.Errorf("key %s written by a request that was too large", k)
				}
			}
		})
	}
	// Over a real connection too.
	testserver.WantProblem(t, s.Do("POST", "/v1/locks/x", `{"owner":"`+huge+`"}`), http.StatusRequestEntityTooLarge, "body_too_large")
	// Exactly at the limit is fine (and then judged on its content).
	atLimit := `{"owner":"w","metadata":{"k":"` + strings.Repeat("v", api.MaxBodyBytes-len(`{"owner":"w","metadata":{"k":""}}`)) + `"}}`
	req := httptest.NewRequest("POST", "/v1/locks/x", strings.NewReader(atLimit))
	req.Header.Set("Content-Type", "application/json")
	if p := testserver.WantProblem(t, s.Serve(req), http.StatusBadRequest, "invalid_request"); p.Field != "metadata" {
		t.Fatalf("a body of exactly %d bytes: field %q, want metadata", len(atLimit), p.Field)
	}
}

func TestUnknownRouteAndMethod_AnswerProblems(t *testing.T) {
	s := newTestServer(t)
	testserver.WantProblem(t, s.Do("GET", "/v1/nothing", ""), http.StatusNotFound, "route_not_found")
	testserver.WantProblem(t, s.Do("PATCH", "/v1/locks/x", `{}`), http.StatusMethodNotAllowed, "method_not_allowed")
}
