package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testserver"
)

// sseMessage is one Server-Sent Events message.
type sseMessage struct {
	ID, Event, Data string
}

// stream is an open GET /v1/events.
type stream struct {
	t    *testing.T
	resp *http.Response
	msgs chan sseMessage
	// comments counts comment lines (heartbeats).
	comments chan string
	cancel   context.CancelFunc
}

// openStream connects to /v1/events with query and optional Last-Event-ID.
func (s *testServer) openStream(t *testing.T, query, lastEventID string) *stream {
	t.Helper()
	return s.openStreamAt(t, "/v1/events"+query, lastEventID)
}

// openStreamAt connects to the event stream at path.
func (s *testServer) openStreamAt(t *testing.T, path, lastEventID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.TS.URL+path, nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := s.TS.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	st := &stream{t: t, resp: resp, msgs: make(chan sseMessage, 1024), comments: make(chan string, 1024), cancel: cancel}
	go func() {
		defer close(st.msgs)
		sc := bufio.NewScanner(resp.Body)
		var m sseMessage
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m.Data != "" {
					st.msgs <- m
				}
				m = sseMessage{}
			case strings.HasPrefix(line, ":"):
				select {
				case st.comments <- line:
				default:
				}
			case strings.HasPrefix(line, "id: "):
				m.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				m.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				m.Data = line[6:]
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return st
}

// next returns the next message, failing after a deadline.
func (st *stream) next() (sseMessage, api.Event) {
	st.t.Helper()
	select {
	case m, ok := <-st.msgs:
		if !ok {
			st.t.Fatal("event stream ended")
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(m.Data), &ev); err != nil {
			st.t.Fatalf("event data %q: %v", m.Data, err)
		}
		if m.ID != strconv.FormatInt(ev.Revision, 10) || m.Event != ev.Type {
			st.t.Fatalf("message id %q / event %q do not match its data %+v", m.ID, m.Event, ev)
		}
		return m, ev
	case <-time.After(20 * time.Second):
		st.t.Fatal("no event within 20s")
	}
	panic("unreachable")
}

// none checks that no message is pending right after events that came
// before it in the same stream.
func (st *stream) none() {
	st.t.Helper()
	select {
	case m := <-st.msgs:
		st.t.Fatalf("unexpected extra event %+v", m)
	default:
	}
}

func TestEvents_StreamsEachEventOnceWithRevisionAndType(t *testing.T) {
	s := newTestServer(t)
	st := s.openStream(t, "", "")
	l := s.acquire("streamed", `{"owner":"w1"}`)
	s.release("streamed", l.Token)

	m, ev := st.next()
	if ev.Type != "acquired" || ev.Lock != "streamed" || ev.Owner != "w1" || ev.Token != l.Token || ev.Revision != l.Token {
		t.Fatalf("first event %+v (%+v), want acquired of token %d", ev, m, l.Token)
	}
	_, ev = st.next()
	if ev.Type != "released" || ev.Token != l.Token || ev.Revision <= l.Token {
		t.Fatalf("second event %+v, want released of token %d", ev, l.Token)
	}
}

func TestEvents_ResumeReplaysWhatWasMissedThenContinuesLive(t *testing.T) {
	for _, resume := range []struct {
		name          string
		query, header func(cut int64) string
	}{
		{"since", func(c int64) string { return fmt.Sprintf("?since=%d", c) }, func(int64) string { return "" }},
		{"Last-Event-ID", func(int64) string { return "" }, func(c int64) string { return strconv.FormatInt(c, 10) }},
		{"Last-Event-ID wins over since", func(int64) string { return "?since=1" }, func(c int64) string { return strconv.FormatInt(c, 10) }},
	} {
		t.Run(resume.name, func(t *testing.T) {
			s := newTestServer(t)
			a := s.acquire("r1", `{"owner":"w1"}`) // up to the cut: never replayed
			b := s.acquire("r2", `{"owner":"w2"}`)
			s.release("r2", b.Token)
			st := s.openStream(t, resume.query(a.Token), resume.header(a.Token))
			_, e1 := st.next()
			_, e2 := st.next()
			if e1.Type != "acquired" || e1.Lock != "r2" || e2.Type != "released" || e2.Lock != "r2" {
				t.Fatalf("replay: %+v, %+v; want r2's acquired and released only", e1, e2)
			}
			st.none()
			c := s.acquire("r3", `{"owner":"w3"}`)
			_, e3 := st.next()
			if e3.Type != "acquired" || e3.Token != c.Token {
				t.Fatalf("live after replay: %+v, want acquired of token %d", e3, c.Token)
			}
		})
	}
}

func TestEvents_SinceIsExclusiveSoZeroReplaysEveryEvent(t *testing.T) {
	for _, from := range []struct{ name, query, header string }{
		{"since=0", "?since=0", ""},
		{"Last-Event-ID: 0", "", "0"},
	} {
		t.Run(from.name, func(t *testing.T) {
			s := newTestServer(t)
			first := s.acquire("early", `{"owner":"w1"}`)
			s.release("early", first.Token)
			st := s.openStream(t, from.query, from.header)
			if _, ev := st.next(); ev.Type != "acquired" || ev.Token != first.Token {
				t.Fatalf("first event %+v, want the very first acquire (token %d)", ev, first.Token)
			}
			if _, ev := st.next(); ev.Type != "released" || ev.Token != first.Token {
				t.Fatalf("second event %+v, want its release", ev)
			}
			// Then live, as ever.
			later := s.acquire("later", `{"owner":"w2"}`)
			if _, ev := st.next(); ev.Type != "acquired" || ev.Token != later.Token {
				t.Fatalf("third event %+v, want the live acquire of token %d", ev, later.Token)
			}
		})
	}
	t.Run("no since", func(t *testing.T) {
		s := newTestServer(t)
		s.acquire("early", `{"owner":"w1"}`)
		st := s.openStream(t, "", "")
		later := s.acquire("later", `{"owner":"w2"}`)
		if _, ev := st.next(); ev.Lock != "later" || ev.Token != later.Token {
			t.Fatalf("first event without since: %+v, want only live events", ev)
		}
	})
}

func TestEvents_LockFilterAndExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	s := newTestServer(t)
	st := s.openStream(t, "?lock=short", "")
	s.acquire("other", `{"owner":"w1"}`)
	l := s.acquire("short", `{"owner":"w2","ttl":"2s"}`)
	_, ev := st.next()
	if ev.Lock != "short" || ev.Type != "acquired" {
		t.Fatalf("filtered stream sent %+v", ev)
	}
	// etcd expires the lease by itself; the recorder writes "expired".
	_, ev = st.next()
	if ev.Lock != "short" || ev.Type != "expired" || ev.Token != l.Token {
		t.Fatalf("after the TTL: %+v, want expired of token %d", ev, l.Token)
	}
}

