package clientsuite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
)

// A malicious or broken server (or a proxy in front of it) must not panic
// the client, nor make it report what did not happen. These targets put a
// real HTTP server, on loopback, in front of the client that answers
// whatever the fuzzer says: status, headers, body, event stream.

// answer is what the fuzzed server says to every request of an iteration.
type answer struct {
	status     int
	ct         string
	retryAfter string
	location   string
	body       []byte

	mu       sync.Mutex
	requests []string // method and path of each request seen
}

func (a *answer) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.requests...)
}

// answeringServer starts a server that answers with *cur, once per fuzz
// worker process.
func answeringServer(f *testing.F, cur *atomic.Pointer[answer]) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		a := cur.Load()
		if a == nil {
			http.Error(w, "no iteration running", http.StatusTeapot)
			return
		}
		a.mu.Lock()
		a.requests = append(a.requests, r.Method+" "+r.URL.Path)
		a.mu.Unlock()
		h := w.Header()
		h["Content-Type"] = []string{a.ct} // as is, even empty or invalid
		if a.retryAfter != "" {
			h.Set("Retry-After", a.retryAfter)
		}
		if a.location != "" {
			h.Set("Location", a.location)
		}
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}))
	f.Cleanup(ts.Close)
	return ts
}

// headerValue reports whether v can travel as a header value at all.
func headerValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// clientCalls are the client's calls, each returning only its error and
// whether it claims success.
var clientCalls = []struct {
	name string
	call func(ctx context.Context, c *client.Client) error
}{
	{"Get", func(ctx context.Context, c *client.Client) error { _, err := c.Get(ctx, "x"); return err }},
	{"Locks", func(ctx context.Context, c *client.Client) error {
		_, _, err := c.Locks(ctx, client.ListOptions{Prefix: "x", Limit: 5, Cursor: "eA"})
		return err
	}},
	{"Renew", func(ctx context.Context, c *client.Client) error { _, err := c.Renew(ctx, "x", 7); return err }},
	{"Release", func(ctx context.Context, c *client.Client) error { return c.Release(ctx, "x", 7) }},
	{"Revoke", func(ctx context.Context, c *client.Client) error { return c.Revoke(ctx, "x", "why") }},
	{"Yield", func(ctx context.Context, c *client.Client) error {
		_, err := c.Yield(ctx, "x", client.YieldOptions{Owner: "w2", Reason: "why"})
		return err
	}},
	{"CreateSession", func(ctx context.Context, c *client.Client) error {
		_, err := c.CreateSession(ctx, "w1", 30*time.Second)
		return err
	}},
	{"GetSession", func(ctx context.Context, c *client.Client) error { _, err := c.GetSession(ctx, "1f"); return err }},
	{"RenewSession", func(ctx context.Context, c *client.Client) error { _, err := c.RenewSession(ctx, "1f"); return err }},
	{"DeleteSession", func(ctx context.Context, c *client.Client) error { return c.DeleteSession(ctx, "1f") }},
	{"PutFenced", func(ctx context.Context, c *client.Client) error {
		_, err := c.PutFenced(ctx, "r", 7, map[string]int{"v": 1}, "x")
		return err
	}},
	{"GetFenced", func(ctx context.Context, c *client.Client) error { _, err := c.GetFenced(ctx, "r"); return err }},
	{"History", func(ctx context.Context, c *client.Client) error {
		_, _, err := c.History(ctx, client.HistoryOptions{Lock: "x", Limit: 10})
		return err
	}},
	{"Cluster", func(ctx context.Context, c *client.Client) error { _, err := c.Cluster(ctx); return err }},
	{"AcquireOnce", func(ctx context.Context, c *client.Client) error {
		_, err := c.AcquireOnce(ctx, "x", client.AcquireOptions{Owner: "w1", TTL: 30 * time.Second})
		return err
	}},
	{"Acquire", func(ctx context.Context, c *client.Client) error {
		l, err := c.Acquire(ctx, "x", client.AcquireOptions{Owner: "w1", TTL: 30 * time.Second, Metadata: map[string]string{"k": "v"}})
		if err != nil {
			return err
		}
		// A *Lock renews itself in the background; end that here, whatever
		// the server answers to the release.
		_ = l.Release(ctx)
		_ = l.Info()
		return nil
	}},
}

