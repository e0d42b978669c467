package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPanic_IsCountedAsA500LoggedAndAnsweredAsAProblem: a handler that
// panics is a 500 like any other to the request counter the 5xx alert
// reads, and still answers problem+json and logs the panic with its stack.
// The panicking route is added to this test's echo instance only, after
// New: the production route table has none.
func TestPanic_IsCountedAsA500LoggedAndAnsweredAsAProblem(t *testing.T) {
	eng, err := lock.New(context.Background(), testetcd.Start(t).Client(), lock.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	tr, err := trail.New(context.Background(), eng, trail.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	var logs syncBuffer
	srv := New(Config{Engine: eng, Trail: tr, Logger: slog.New(slog.NewTextHandler(&logs, nil)), AccessLog: true})
	srv.echo.GET("/test/panic", func(echo.Context) error { panic("handler bug") })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	resp, body := get("/test/panic")
	var p api.Problem
	if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("Content-Type") != "application/problem+json" ||
		json.Unmarshal(body, &p) != nil || p.Code != "internal" || p.RequestID == "" {
		t.Fatalf("panic answered %d %q: %s; want a 500 problem+json with code internal and a request_id", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if strings.Contains(string(body), "handler bug") {
		t.Errorf("the panic's value reached the client: %s", body)
	}
	log := logs.String()
	for _, want := range []string{`msg="panic in handler"`, "handler bug", "request_id=" + p.RequestID, `msg="http request"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	_, metrics := get("/metrics")
	const series = `baton_http_requests_total{code="500",method="GET",route="/test/panic"} 1`
	if !strings.Contains(string(metrics), series+"\n") {
		t.Errorf("metrics lack %s; baton_http_requests_total has:\n%s", series, grepLines(string(metrics), "baton_http_requests_total{"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
