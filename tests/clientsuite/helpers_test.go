package clientsuite_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/contract"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// One real backend (embedded etcd member, lock engine, HTTP server) serves
// the whole test binary: booting etcd per test would dominate the run on
// two cores. Tests stay apart by their lock names, and each test talks to it through
// an httptest server of its own that it can close, cut or slow down.
var shared struct {
	once    sync.Once
	tb      *processTB
	eng     *lock.Engine
	handler http.Handler
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.tb != nil {
		shared.tb.cleanup()
	}
	os.Exit(code)
}

// backend starts the shared backend on first use.
func backend() (*lock.Engine, http.Handler) {
	shared.once.Do(func() {
		tb := &processTB{}
		shared.tb = tb
		m := testetcd.Start(tb)
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		cfg := lock.DefaultConfig()
		cfg.Logger = logger
		eng, err := lock.New(context.Background(), m.Client(), cfg)
		if err != nil {
			panic(fmt.Sprintf("new engine: %v", err))
		}
		tb.Cleanup(func() { eng.Close() })
		tr, err := trail.New(context.Background(), eng, trail.DefaultConfig())
		if err != nil {
			panic(fmt.Sprintf("new trail: %v", err))
		}
		tb.Cleanup(func() { tr.Close() })
		shared.eng = eng
		shared.handler = server.New(server.Config{Engine: eng, Trail: tr, Logger: logger}).Handler()
	})
	return shared.eng, shared.handler
}

// processTB lends testetcd what it uses of a testing.TB, for a backend
// that lives as long as the test binary rather than one test.
type processTB struct {
	testing.TB // nil: anything not defined below is not expected to be called
	mu         sync.Mutex
	dirs       []string
	cleanups   []func()
}

func (p *processTB) Helper() {}

func (p *processTB) TempDir() string {
	d, err := os.MkdirTemp("", "baton-client-test-")
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	p.dirs = append(p.dirs, d)
	p.mu.Unlock()
	return d
}

func (p *processTB) Cleanup(f func()) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}

func (p *processTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (p *processTB) cleanup() {
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	for _, d := range p.dirs {
		os.RemoveAll(d)
	}
}

// front is a test's own server in front of the shared backend. Every
// exchange is checked against the OpenAPI document. intercept, when set,
// sees each request first and may answer it itself.
type front struct {
	*httptest.Server
	t         *testing.T
	intercept atomic.Pointer[func(w http.ResponseWriter, r *http.Request) bool]
	mu        sync.Mutex
	requests  []*http.Request
}

func newFront(t *testing.T) *front {
	t.Helper()
	_, h := backend()
	f := &front{t: t}
	checked := contract.Wrap(t, h)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Clone(context.Background()))
		f.mu.Unlock()
		if fn := f.intercept.Load(); fn != nil && (*fn)(w, r) {
			return
		}
		checked.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// setIntercept installs fn; nil removes it.
func (f *front) setIntercept(fn func(w http.ResponseWriter, r *http.Request) bool) {
	if fn == nil {
		f.intercept.Store(nil)
		return
	}
	f.intercept.Store(&fn)
}

// count returns how many requests matched method and a path suffix.
func (f *front) count(method, pathSuffix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if r.Method == method && strings.HasSuffix(r.URL.Path, pathSuffix) {
			n++
		}
	}
	return n
}

// matching returns the requests that matched method and a path suffix.
func (f *front) matching(method, pathSuffix string) []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*http.Request
	for _, r := range f.requests {
		if r.Method == method && strings.HasSuffix(r.URL.Path, pathSuffix) {
			out = append(out, r)
		}
	}
	return out
}

// setup is how most tests start: a server of their own over the shared
// backend, a client of it, and a context that ends with the test or
// after a minute.
func setup(t *testing.T) (*front, *client.Client, context.Context) {
	t.Helper()
	f := newFront(t)
	return f, newClient(t, f.URL), ctxFor(t, time.Minute)
}

// newClient returns a client of endpoints with short pauses between
// retries, so that tests of failure run quickly.
func newClient(t *testing.T, endpoints ...string) *client.Client {
	t.Helper()
	c, err := client.NewWithConfig(client.Config{Endpoints: endpoints, Timeout: 5 * time.Second, RetryBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

var nameSeq atomic.Int64

// lockName returns a lock name of this test that no other test, nor an
// earlier run of this one (-count), uses.
func lockName(t *testing.T, suffix string) string {
	t.Helper()
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, strings.TrimPrefix(t.Name(), "Test"))
	n := fmt.Sprintf("%s.%d.%s", base, nameSeq.Add(1), suffix)
	if len(n) > 128 {
		n = n[len(n)-128:]
	}
	return n
}

// skipShort skips, under go test -short (the fast tier), a test that
// lets several lease TTLs pass: time that no machine makes shorter.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("lets several lease TTLs pass; runs without -short")
	}
}

// ctxFor returns a context that ends with the test, or after d.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitClosed waits for ch to close, failing the test after timeout.
func waitClosed(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) time.Time {
	t.Helper()
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case <-ch:
		return time.Now()
	case <-tm.C:
		t.Fatalf("%s did not happen within %s", what, timeout)
		return time.Time{}
	}
}

// isClosed reports whether ch is closed now.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// releaser is what a test releases at its end: a *Lock, a *Permit, an
// *RWHold.
type releaser interface {
	Release(ctx context.Context) error
}

// releaseAtEnd releases h when the test ends, whatever happened.
func releaseAtEnd(t *testing.T, h releaser) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Release(ctx)
	})
}

// problem writes a problem+json answer, as the real server does, for the
// fakes of the retry tests.
func problem(w http.ResponseWriter, status int, code string, retryAfter int) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"urn:baton:problem:%s","title":"t","status":%d,"code":%q,"detail":"fake","retry_after":%d}`, code, status, code, retryAfter)
}