// problemCodes are the server's codes and the sentinels they mean.
var problemCodes = map[string]error{
	"lock_held": client.ErrHeld, "not_held": client.ErrNotHeld, "token_mismatch": client.ErrTokenMismatch,
	"stale_token": client.ErrStaleToken, "not_holder": client.ErrNotHolder, "session_not_found": client.ErrSessionNotFound,
	"not_found": client.ErrNotFound, "invalid_request": client.ErrInvalid, "unavailable": client.ErrUnavailable,
	"shutting_down": client.ErrUnavailable,
}

func FuzzClient_ServerAnswers(f *testing.F) {
	// Seeds: what the server says (from the API's own tests), and what
	// proxies and broken servers say.
	for _, s := range []struct {
		call           uint8
		status         uint16
		ct, retry, loc string
		body           string
	}{
		{0, 200, "application/json", "", "", `{"name":"x","owner":"w1","token":4711,"ttl":"30s","acquired_at":"2026-11-29T14:25:13.886Z","expires_at":"2026-11-29T14:25:43.881Z","metadata":{},"waiters":[{"owner":"w2","position":1,"since":"2026-11-29T14:25:13.886Z"}]}`},
		{0, 404, "application/problem+json", "", "", `{"type":"urn:baton:problem:not_held","title":"Lock not held","status":404,"code":"not_held","detail":"lock not held"}`},
		{13, 409, "application/problem+json", "2", "", `{"type":"urn:baton:problem:lock_held","title":"Lock held","status":409,"code":"lock_held","holder":{"name":"x","owner":"w1","token":2,"ttl":"30s"},"retry_after":2}`},
		{9, 409, "application/problem+json", "", "", `{"type":"urn:baton:problem:stale_token","title":"Stale fencing token","status":409,"code":"stale_token","max_token":5}`},
		{3, 503, "application/problem+json", "1", "", `{"type":"urn:baton:problem:unavailable","title":"Service unavailable","status":503,"code":"unavailable","retry_after":1}`},
		{3, 502, "text/html", "", "", `<html><body>Bad Gateway</body></html>`},
		{1, 200, "application/json", "", "", `{"locks":[{"name":"x","token":1,"ttl":"nope"}],"next_cursor":"eA"}`},
		{11, 200, "application/json", "", "", `{"events":[{"revision":4712,"time":"2026-11-29T14:25:13.886Z","type":"acquired","lock":"x","owner":"w1","token":4711}],"next_before":4712}`},
		{12, 200, "application/json", "", "", `{"members":[{"id":"1","name":"n1","peer_urls":[],"client_urls":[],"is_leader":true}],"leader":"1","raft_term":2,"revision":9}`},
		{5, 201, "application/json", "", "", `{"id":"694d2279b4919071","owner":"w1","ttl":"30s","created_at":"2026-11-29T14:25:13.886Z","expires_at":"2026-11-29T14:25:43.881Z","locks":[]}`},
		{14, 201, "application/json", "", "", `{"name":"x","owner":"w1","token":4711,"ttl":"2562047h","acquired_at":"2026-11-29T14:25:13.886Z","expires_at":"0001-01-01T00:00:00Z"}`},
		{0, 200, "application/json", "", "", `{"name":"x"`},
		{3, 301, "text/html", "", "/v1/locks/x", ``},
		{3, 302, "", "", "", ``},
		{4, 429, "application/problem+json", "99999999999999", "", `{"code":"rate_limited","retry_after":99999999999999}`},
		{0, 503, "", "Wed, 21 Oct 2015 07:28:00 GMT", "", ``},
		{2, 503, "application/problem+json", "", "", `{"code":"unavailable","retry_after":9223372037}`},
	} {
		f.Add(s.call, s.status, s.ct, s.retry, s.loc, []byte(s.body))
	}
	var cur atomic.Pointer[answer]
	ts := answeringServer(f, &cur)
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{ts.URL}, Timeout: 5 * time.Second, RetryBackoff: time.Millisecond, MaxRetries: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, call uint8, status uint16, ct, retryAfter, location string, body []byte) {
		if !headerValue(ct) || !headerValue(retryAfter) || !headerValue(location) {
			return // no server can send it
		}
		// 1xx are interim answers net/http sends before the real one, and
		// net/http refuses to write codes above 999.
		code := int(status)
		if code < 200 || code > 599 {
			code = 200 + code%400
		}
		a := &answer{status: code, ct: ct, retryAfter: retryAfter, location: location, body: body}
		cur.Store(a)
		defer cur.Store(nil)
		k := clientCalls[int(call)%len(clientCalls)]
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := k.call(ctx, c)
		if ctx.Err() != nil {
			t.Fatalf("%s: no result within 20s against a server answering %d", k.name, a.status)
		}
		checkClientResult(t, k.name, a, err)
	})
}

