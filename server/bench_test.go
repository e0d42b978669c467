package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// These benchmarks drive the real echo instance (server.New over a real
// engine over embedded etcd) through ServeHTTP, so that the HTTP layer's
// cost shows apart from the network: each cycle is an acquire and a
// release, as bench's lease and session scenarios send them. The engine
// variant does the same cycle without HTTP; the difference is what the
// middleware, routing, decoding and encoding cost. Besides ns/op and
// allocations (the process's, so etcd's are in them too) each reports
// cpu-µs/op, the process's CPU time per cycle (getrusage), which the
// wait for etcd's fsync does not blur. Run with:
//
//	go test -run '^$' -bench HTTP -benchtime 3000x -count 3 ./server/

// benchServer starts a member, an engine and the server as baton serve
// does (access log on, a text log), logging at level (bench runs its
// node at warn; baton serve's default is info, where the access log
// writes a line per request).
func benchServer(b *testing.B, level slog.Level) (*lock.Engine, http.Handler) {
	b.Helper()
	m := testetcd.Start(b)
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: level}))
	cfg := lock.DefaultConfig()
	cfg.Logger = log
	cfg.Embedded = m
	eng, err := lock.New(context.Background(), m.Client(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	tr, err := trail.New(context.Background(), eng, trail.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	return eng, server.New(server.Config{Engine: eng, Trail: tr, Logger: log, AccessLog: true}).Handler()
}

// benchWriter is a reusable ResponseWriter that keeps the last body.
type benchWriter struct {
	h      http.Header
	status int
	body   []byte
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

func (w *benchWriter) reset() {
	clear(w.h)
	w.status, w.body = 0, w.body[:0]
}

// do sends one request and fails unless it is answered with want.
func (w *benchWriter) do(b *testing.B, h http.Handler, method, target string, body []byte, want int) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, target, r)
	if err != nil {
		b.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = "127.0.0.1:40000"
	w.reset()
	h.ServeHTTP(w, req)
	if w.status != want {
		b.Fatalf("%s %s: %d, want %d: %s", method, target, w.status, want, w.body)
	}
}

// token reads the "token" member of a Lock body without a JSON decoder,
// so that the benchmark's own work stays small.
func token(b *testing.B, body []byte) int64 {
	_, rest, ok := bytes.Cut(body, []byte(`"token":`))
	if i := bytes.IndexByte(rest, ','); ok && i > 0 {
		if n, err := strconv.ParseInt(string(rest[:i]), 10, 64); err == nil {
			return n
		}
	}
	b.Fatalf("no token in %s", body)
	return 0
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU reports the process's CPU time per op between its call and
// the call of what it returns.
func reportCPU(b *testing.B) func() {
	before := cpuTime(b)
	return func() {
		b.ReportMetric(float64(cpuTime(b)-before)/1e3/float64(b.N), "cpu-µs/op")
	}
}

func BenchmarkHTTP_Cycle(b *testing.B) {
	for _, session := range []bool{false, true} {
		mode := "lease"
		if session {
			mode = "session"
		}
		for _, via := range []string{"http", "engine"} {
			for _, par := range []int{1, 32} {
				b.Run(fmt.Sprintf("%s/%s/clients=%d", mode, via, par), func(b *testing.B) {
					benchCycle(b, session, via == "http", par)
				})
			}
		}
	}
}

func benchCycle(b *testing.B, session, viaHTTP bool, clients int) {
	eng, h := benchServer(b, slog.LevelWarn)
	ctx := context.Background()
	sid := ""
	if session {
		// An hour: a profiled run can outlast the default 30s.
		s, err := eng.CreateSession(ctx, "bench", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		sid = s.ID
	}
	var body []byte
	if session {
		body = []byte(`{"owner":"bench","session":"` + sid + `"}`)
	} else {
		body = []byte(`{"owner":"bench","ttl":"30s"}`)
	}
	var n atomic.Int64
	cycle := func(w *benchWriter) {
		name := "bench-" + strconv.FormatInt(n.Add(1), 10)
		if !viaHTTP {
			req := lock.AcquireRequest{Name: name, Owner: "bench", Session: sid}
			if !session {
				req.TTL = lock.DefaultConfig().DefaultTTL
			}
			l, _, err := eng.Acquire(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if err := eng.Release(ctx, name, l.Token); err != nil {
				b.Fatal(err)
			}
			return
		}
		w.do(b, h, http.MethodPost, "/v1/locks/"+name, body, http.StatusCreated)
		tok := token(b, w.body)
		w.do(b, h, http.MethodDelete, "/v1/locks/"+name+"?token="+strconv.FormatInt(tok, 10), nil, http.StatusNoContent)
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	b.ResetTimer()
	if clients == 1 {
		w := &benchWriter{h: http.Header{}}
		for range b.N {
			cycle(w)
		}
		return
	}
	// RunParallel starts clients goroutines on each of GOMAXPROCS.
	b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		w := &benchWriter{h: http.Header{}}
		for pb.Next() {
			cycle(w)
		}
	})
}

// BenchmarkHTTP_Healthz is the middleware chain, routing and a JSON
// answer alone: no etcd in the request. At log=info the access log
// formats its line too (into io.Discard: no write).
func BenchmarkHTTP_Healthz(b *testing.B) {
	for _, level := range []slog.Level{slog.LevelWarn, slog.LevelInfo} {
		b.Run("log="+strings.ToLower(level.String()), func(b *testing.B) {
			_, h := benchServer(b, level)
			w := &benchWriter{h: http.Header{}}
			b.ReportAllocs()
			defer reportCPU(b)()
			b.ResetTimer()
			for range b.N {
				w.do(b, h, http.MethodGet, "/healthz", nil, http.StatusOK)
			}
		})
	}
}
