package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// testServer is the real server over the real engine over a real
// embedded etcd member, behind httptest.NewServer.
type testServer struct {
	t      *testing.T
	eng    *lock.Engine
	member *embedetcd.Member
	ts     *httptest.Server
	// allow5xx switches off the guard that fails the test on any 5xx.
	allow5xx atomic.Bool
}

// newTestServer starts a member of its own and a server over it.
func newTestServer(t *testing.T) *testServer {
	t.Helper()
	return newTestServerOn(t, testetcd.Start(t), lock.DefaultConfig())
}

// newTestServerOn starts an engine with cfg and the server over m; t.Cleanup
// stops them before m. Any 5xx the server writes fails the test unless
// allow5xx is set.
func newTestServerOn(t *testing.T, m *embedetcd.Member, cfg lock.Config) *testServer {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg.Logger = logger
	eng, err := lock.New(context.Background(), m.Client(), cfg)
	if err != nil {
		t.Fatalf("new engine: %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	s := &testServer{t: t, eng: eng, member: m}
	// Every request of the suite goes through the OpenAPI contract check.
	h := contract.Wrap(t, server.New(server.Config{Engine: eng, Logger: logger}).Handler())
	s.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status >= 500 && !s.allow5xx.Load() {
			t.Errorf("server answered %d to %s %s", sw.status, r.Method, r.URL)
		}
	}))
	t.Cleanup(s.ts.Close)
	return s
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

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

type response struct {
	Status int
	Header http.Header
	Body   []byte
	Took   time.Duration
}

const requestTimeout = 30 * time.Second

// send makes a request; safe from any goroutine.
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
		return nil, err
	}
	r := &response{Status: resp.StatusCode, Header: resp.Header, Body: b, Took: time.Since(start)}
	if r.Status >= 500 && !s.allow5xx.Load() {
		return r, fmt.Errorf("%s %s answered %d: %s", method, path, r.Status, b)
	}
	return r, nil
}

func (s *testServer) do(method, path, body string) *response {
	s.t.Helper()
	r, err := s.send(context.Background(), method, path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

func wantStatus(t *testing.T, r *response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
}

func wantJSON[T any](t *testing.T, r *response, status int) T {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, r.Body, err)
	}
	return v
}

func wantProblem(t *testing.T, r *response, status int, code string) api.Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d (%s); body: %s", r.Status, status, code, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type %q, want application/problem+json; body: %s", ct, r.Body)
	}
	var p api.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("decode problem from %s: %v", r.Body, err)
	}
	if p.Code != code || p.Status != status || p.Type != api.ProblemType(code) || p.Title == "" || p.Detail == "" {
		t.Fatalf("problem %+v, want code %q status %d with type, title and detail", p, code, status)
	}
	return p
}

func rawObject(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode object from %s: %v", b, err)
	}
	return m
}

func wantKeys(t *testing.T, what string, obj map[string]json.RawMessage, want ...string) {
	t.Helper()
	for _, k := range want {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s: member %q missing in %s", what, k, mustJSON(obj))
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
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