func TestEvents_CarryKindAndNameAndFilterOnThem(t *testing.T) {
	s := newTestServer(t)
	byName := s.openStream(t, "?kind=lock&name=kn-b", "")
	s.acquire("kn-a", `{"owner":"w1"}`)
	b := s.acquire("kn-b", `{"owner":"w2"}`)
	if _, ev := byName.next(); ev.Kind != "lock" || ev.Name != "kn-b" || ev.Lock != "kn-b" || ev.Token != b.Token {
		t.Fatalf("stream of kind=lock&name=kn-b sent %+v", ev)
	}
	h := testserver.WantJSON[api.History](t, s.Do("GET", "/v1/history?name=kn-a", ""), 200)
	if len(h.Events) != 1 || h.Events[0].Kind != "lock" || h.Events[0].Name != "kn-a" {
		t.Fatalf("history of name=kn-a: %+v", h.Events)
	}
	// No election has events yet.
	if h := testserver.WantJSON[api.History](t, s.Do("GET", "/v1/history?kind=election", ""), 200); len(h.Events) != 0 {
		t.Fatalf("history of kind=election: %+v, want none", h.Events)
	}
	for _, q := range []string{"?kind=mutex", "?name=bad/name", "?lock=kn-a&name=kn-b"} {
		for _, path := range []string{"/v1/history", "/v1/events"} {
			p := testserver.WantProblem(t, s.Do("GET", path+q, ""), 400, "invalid_request")
			if want := map[string]string{"?kind=mutex": "kind"}[q]; want != "" && p.Field != want {
				t.Fatalf("%s%s names field %q, want %q", path, q, p.Field, want)
			}
		}
	}
}

