package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/tests/testserver"
	"github.com/baton-dev/baton/trail"
)

// logBuffer collects a server's JSON log lines; the server writes from
// its own goroutines while the test reads.
type logBuffer struct{ testserver.LogBuffer }

// accessLines returns the "http request" lines logged so far.
func (b *logBuffer) accessLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		if m["msg"] == "http request" {
			out = append(out, m)
		}
	}
	return out
}

// waitLines waits until n access lines were logged: a line is written
// when the handler returns, which a client may learn of a moment before.
func (b *logBuffer) waitLines(t *testing.T, n int) []map[string]any {
	t.Helper()
	var lines []map[string]any
	poll.Until(t, 10*time.Second, "access log lines", func() bool {
		lines = b.accessLines(t)
		return len(lines) >= n
	})
	return lines
}

type logged struct {
	srv *server.Server
	ts  *httptest.Server
	log *logBuffer
}

// startLogged starts the real server over a real member, logging JSON at
// info level into a buffer.
func startLogged(t *testing.T, accessLog bool) *logged {
	t.Helper()
	m := testetcd.Start(t)
	lb := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(lb, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := lock.DefaultConfig()
	cfg.Logger = logger
	cfg.Embedded = m
	eng, err := lock.New(context.Background(), m.Client(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	tr, err := trail.New(context.Background(), eng, trail.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	srv := server.New(server.Config{Engine: eng, Trail: tr, Logger: logger, AccessLog: accessLog})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &logged{srv: srv, ts: ts, log: lb}
}

func (l *logged) do(t *testing.T, method, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, l.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestAccessLog_OneLinePerRequestWithItsFieldsAndNoSecrets(t *testing.T) {
	l := startLogged(t, true)
	const secret = "s3cr3t-bearer-value-never-logged"
	resp, body := l.do(t, "POST", "/v1/locks/al", `{"owner":"w1"}`, "Authorization", "Bearer "+secret)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("acquire: %d %s", resp.StatusCode, body)
	}
	var got struct{ Token int64 }
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	resp2, _ := l.do(t, "DELETE", "/v1/locks/al?token="+jsonNumber(got.Token), "", "Authorization", "Bearer "+secret)
	if resp2.StatusCode != http.StatusNoContent {
		t.Fatalf("release: %d", resp2.StatusCode)
	}
	resp3, _ := l.do(t, "GET", "/v1/nowhere/at-all", "")

	lines := l.log.waitLines(t, 3)
	if len(lines) != 3 {
		t.Fatalf("%d access lines for 3 requests:\n%s", len(lines), l.log.String())
	}
	for i, c := range []struct {
		resp                 *http.Response
		method, route, path  string
		status, minBytesSent float64
	}{
		{resp, "POST", "/v1/locks/:name", "/v1/locks/al", 201, 1},
		{resp2, "DELETE", "/v1/locks/:name", "/v1/locks/al", 204, 0},
		{resp3, "GET", "unmatched", "/v1/nowhere/at-all", 404, 1},
	} {
		line := lines[i]
		if line["level"] != "INFO" || line["method"] != c.method || line["route"] != c.route || line["path"] != c.path || line["status"] != c.status {
			t.Errorf("line %d = %v, want %s %s (%s) %v at INFO", i, line, c.method, c.path, c.route, c.status)
		}
		if id := c.resp.Header.Get("X-Request-ID"); !generatedID.MatchString(id) || line["request_id"] != id {
			t.Errorf("line %d request_id %v, response header %q: want the same generated ID", i, line["request_id"], id)
		}
		if d, ok := line["duration"].(float64); !ok || d <= 0 {
			t.Errorf("line %d duration %v, want a positive number of nanoseconds", i, line["duration"])
		}
		if n, ok := line["bytes_out"].(float64); !ok || n < c.minBytesSent {
			t.Errorf("line %d bytes_out %v, want at least %v", i, line["bytes_out"], c.minBytesSent)
		}
		if r, _ := line["remote"].(string); !strings.HasPrefix(r, "127.0.0.1:") {
			t.Errorf("line %d remote %q, want the client's loopback address and port", i, r)
		}
		if _, ok := line["credential"]; ok {
			t.Errorf("line %d has a credential with auth off: %v", i, line)
		}
	}
	all := l.log.String()
	for _, never := range []string{secret, "Bearer", "token="} {
		if strings.Contains(all, never) {
			t.Errorf("the log contains %q:\n%s", never, all)
		}
	}
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestRequestID_IsEchoedInTheHeaderTheProblemBodyAndTheLog(t *testing.T) {
	l := startLogged(t, true)
	resp, body := l.do(t, "GET", "/v1/locks/nobody-holds-this", "")
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %s %s, want a 404 problem", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	id := resp.Header.Get("X-Request-ID")
	if !generatedID.MatchString(id) {
		t.Fatalf("X-Request-ID %q, want 32 hex digits", id)
	}
	var p struct {
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Code != "not_held" || p.RequestID != id {
		t.Fatalf("problem %s, want code not_held and request_id %q", body, id)
	}
	if lines := l.log.waitLines(t, 1); lines[0]["request_id"] != id {
		t.Fatalf("log line %v, want request_id %q", lines[0], id)
	}
	// Two requests never share a generated ID.
	if again, _ := l.do(t, "GET", "/healthz", ""); again.Header.Get("X-Request-ID") == id {
		t.Fatalf("a second request got the same ID %q", id)
	}
}

func TestRequestID_ASaneClientIDIsKeptAHostileOneReplaced(t *testing.T) {
	l := startLogged(t, true)
	for _, c := range []struct {
		name, sent string
		kept       bool
	}{
		{"trace ID", "trace-42:abc/DEF_9.x", true},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", true},
		{"128 characters", strings.Repeat("a", 128), true},
		{"129 characters", strings.Repeat("a", 129), false},
		{"a space", "a b", false},
		{"a forged log line", "x\nlevel=ERROR msg=forged", false},
		{"a control character", "x\x1b[31m", false},
		{"non-ASCII", "zürich", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// In process: net/http's client would refuse to send the
			// hostile ones, an attacker's raw socket would not.
			req := httptest.NewRequest("GET", "/v1/locks/nobody", nil)
			req.Header["X-Request-Id"] = []string{c.sent}
			rec := httptest.NewRecorder()
			l.srv.Handler().ServeHTTP(rec, req)
			id := rec.Header().Get("X-Request-ID")
			var p struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if p.RequestID != id {
				t.Fatalf("problem request_id %q, header %q: want the same", p.RequestID, id)
			}
			if c.kept && id != c.sent {
				t.Fatalf("X-Request-ID %q, want the client's %q kept", id, c.sent)
			}
			if !c.kept && !generatedID.MatchString(id) {
				t.Fatalf("X-Request-ID %q for a hostile %q, want a generated one", id, c.sent)
			}
		})
	}
	if all := l.log.String(); strings.Contains(all, "forged") || strings.Contains(all, "\x1b") {
		t.Fatalf("a hostile request ID reached the log:\n%s", all)
	}
}

// A request with several X-Request-ID headers keeps the first, alone, as
// Header.Get and Header.Set did; a hostile first one is replaced.
func TestRequestID_OfSeveralTheFirstIsKept(t *testing.T) {
	l := startLogged(t, true)
	for _, c := range []struct {
		sent []string
		kept bool
	}{
		{[]string{"first", "second"}, true},
		{[]string{"x y", "second"}, false},
	} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Header["X-Request-Id"] = c.sent
		rec := httptest.NewRecorder()
		l.srv.Handler().ServeHTTP(rec, req)
		got := rec.Header().Values("X-Request-ID")
		if len(got) != 1 || c.kept && got[0] != c.sent[0] || !c.kept && !generatedID.MatchString(got[0]) {
			t.Errorf("sent %q: answered X-Request-ID %q, want one: the first when sane, else a generated one", c.sent, got)
		}
		if !slices.Equal(req.Header.Values("X-Request-ID"), got) {
			t.Errorf("sent %q: the request's header %q, want the answer's %q", c.sent, req.Header.Values("X-Request-ID"), got)
		}
	}
}

func TestAccessLog_AnEventStreamLogsOnceWhenItEnds(t *testing.T) {
	l := startLogged(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", l.ts.URL+"/v1/events", nil)
	req.Header.Set("X-Request-ID", "stream-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if first, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(first, "retry:") {
		t.Fatalf("first line of the stream %q, %v", first, err)
	}
	opened := time.Now()
	_, mbody := l.do(t, "GET", "/metrics", "")
	if v, ok := metric(t, string(mbody), "baton_event_streams"); !ok || v != 1 {
		t.Fatalf("baton_event_streams = %v (present %v) with one stream open, want 1", v, ok)
	}
	for _, line := range l.log.accessLines(t) {
		if line["request_id"] == "stream-1" {
			t.Fatalf("the stream was logged while still open: %v", line)
		}
	}
	cancel()
	heldFor := time.Since(opened)
	var stream []map[string]any
	poll.Until(t, 10*time.Second, "the stream's line", func() bool {
		stream = stream[:0]
		for _, line := range l.log.accessLines(t) {
			if line["request_id"] == "stream-1" {
				stream = append(stream, line)
			}
		}
		return len(stream) > 0
	})
	if len(stream) != 1 || stream[0]["route"] != "/v1/events" || stream[0]["status"] != float64(200) {
		t.Fatalf("stream lines %v, want one for /v1/events with status 200", stream)
	}
	if d := time.Duration(stream[0]["duration"].(float64)); d < heldFor {
		t.Fatalf("stream duration %s, want at least the %s it was open", d, heldFor)
	}
	poll.Until(t, 10*time.Second, "baton_event_streams back to 0", func() bool {
		_, mbody := l.do(t, "GET", "/metrics", "")
		v, ok := metric(t, string(mbody), "baton_event_streams")
		return ok && v == 0
	})
}

func TestAccessLog_OffWritesNoLineButKeepsRequestIDs(t *testing.T) {
	l := startLogged(t, false)
	resp, _ := l.do(t, "GET", "/v1/locks/nobody", "")
	if !generatedID.MatchString(resp.Header.Get("X-Request-ID")) {
		t.Fatalf("X-Request-ID %q with the access log off, want one", resp.Header.Get("X-Request-ID"))
	}
	l.do(t, "GET", "/healthz", "")
	if lines := l.log.accessLines(t); len(lines) != 0 {
		t.Fatalf("access lines with --access-log=false: %v", lines)
	}
}