func checkClientResult(t *testing.T, call string, a *answer, err error) {
	t.Helper()
	ok2xx := a.status >= 200 && a.status < 300
	if err == nil {
		if !ok2xx {
			t.Fatalf("%s: the server answered %d (Location %q), yet the call reports success; requests: %q", call, a.status, a.location, a.seen())
		}
		return
	}
	if msg := err.Error(); msg == "" {
		t.Fatalf("%s: an error with no message", call)
	}
	var e *client.Error
	if !errors.As(err, &e) {
		if a.status >= 300 && a.status < 400 && a.location != "" {
			return // a redirect followed, to itself here, until the client gave up
		}
		if !ok2xx {
			t.Fatalf("%s: the server answered %d, yet the error %v carries no *client.Error", call, a.status, err)
		}
		// A success answer the client could not read. A body that arrived
		// whole is no unavailability: the server answered, and retrying
		// elsewhere (or calling the outcome unknown) is not the point.
		if errors.Is(err, client.ErrUnavailable) && a.status != http.StatusNoContent {
			t.Fatalf("%s: a complete %d answer %q that does not decode reads as unavailable: %v", call, a.status, a.body, err)
		}
		return
	}
	if ok2xx {
		// Acquire renews at once when the answer leaves it no time; that
		// renew may have got the same 2xx, undecodable. Only an error
		// answer makes a *client.Error.
		t.Fatalf("%s: %d answer turned into %v", call, a.status, e)
	}
	if e.Status != a.status {
		t.Fatalf("%s: status %d reported as %d", call, a.status, e.Status)
	}
	if e.RetryAfter < 0 {
		t.Fatalf("%s: Retry-After %q, retry_after in %q read as %v", call, a.retryAfter, a.body, e.RetryAfter)
	}
	if !strings.Contains(e.Error(), fmt.Sprintf("(%d", a.status)) || strings.Count(e.Error(), "\n") > 0 {
		t.Fatalf("%s: error text %q is not one line with the status", call, e.Error())
	}
	// A problem document, as far as its members that say what went wrong
	// go: a broken member elsewhere (a holder that does not parse) must
	// not lose them.
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Code   string `json:"code"`
		Field  string `json:"field"`
	}
	// A 304 (like a 204) carries no body: net/http drops whatever the
	// handler writes, so no problem arrives to be read.
	mt, _, mterr := mime.ParseMediaType(a.ct)
	isProblem := a.status != http.StatusNotModified && a.status != http.StatusNoContent && mterr == nil &&
		(mt == "application/json" || strings.HasSuffix(mt, "+json")) && json.Unmarshal(a.body, &p) == nil && p.Code != ""
	if isProblem && (e.Code != p.Code || e.Detail != p.Detail || e.Field != p.Field) {
		t.Fatalf("%s: problem %+v read as %+v", call, p, e)
	}
	if !isProblem && e.Code != "" {
		t.Fatalf("%s: no problem document, yet code %q", call, e.Code)
	}
	if want := a.status >= 500 || problemCodes[e.Code] == client.ErrUnavailable; errors.Is(err, client.ErrUnavailable) != want {
		t.Fatalf("%s: %d %q: errors.Is(err, ErrUnavailable) = %v, want %v", call, a.status, e.Code, !want, want)
	}
	if s := problemCodes[e.Code]; s != nil && !errors.Is(err, s) {
		t.Fatalf("%s: code %q does not match its sentinel %v", call, e.Code, s)
	}
}

// FuzzClient_EventStream serves the fuzzer's bytes as an event stream,
// then refuses the reconnection with a 400, which ends Events. The events
// delivered must come in revision order, each once, after where the
// stream began; the reconnection must resume from the last one.
func FuzzClient_EventStream(f *testing.F) {
	addStreamSeeds(f)
	var cur atomic.Pointer[streamIteration]
	ts := httptest.NewServer(streamServer(&cur))
	f.Cleanup(ts.Close)
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{ts.URL}, Timeout: 5 * time.Second, RetryBackoff: time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, since int64, body []byte) {
		if since < 0 {
			since = -(since + 1)
		}
		it := &streamIteration{body: body}
		cur.Store(it)
		defer cur.Store(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		evc, errc := c.Events(ctx, client.EventsOptions{Since: since})
		base := since
		if since == 0 {
			base = 4 // the revision /v1/cluster says
		}
		var got []client.Event
		for e := range evc {
			got = append(got, e)
		}
		err := <-errc
		if ctx.Err() != nil {
			t.Fatalf("the stream did not end within 20s; %d events", len(got))
		}
		var e *client.Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Fatalf("Events ended with %v, want the 400 of the reconnection", err)
		}
		checkStream(t, got, base, it)
	})
}

