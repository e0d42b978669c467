package testserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/contract"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// RequestTimeout bounds every request made with Send or Do: nothing may
// hang.
const RequestTimeout = 30 * time.Second

// Server is the real HTTP server over the real engine over a real
// embedded etcd member, reached through a real loopback connection.
type Server struct {
	t      testing.TB
	Eng    *lock.Engine
	Trail  *trail.Trail
	Member *embedetcd.Member
	TS     *httptest.Server
	// Handler is the server's handler behind the contract check and the
	// 5xx guard, for in-process (ServeHTTP) tests; TS serves it.
	Handler http.Handler
	// Allow5xx switches off the guard that fails the test on any 5xx.
	Allow5xx atomic.Bool
	// Auth is the credential store when WithAuth turned authentication
	// on; a test may Swap other credentials in.
	Auth *auth.Store
}

// Option changes what Start and StartOn start.
type Option func(*options)

type options struct {
	trail      *trail.Config
	auth       *auth.Store
	log        io.Writer
	server     server.Config
	sendBuffer int
}

// WithTrail starts the audit trail with tc (trail.DefaultConfig
// otherwise); its BackendQuota and Logger are the engine's.
func WithTrail(tc trail.Config) Option { return func(o *options) { o.trail = &tc } }

// WithAuth turns authentication on with the credentials of file, the
// content of an auth file ("ROLE TOKEN" lines, see package auth). Requests
// then need a token: see SendAs and DoAs.
func WithAuth(t testing.TB, file string) Option {
	t.Helper()
	c, err := auth.Parse(strings.NewReader(file))
	if err != nil {
		t.Fatalf("testserver.WithAuth: %v", err)
	}
	return func(o *options) { o.auth = auth.NewStore(c) }
}

// WithPolicy turns authentication on with the credentials of doc, the
// content of a policy file (YAML: named credentials with rules per
// prefix and quotas, see package auth).
func WithPolicy(t testing.TB, doc string) Option {
	t.Helper()
	c, err := auth.ParsePolicy(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("testserver.WithPolicy: %v", err)
	}
	return func(o *options) { o.auth = auth.NewStore(c) }
}

// WithLog sends everything the server and the engine log, from debug
// level up, to w (which must be safe for concurrent writes, as LogBuffer
// is), so a test can read the log.
func WithLog(w io.Writer) Option {
	return func(o *options) { o.log = w }
}

// LogBuffer collects a log for WithLog.
type LogBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was logged so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WithServer adjusts the server's configuration (rate limits, event
// streams); Engine and Logger are set by StartOn.
func WithServer(f func(*server.Config)) Option {
	return func(o *options) { f(&o.server) }
}

// WithSendBuffer sets the kernel's send buffer of every connection the
// server accepts to about n bytes, so that a client that stops reading
// blocks the server's writes after a few KiB instead of megabytes.
func WithSendBuffer(n int) Option {
	return func(o *options) { o.sendBuffer = n }
}

// Start starts a member of its own, an engine with lock.DefaultConfig and
// the server over it.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return StartOn(t, testetcd.Start(t), lock.DefaultConfig(), opts...)
}

