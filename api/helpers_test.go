package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/contract"
	"github.com/baton-dev/baton/internal/testetcd"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
)

// testServer is the real HTTP server over the real engine over a real
// embedded etcd member, reached through a real loopback connection.
type testServer struct {
	t       *testing.T
	eng     *lock.Engine
	member  *embedetcd.Member
	srv     *server.Server
	ts      *httptest.Server
	handler http.Handler // srv.Handler() behind the 5xx guard, for ServeHTTP tests
	// allow5xx switches off the guard that fails the test on any 5xx.
	allow5xx atomic.Bool
}

// newTestServer starts etcd, the engine, the server and an httptest
// server in front of it; t.Cleanup stops them in reverse order. Any 5xx
// the server writes, even to a client that already left, fails the test.
func newTestServer(t *testing.T) *testServer {
	t.Helper()
	m := testetcd.Start(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(&testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg := lock.DefaultConfig()
	cfg.Logger = logger
	eng, err := lock.New(context.Background(), m.Client(), cfg)
	if err != nil {
		t.Fatalf("new engine: %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	s := &testServer{t: t, eng: eng, member: m, srv: server.New(server.Config{Engine: eng, Logger: logger})}
	// Every request of the suite goes through the OpenAPI contract check.
	h := contract.Wrap(t, s.srv.Handler())
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status >= 500 && !s.allow5xx.Load() {
			t.Errorf("server answered %d to %s %s", sw.status, r.Method, r.URL)
		}
	})
	s.ts = httptest.NewServer(s.handler)
	t.Cleanup(s.ts.Close)
	return s
}

// testWriter sends the server's warnings to the test log (only with -v).
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// statusWriter remembers the status the handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// response is an answer read in full.
type response struct {
	Status int
	Header http.Header
	Body   []byte
	Took   time.Duration
}

// requestTimeout bounds every request of the suite: nothing may hang.
const requestTimeout = 30 * time.Second

// send makes a request with a JSON body (none when body is ""). It is safe
// to call from any goroutine: it reports failures as errors.
func (s *testServer) send(ctx context.Context, method, path, body string) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.ts.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := s.ts.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read body of %s %s: %w", method, path, err)
	}
	r := &response{Status: resp.StatusCode, Header: resp.Header, Body: b, Took: time.Since(start)}
	if r.Status >= 500 && !s.allow5xx.Load() {
		return r, fmt.Errorf("%s %s answered %d: %s", method, path, r.Status, b)
	}
	return r, nil
}

// do is send for the test goroutine: any transport failure or 5xx is fatal.
func (s *testServer) do(method, path, body string) *response {
	s.t.Helper()
	r, err := s.send(context.Background(), method, path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// serve sends a request through the handler in process, without a
// connection (httptest.NewRecorder).
func (s *testServer) serve(req *http.Request) *response {
	s.t.Helper()
	rec := httptest.NewRecorder()
	start := time.Now()
	s.handler.ServeHTTP(rec, req)
	return &response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes(), Took: time.Since(start)}
}

// wantStatus fails the test unless r has status.
func wantStatus(t *testing.T, r *response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
}

// decodeAs decodes r's body into a T (leniently: shape is checked by keys).
func decodeAs[T any](t *testing.T, r *response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, r.Body, err)
	}
	return v
}

// wantJSON checks a 2xx JSON answer of status and decodes it.
func wantJSON[T any](t *testing.T, r *response, status int) T {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	return decodeAs[T](t, r)
}

// wantProblem checks an RFC 9457 answer of status and code.
func wantProblem(t *testing.T, r *response, status int, code string) api.Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d (%s); body: %s", r.Status, status, code, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type %q, want application/problem+json; body: %s", ct, r.Body)
	}
	p := decodeAs[api.Problem](t, r)
	if p.Code != code || p.Status != status || p.Type != api.ProblemType(code) || p.Title == "" || p.Detail == "" {
		t.Fatalf("problem %+v, want code %q status %d with type, title and detail", p, code, status)
	}
	return p
}

// decodeInto decodes b into v.
func decodeInto(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, b, err)
	}
}

// rawObject decodes r's body as a JSON object, to check member names.
func rawObject(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode object from %s: %v", b, err)
	}
	return m
}

// wantKeys checks that obj has every member of want, and no member
// outside want and extra (members API.md does not name but allows).
func wantKeys(t *testing.T, what string, obj map[string]json.RawMessage, want, extra []string) {
	t.Helper()
	allowed := map[string]bool{}
	for _, k := range append(append([]string{}, want...), extra...) {
		allowed[k] = true
	}
	for _, k := range want {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s: member %q missing in %v", what, k, keysOf(obj))
		}
	}
	for k := range obj {
		if !allowed[k] {
			t.Errorf("%s: unexpected member %q", what, k)
		}
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// timestampRE is API.md's timestamp: RFC 3339, UTC, milliseconds.
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

// Member names of API.md.
var (
	lockKeys    = []string{"name", "owner", "token", "session", "ttl", "acquired_at", "expires_at", "metadata"}
	lockExtra   = []string{"lock_delay"}
	sessionKeys = []string{"id", "owner", "ttl", "expires_at", "locks"}
	eventKeys   = []string{"revision", "time", "type", "lock", "owner", "token", "session", "detail"}
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

// eventually polls cond until it holds, failing the test after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %s", what, timeout)
		}
		<-tick.C
	}
}

// etcdKeys lists every key baton keeps under /baton/, except the expiry
// recorder's cursor, which moves by itself.
func (s *testServer) etcdKeys() map[string]bool {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.eng.Client().Get(ctx, "/baton/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		s.t.Fatalf("list keys: %v", err)
	}
	keys := map[string]bool{}
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); !strings.HasPrefix(k, "/baton/meta/") {
			keys[k] = true
		}
	}
	return keys
}

// count counts the keys under /baton/ + prefix.
func (s *testServer) count(prefix string) int64 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.eng.Client().Get(ctx, "/baton/"+prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		s.t.Fatalf("count %s: %v", prefix, err)
	}
	return resp.Count
}

// leases lists the etcd leases alive now.
func (s *testServer) leases() map[clientv3.LeaseID]bool {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.eng.Client().Leases(ctx)
	if err != nil {
		s.t.Fatalf("list leases: %v", err)
	}
	out := map[clientv3.LeaseID]bool{}
	for _, l := range resp.Leases {
		out[l.ID] = true
	}
	return out
}

// acquire takes name with body and returns the lock (201 expected).
func (s *testServer) acquire(name, body string) api.Lock {
	s.t.Helper()
	return wantJSON[api.Lock](s.t, s.do("POST", "/v1/locks/"+name, body), http.StatusCreated)
}

// release releases name with token (204 expected).
func (s *testServer) release(name string, token int64) {
	s.t.Helper()
	wantStatus(s.t, s.do("DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", name, token), ""), http.StatusNoContent)
}

// createSession creates a session with body (201 expected).
func (s *testServer) createSession(body string) api.Session {
	s.t.Helper()
	return wantJSON[api.Session](s.t, s.do("POST", "/v1/sessions", body), http.StatusCreated)
}

// history reads the whole audit trail of the query, newest first.
func (s *testServer) history(query string) []api.Event {
	s.t.Helper()
	return wantJSON[api.History](s.t, s.do("GET", "/v1/history?"+query, ""), http.StatusOK).Events
}