// addStreamSeeds seeds FuzzClient_EventStream with what the server writes
// (api/events.go), and with broken streams.
func addStreamSeeds(f *testing.F) {
	ev := func(rev int64, typ, lock string, token int64) string {
		b, _ := json.Marshal(map[string]any{"revision": rev, "time": "2026-11-29T14:25:13.886Z", "type": typ, "lock": lock, "owner": "w1", "token": token})
		return fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", rev, typ, b)
	}
	for _, s := range []struct {
		since int64
		body  string
	}{
		{1, "retry: 2000\n\n" + ev(5, "acquired", "x", 5) + ev(6, "released", "x", 5) + ": heartbeat\n\n"},
		{5, ev(5, "acquired", "x", 5) + ev(7, "acquired", "y", 7) + ev(7, "acquired", "z", 7) + ev(6, "released", "x", 5) + ev(7, "acquired", "y", 7)},
		{0, ev(9, "acquired", "x", 9) + ": stream ended: client too slow; reconnect with Last-Event-ID\n\n"},
		{1, "id: 3\r\nevent: acquired\r\ndata: {\"lock\":\"x\",\r\ndata: \"token\":3}\r\n\r\n"},
		{1, "data: not json\n\n"},
		{1, "id: abc\ndata: {}\n\n"},
		{1, "data: {\"revision\":-5}\n\n"},
		{1, "data: {\"revision\":9223372036854775807}\n\ndata: {\"revision\":1}\n\n"},
		{1, "event\ndata\n\nid\n:\n\n"},
		{1, ev(3, "acquired", "x", 3)[:40]},
	} {
		f.Add(s.since, []byte(s.body))
	}
}

// streamIteration is what FuzzClient_EventStream's server serves in one
// iteration, and what it saw.
type streamIteration struct {
	body    []byte
	conns   atomic.Int32
	resumed atomic.Pointer[string] // Last-Event-ID of the reconnection; "-" when absent
}

// streamServer answers /v1/cluster with revision 4, the first stream
// request with the iteration's body, and every later one with a 400
// after noting its Last-Event-ID.
func streamServer(cur *atomic.Pointer[streamIteration]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		it := cur.Load()
		switch {
		case it == nil:
			http.Error(w, "no iteration running", http.StatusTeapot)
		case r.URL.Path == "/v1/cluster":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"members":[],"leader":"1","raft_term":2,"revision":4}`)
		case it.conns.Add(1) == 1:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(it.body)
		default:
			id, ok := r.Header["Last-Event-Id"]
			seen := "-"
			if ok {
				seen = strings.Join(id, ",")
			}
			it.resumed.CompareAndSwap(nil, &seen)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"type":"urn:baton:problem:invalid_request","title":"Invalid request","status":400,"code":"invalid_request","detail":"stop","field":"lock"}`)
		}
	})
}

// checkStream checks the events a stream that began after base
// delivered: in revision order, each once, all after base; and that the
// reconnection resumed from the last one.
func checkStream(t *testing.T, got []client.Event, base int64, it *streamIteration) {
	t.Helper()
	type key struct {
		rev             int64
		typ, lock, sess string
		token           int64
	}
	delivered := map[key]bool{}
	for i, ev := range got {
		k := key{ev.Revision, ev.Type, ev.Lock, ev.Session, ev.Token}
		switch {
		case ev.Revision <= base:
			t.Fatalf("event %d of revision %d delivered; the stream began after %d", i, ev.Revision, base)
		case i > 0 && ev.Revision < got[i-1].Revision:
			t.Fatalf("event %d of revision %d after one of %d", i, ev.Revision, got[i-1].Revision)
		case delivered[k]:
			t.Fatalf("event %+v delivered twice", ev)
		}
		delivered[k] = true
	}
	want := base
	if len(got) > 0 {
		want = got[len(got)-1].Revision - 1
	}
	wantHeader := "-"
	if want > 0 {
		wantHeader = strconv.FormatInt(want, 10)
	}
	if p := it.resumed.Load(); p == nil || *p != wantHeader {
		t.Fatalf("reconnected with Last-Event-ID %v, want %q (%d events delivered)", p, wantHeader, len(got))
	}
}
