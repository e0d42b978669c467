package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testserver"
)

// testServer is the shared harness (tests/testserver: the real server
// over the real engine over a real embedded etcd member, every request
// through the contract check and the 5xx guard) with this package's own
// helpers on top.
type testServer struct {
	*testserver.Server
	t *testing.T
}

// newTestServer starts etcd, the engine, the server and an httptest
// server in front of it; t.Cleanup stops them in reverse order. Any 5xx
// the server writes, even to a client that already left, fails the test.
func newTestServer(t *testing.T) *testServer {
	t.Helper()
	return &testServer{Server: testserver.Start(t), t: t}
}

// decodeInto decodes b into v.
func decodeInto(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, b, err)
	}
}

// timestampRE is docs/API.md's timestamp: RFC 3339, UTC, milliseconds.
var timestampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// wantTimestamp checks that obj[key] is a timestamp string and returns it.
func wantTimestamp(t *testing.T, obj map[string]json.RawMessage, key string) time.Time {
	t.Helper()
	var s string
	if err := json.Unmarshal(obj[key], &s); err != nil || !timestampRE.MatchString(s) {
		t.Fatalf("%s = %s, want RFC 3339 UTC with milliseconds", key, obj[key])
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s = %q: %v", key, s, err)
	}
	return ts
}

// wantString checks that obj[key] is the JSON string want.
func wantString(t *testing.T, obj map[string]json.RawMessage, key, want string) {
	t.Helper()
	var s string
	if err := json.Unmarshal(obj[key], &s); err != nil || s != want {
		t.Errorf("%s = %s, want %q", key, obj[key], want)
	}
}

// Member names of docs/API.md.
var (
	lockKeys    = []string{"name", "owner", "token", "session", "ttl", "acquired_at", "expires_at", "metadata"}
	lockExtra   = []string{"lock_delay", "min_hold"}
	sessionKeys = []string{"id", "owner", "ttl", "expires_at", "locks"}
	eventKeys   = []string{"revision", "time", "type", "kind", "name", "lock", "owner", "token", "session", "detail"}
	fencedKeys  = []string{"resource", "token", "value", "revision"}
)

// without returns keys minus drop.
func without(keys []string, drop ...string) []string {
	var out []string
	for _, k := range keys {
		keep := true
		for _, d := range drop {
			keep = keep && k != d
		}
		if keep {
			out = append(out, k)
		}
	}
	return out
}

// acquire takes name with body and returns the lock (201 expected).
func (s *testServer) acquire(name, body string) api.Lock {
	s.t.Helper()
	return testserver.WantJSON[api.Lock](s.t, s.Do("POST", "/v1/locks/"+name, body), http.StatusCreated)
}

// release releases name with token (204 expected).
func (s *testServer) release(name string, token int64) {
	s.t.Helper()
	testserver.WantStatus(s.t, s.Do("DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", name, token), ""), http.StatusNoContent)
}

// createSession creates a session with body (201 expected).
func (s *testServer) createSession(body string) api.Session {
	s.t.Helper()
	return testserver.WantJSON[api.Session](s.t, s.Do("POST", "/v1/sessions", body), http.StatusCreated)
}

// history reads the whole audit trail of the query, newest first.
func (s *testServer) history(query string) []api.Event {
	s.t.Helper()
	return testserver.WantJSON[api.History](s.t, s.Do("GET", "/v1/history?"+query, ""), http.StatusOK).Events
}

// waiters counts the acquires queued for name, as the engine lists them.
func (s *testServer) waiters(name string) int64 {
	s.t.Helper()
	ws, err := s.Eng.Waiters(context.Background(), name)
	if err != nil {
		s.t.Fatalf("waiters of %s: %v", name, err)
	}
	return int64(len(ws))
}

// stats counts the cluster's locks, waiters and sessions, as the engine
// does for its metrics.
func (s *testServer) stats() lock.Stats {
	s.t.Helper()
	st, err := s.Eng.Stats(context.Background())
	if err != nil {
		s.t.Fatalf("stats: %v", err)
	}
	return st
}