// StartOn starts an engine with cfg (its Logger is replaced) and the server
// over m, behind httptest.NewServer; t.Cleanup stops them before m. Any 5xx
// the server writes, even to a client that already left, fails the test
// unless Allow5xx is set.
func StartOn(t testing.TB, m *embedetcd.Member, cfg lock.Config, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch {
	case o.log != nil && testing.Verbose():
		logger = slog.New(slog.NewTextHandler(io.MultiWriter(o.log, &testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	case o.log != nil:
		logger = slog.New(slog.NewTextHandler(o.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case testing.Verbose():
		logger = slog.New(slog.NewTextHandler(&testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg.Logger = logger
	// As node.Start does for its member.
	if cfg.Embedded == nil {
		cfg.Embedded = m
	}
	eng, err := lock.New(context.Background(), m.Client(), cfg)
	if err != nil {
		t.Fatalf("new engine: %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	tc := trail.DefaultConfig()
	if o.trail != nil {
		tc = *o.trail
	}
	tc.BackendQuota, tc.Logger = cfg.BackendQuota, logger
	tr, err := trail.New(context.Background(), eng, tc)
	if err != nil {
		t.Fatalf("new trail: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	s := &Server{t: t, Eng: eng, Trail: tr, Member: m, Auth: o.auth}
	// Every request of the suite goes through the OpenAPI contract check.
	o.server.Engine, o.server.Trail, o.server.Logger, o.server.Auth = eng, tr, logger, o.auth
	h := contract.Wrap(t, server.New(o.server).Handler())
	s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status >= 500 && !s.Allow5xx.Load() {
			t.Errorf("server answered %d to %s %s", sw.status, r.Method, r.URL)
		}
	})
	s.TS = httptest.NewUnstartedServer(s.Handler)
	if o.sendBuffer > 0 {
		s.TS.Listener = sendBufferListener{s.TS.Listener, o.sendBuffer}
	}
	s.TS.Start()
	t.Cleanup(s.TS.Close)
	return s
}

// sendBufferListener sets the send buffer of the connections it accepts.
type sendBufferListener struct {
	net.Listener
	size int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(l.size)
	}
	return c, err
}

// testWriter sends the server's warnings to the test log (only with -v).
type testWriter struct{ t testing.TB }

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

// Response is an answer read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Took   time.Duration
}

// Send makes a request with a JSON body (none when body is ""), bounded by
// RequestTimeout. It is safe to call from any goroutine: it reports
// failures, and a 5xx unless Allow5xx is set, as errors.
func (s *Server) Send(ctx context.Context, method, path, body string) (*Response, error) {
	return s.SendAs(ctx, "", method, path, body)
}

// SendAs is Send with "Authorization: Bearer token" (none when token is "").
func (s *Server) SendAs(ctx context.Context, token, method, path, body string) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.TS.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	resp, err := s.TS.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read body of %s %s: %w", method, path, err)
	}
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Took: time.Since(start)}
	if r.Status >= 500 && !s.Allow5xx.Load() {
		return r, fmt.Errorf("%s %s answered %d: %s", method, path, r.Status, b)
	}
	return r, nil
}

// Do is Send for the test goroutine: any transport failure or 5xx is fatal.
func (s *Server) Do(method, path, body string) *Response {
	s.t.Helper()
	return s.DoAs("", method, path, body)
}

// DoAs is Do with "Authorization: Bearer token" (none when token is "").
func (s *Server) DoAs(token, method, path, body string) *Response {
	s.t.Helper()
	r, err := s.SendAs(context.Background(), token, method, path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// Serve sends a request through Handler in process, without a connection
// (httptest.NewRecorder).
func (s *Server) Serve(req *http.Request) *Response {
	s.t.Helper()
	rec := httptest.NewRecorder()
	start := time.Now()
	s.Handler.ServeHTTP(rec, req)
	return &Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes(), Took: time.Since(start)}
}

// settle waits until the history index holds every event so far: it
// writes (entries, a bucket lease) after the request that made an event
// has answered, and a key or lease it writes then is not the next
// request's.
func (s *Server) settle(ctx context.Context) {
	s.t.Helper()
	if _, _, err := s.Trail.History(ctx, trail.HistoryOptions{Limit: 1}); err != nil {
		s.t.Fatalf("wait for the history index: %v", err)
	}
}

// Keys lists every key baton keeps under /baton/, except the cursors of
// the expiry recorder and the history index (under /baton/meta/), which
// move by themselves, once the history index holds every event so far.
func (s *Server) Keys() map[string]bool {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.settle(ctx)
	resp, err := s.Eng.Client().Get(ctx, "/baton/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
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

// Revision is etcd's revision once the history index holds every event
// so far: the index writes after the request whose event it records, and
// that write is not to be taken for the next request's.
func (s *Server) Revision() int64 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.settle(ctx)
	resp, err := s.Eng.Client().Get(ctx, "/baton/none", clientv3.WithCountOnly())
	if err != nil {
		s.t.Fatalf("read the revision: %v", err)
	}
	return resp.Header.Revision
}

// WrittenSince lists the keys put or deleted after revision rev, through
// Revision now, except baton's bookkeeping under /baton/meta/: the
// cursors of the expiry recorder and the history index move on timers
// of their own, so etcd's revision alone cannot say that a request
// wrote nothing.
func (s *Server) WrittenSince(rev int64) []string {
	s.t.Helper()
	now := s.Revision()
	if now <= rev {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	for resp := range s.Eng.Client().Watch(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithRev(rev+1)) {
		if err := resp.Err(); err != nil {
			s.t.Fatalf("watch the writes after revision %d: %v", rev, err)
		}
		reached := false
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision > now {
				return keys
			}
			reached = ev.Kv.ModRevision == now
			if k := string(ev.Kv.Key); !strings.HasPrefix(k, "/baton/meta/") {
				keys = append(keys, k)
			}
		}
		if reached {
			return keys
		}
	}
	s.t.Fatalf("watch the writes after revision %d: ended before revision %d", rev, now)
	return nil
}

// Leases lists the etcd leases alive now, once the history index holds
// every event so far (its bucket leases are among them).
func (s *Server) Leases() map[clientv3.LeaseID]bool {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.settle(ctx)
	resp, err := s.Eng.Client().Leases(ctx)
	if err != nil {
		s.t.Fatalf("list leases: %v", err)
	}
	out := map[clientv3.LeaseID]bool{}
	for _, l := range resp.Leases {
		out[l.ID] = true
	}
	return out
}
