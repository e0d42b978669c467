package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
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

// newCappedServer starts the real server over an engine whose config
// change sets, with opts for the server.
func newCappedServer(t *testing.T, change func(*lock.Config), opts ...testserver.Option) *testServer {
	t.Helper()
	cfg := lock.DefaultConfig()
	change(&cfg)
	return &testServer{Server: testserver.StartOn(t, testetcd.Start(t), cfg, opts...), t: t}
}

func TestAcquire_WaiterBeyondTheCapGets429TooManyWaiters(t *testing.T) {
	s := newCappedServer(t, func(c *lock.Config) { c.MaxWaitersPerLock = 1 })
	s.acquire("q", `{"owner":"holder"}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.acquireAsync(ctx, "q", `{"owner":"first","wait":"1m"}`)
	poll.Until(t, 10*time.Second, "first queued", func() bool { return s.waiters("q") == 1 })

	r := s.Do("POST", "/v1/locks/q", `{"owner":"second","wait":"1m"}`)
	p := testserver.WantProblem(t, r, http.StatusTooManyRequests, "too_many_waiters")
	if p.Limit != 1 || p.RetryAfter != 1 || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("problem %+v with Retry-After %q, want limit 1 and a retry of 1 s", p, r.Header.Get("Retry-After"))
	}
	if n := s.waiters("q"); n != 1 {
		t.Fatalf("%d queued after the refusal, want the first alone", n)
	}
}

func TestAcquire_SessionLockBeyondTheCapGets409(t *testing.T) {
	s := newCappedServer(t, func(c *lock.Config) { c.MaxLocksPerSession = 1 })
	sess := s.createSession(`{"owner":"w"}`)
	s.acquire("one", `{"session":"`+sess.ID+`"}`)
	r := s.Do("POST", "/v1/locks/two", `{"session":"`+sess.ID+`"}`)
	p := testserver.WantProblem(t, r, http.StatusConflict, "too_many_locks_in_session")
	if p.Limit != 1 || r.Header.Get("Retry-After") != "" || !strings.Contains(p.Detail, sess.ID) {
		t.Fatalf("problem %+v, Retry-After %q; want limit 1, the session named and no retry hint", p, r.Header.Get("Retry-After"))
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/two", ""), http.StatusNotFound, "not_held")
}

func TestCreateSession_BeyondTheCapGets429TooManySessions(t *testing.T) {
	s := newCappedServer(t, func(c *lock.Config) { c.MaxSessions = 1 })
	s.createSession(`{"owner":"w"}`)
	r := s.Do("POST", "/v1/sessions", `{"owner":"w"}`)
	p := testserver.WantProblem(t, r, http.StatusTooManyRequests, "too_many_sessions")
	if p.Limit != 1 || r.Header.Get("Retry-After") != "5" {
		t.Fatalf("problem %+v with Retry-After %q, want limit 1 and 5 s", p, r.Header.Get("Retry-After"))
	}
	if n := s.stats().Sessions; n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
}

func TestEvents_BeyondTheStreamCapGets503TooManyStreams(t *testing.T) {
	tc := trail.DefaultConfig()
	tc.MaxEventStreams = 1
	s := newCappedServer(t, func(*lock.Config) {}, testserver.WithTrail(tc))
	s.Allow5xx.Store(true) // the 503 is the point
	st := s.openStream(t, "", "")
	r := s.Do("GET", "/v1/events", "")
	p := testserver.WantProblem(t, r, http.StatusServiceUnavailable, "too_many_streams")
	if p.Limit != 1 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("problem %+v with Retry-After %q, want limit 1 and a retry hint", p, r.Header.Get("Retry-After"))
	}
	// The first stream is unharmed.
	l := s.acquire("seen", `{"owner":"w"}`)
	if _, ev := st.next(); ev.Token != l.Token {
		t.Fatalf("first stream got %+v", ev)
	}
}

// sseReader parses Server-Sent Events from a raw response body.
type sseReader struct {
	sc *bufio.Scanner
}

// next returns the next complete message's id and event type; ok is
// false at the end of the stream (a message cut short is not returned).
func (r *sseReader) next() (id int64, typ string, ok bool) {
	var idText string
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "" && typ != "":
			n, err := strconv.ParseInt(idText, 10, 64)
			if err != nil {
				panic(fmt.Sprintf("message id %q", idText))
			}
			return n, typ, true
		case strings.HasPrefix(line, "id: "):
			idText = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		}
	}
	return 0, "", false
}

func TestEvents_ClientThatStopsReadingIsDroppedAndResumesExactlyOnce(t *testing.T) {
	s := &testServer{t: t, Server: testserver.Start(t,
		// Small socket buffers fill after a few KiB instead of megabytes.
		testserver.WithSendBuffer(4096),
		testserver.WithServer(func(c *server.Config) {
			c.EventWriteTimeout = 300 * time.Millisecond
			c.EventBuffer = 16
		}))}
	conn := dialSmallReceiveBuffer(t, s.TS.Listener.Addr().String())
	defer conn.Close()
	fmt.Fprint(conn, "GET /v1/events HTTP/1.1\r\nHost: baton\r\nAccept: text/event-stream\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/events: %v %v", resp, err)
	}
	rd := &sseReader{sc: bufio.NewScanner(resp.Body)}
	var got []int64
	first := s.acquire("before", `{"owner":"w"}`)
	if id, typ, ok := rd.next(); !ok || id != first.Token || typ != "acquired" {
		t.Fatalf("first message: %d %q %v, want the acquire of token %d", id, typ, ok, first.Token)
	}
	got = append(got, first.Token)
	if n := s.Trail.EventStreams(); n != 1 {
		t.Fatalf("%d streams held, want 1", n)
	}

	// The client stops reading. Events keep coming, each about 1.2 KiB
	// (a revoke's reason is part of it), until the server drops the
	// stream: its write waits past the deadline, or the stream's buffer of
	// 16 events fills.
	reason := strings.Repeat("r", 1000)
	cycles := 0
	poll.Until(t, 60*time.Second, "the stream of a client that stopped reading dropped", func() bool {
		name := fmt.Sprintf("flood-%d", cycles)
		cycles++
		s.acquire(name, `{"owner":"w"}`)
		testserver.WantStatus(t, s.Do("POST", "/v1/locks/"+name+"/revoke", `{"reason":"`+reason+`"}`), http.StatusNoContent)
		return s.Trail.EventStreams() == 0
	})
	// What the server held for it is gone: the stream and its
	// subscription, with its buffered events and its etcd watch.
	if m := s.Do("GET", "/metrics", ""); !strings.Contains(string(m.Body), "\nbaton_event_streams 0\n") {
		t.Fatalf("metrics after the drop do not show 0 event streams")
	}

	// The client reads what reached it before the drop, then the stream
	// ends; it resumes from the last message it read in full.
	for {
		id, _, ok := rd.next()
		if !ok {
			break
		}
		got = append(got, id)
	}
	t.Logf("%d events recorded, %d received before the drop", 2*cycles+1, len(got))
	last := got[len(got)-1]
	if len(got) >= 2*cycles+1 {
		t.Fatalf("the client got all %d events: it was never behind, the test proves nothing", len(got))
	}
	st := s.openStream(t, "", strconv.FormatInt(last, 10))
	end := s.acquire("after", `{"owner":"w"}`)
	for {
		_, ev := st.next()
		got = append(got, ev.Revision)
		if ev.Revision == end.Token {
			break
		}
	}

	// Exactly the audit trail since the first event, once each, in order.
	var want []int64
	for _, ev := range s.history("limit=1000") {
		if ev.Revision >= first.Token {
			want = append([]int64{ev.Revision}, want...)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("revisions received across the drop:\n%v\nwant the trail once each:\n%v", got, want)
	}
}

func TestEvents_HealthyStreamOutlivesTheServersWriteTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("outlives a write timeout: not in the fast tier")
	}
	s := newTestServer(t)
	// The same handler behind an http.Server whose WriteTimeout would end
	// any response after 500ms (baton's is MaxWait + 30s): the stream sets
	// a deadline per write instead, so it lives on while the client reads.
	hs := &http.Server{Handler: s.Handler, WriteTimeout: 500 * time.Millisecond}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+l.Addr().String()+"/v1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	rd := &sseReader{sc: bufio.NewScanner(resp.Body)}
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		l := s.acquire(fmt.Sprintf("long-%d", i), `{"owner":"w"}`)
		if id, _, ok := rd.next(); !ok || id != l.Token {
			t.Fatalf("after %d events and %s the stream gave %d, %v; want the acquire of %d",
				i, 2*time.Second-time.Until(deadline), id, ok, l.Token)
		}
		time.Sleep(100 * time.Millisecond) // the pace of events, not synchronisation
	}
}

// The bounds a request is held to, and the words of its 400, are the
// engine's configuration, not the defaults.
func TestLimits_TheBoundsAndTheirWordsFollowTheEnginesConfig(t *testing.T) {
	s := newCappedServer(t, func(c *lock.Config) {
		c.MinTTL, c.MaxTTL, c.MaxWait, c.MaxLockDelay = 5*time.Second, time.Hour, time.Minute, 10*time.Second
	})
	for _, tc := range []struct{ path, body, field, bound string }{
		{"/v1/locks/a", `{"ttl":"0s"}`, "ttl", "5s"},
		{"/v1/locks/a", `{"ttl":"3s"}`, "ttl", "5s"}, // within the default bounds
		{"/v1/locks/a", `{"ttl":"2h"}`, "ttl", "1h0m0s"},
		{"/v1/locks/a", `{"wait":"90s"}`, "wait", "1m0s"},
		{"/v1/locks/a", `{"lock_delay":"20s"}`, "lock_delay", "10s"},
		{"/v1/sessions", `{"ttl":"0s"}`, "ttl", "5s"},
		{"/v1/sessions", `{"ttl":"3s"}`, "ttl", "5s"},
	} {
		p := testserver.WantProblem(t, s.Do("POST", tc.path, tc.body), http.StatusBadRequest, "invalid_request")
		if p.Field != tc.field || !strings.Contains(p.Detail, tc.bound) {
			t.Errorf("POST %s %s: field %q detail %q, want %s named with the configured bound %s", tc.path, tc.body, p.Field, p.Detail, tc.field, tc.bound)
		}
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/a", ""), http.StatusNotFound, "not_held")
	if l := s.acquire("a", `{"ttl":"5s","wait":"1m","lock_delay":"10s"}`); l.TTL != "5s" || l.LockDelay != "10s" {
		t.Errorf("acquired %+v, want ttl 5s and lock_delay 10s: the configured bounds themselves are allowed", l)
	}
	if sess := s.createSession(`{"ttl":"1h"}`); sess.TTL != "1h0m0s" {
		t.Errorf("session ttl %q, want 1h0m0s", sess.TTL)
	}
}