func TestEvents_BadInputIsAProblem(t *testing.T) {
	s := newTestServer(t)
	for _, tc := range []struct{ query, field string }{
		{"?since=x", "since"}, {"?since=-1", "since"}, {"?lock=bad/name", "lock"}, {"?nope=1", "nope"},
	} {
		if p := testserver.WantProblem(t, s.Do("GET", "/v1/events"+tc.query, ""), 400, "invalid_request"); p.Field != tc.field {
			t.Errorf("%s: field %q, want %q (detail %q)", tc.query, p.Field, tc.field, p.Detail)
		}
	}
	req, _ := http.NewRequest("GET", "/v1/events", nil)
	req.Header.Set("Last-Event-ID", "yesterday")
	if p := testserver.WantProblem(t, s.Serve(req), 400, "invalid_request"); p.Field != "Last-Event-ID" {
		t.Errorf("Last-Event-ID: yesterday: field %q, want Last-Event-ID (detail %q)", p.Field, p.Detail)
	}
}

func TestHistory_FiltersByOwnerTypeAndTime(t *testing.T) {
	s := newTestServer(t)
	start := time.Now().UTC()
	a := s.acquire("f1", `{"owner":"alice"}`)
	s.release("f1", a.Token)
	b := s.acquire("f2", `{"owner":"bob"}`)
	s.Do("POST", "/v1/locks/f2/revoke", `{"reason":"test"}`)
	// A release's time is when the trail read it from etcd, which a read
	// of the history waits for. Event times have millisecond precision:
	// then cut at a millisecond boundary that has passed, so every event
	// so far is before it and every later one at or after it.
	s.history("limit=1")
	mid := time.Now().UTC().Truncate(time.Millisecond).Add(time.Millisecond)
	for time.Now().Before(mid) {
		runtime.Gosched()
	}
	s.acquire("f3", `{"owner":"alice"}`)

	cases := []struct {
		query string
		want  []string // "lock:type", newest first
	}{
		{"owner=alice", []string{"f3:acquired", "f1:released", "f1:acquired"}},
		{"type=revoked", []string{"f2:revoked"}},
		{"type=acquired,revoked&owner=bob", []string{"f2:revoked", "f2:acquired"}},
		{"from=" + mid.Format(time.RFC3339Nano), []string{"f3:acquired"}},
		{"to=" + mid.Format(time.RFC3339Nano) + "&from=" + start.Add(-time.Second).Format(time.RFC3339Nano) + "&owner=bob", []string{"f2:revoked", "f2:acquired"}},
		{"owner=alice&limit=1", []string{"f3:acquired"}},
	}
	for _, c := range cases {
		var got []string
		for _, e := range s.history(c.query) {
			got = append(got, e.Lock+":"+e.Type)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("history?%s = %v, want %v", c.query, got, c.want)
		}
	}
	// Paging with filters: each page continues where the last one ended.
	h := testserver.WantJSON[api.History](t, s.Do("GET", "/v1/history?owner=alice&limit=2", ""), 200)
	if len(h.Events) != 2 || h.NextBefore == 0 {
		t.Fatalf("first page %+v", h)
	}
	h2 := testserver.WantJSON[api.History](t, s.Do("GET", fmt.Sprintf("/v1/history?owner=alice&limit=2&before=%d", h.NextBefore), ""), 200)
	if len(h2.Events) != 1 || h2.Events[0].Lock != "f1" || h2.Events[0].Type != "acquired" || h2.NextBefore != 0 {
		t.Fatalf("second page %+v", h2)
	}
	_ = b
	for _, q := range []string{"?type=exploded", "?from=yesterday", "?to=2026-13-01T00:00:00Z",
		"?from=2026-11-29T10:00:00Z&to=2026-11-29T09:00:00Z"} {
		testserver.WantProblem(t, s.Do("GET", "/v1/history"+q, ""), 400, "invalid_request")
	}
}

func TestGetLock_ShowsTheQueueInGrantOrder(t *testing.T) {
	s := newTestServer(t)
	s.acquire("queued", `{"owner":"holder"}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i, owner := range []string{"first", "second"} {
		go s.Send(ctx, "POST", "/v1/locks/queued", `{"owner":"`+owner+`","wait":"1m"}`)
		poll.Until(t, 10*time.Second, "waiter queued", func() bool { return s.waiters("queued") == int64(i+1) })
	}
	l := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/queued", ""), 200)
	if len(l.Waiters) != 2 || l.Waiters[0].Owner != "first" || l.Waiters[0].Position != 1 ||
		l.Waiters[1].Owner != "second" || l.Waiters[1].Position != 2 || time.Time(l.Waiters[0].Since).IsZero() {
		t.Fatalf("waiters %+v, want first then second", l.Waiters)
	}
	cancel()
	poll.Until(t, 10*time.Second, "waiters gone", func() bool { return s.waiters("queued") == 0 })
}
