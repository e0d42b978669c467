package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api/internal/request"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
)

// The decoders are pure functions of the request, so these targets call
// them directly, without an engine: thousands of inputs a second. The
// HTTP-level target (fuzz_http_test.go) runs the same inputs through the
// real router over real etcd.

// bodyKinds are the request bodies of the API, each with the fields its
// JSON object may carry and whether an empty body is allowed.
var bodyKinds = []bodyKind{
	{"acquire", func() any { return new(AcquireRequest) }, []string{"owner", "ttl", "session", "wait", "keep_place", "lock_delay", "min_hold", "metadata"}, true},
	{"renew", func() any { return new(RenewRequest) }, []string{"token"}, false},
	{"revoke", func() any { return new(RevokeRequest) }, []string{"reason"}, true},
	{"session", func() any { return new(SessionRequest) }, []string{"ttl", "owner", "bind", "grace"}, true},
	{"fenced", func() any { return new(FencedRequest) }, []string{"token", "value", "lock"}, false},
	{"session renew", func() any { return new(struct{}) }, nil, true},
}

// decodeBodySeeds are the bodies of the handler tests (badinput_test.go
// and the route tests), good and bad, by bodyKinds index.
var decodeBodySeeds = []struct {
	kind uint8
	ct   string
	body string
}{}

func FuzzDecodeBody(f *testing.F) {
	for _, s := range decodeBodySeeds {
		f.Add(s.kind, s.ct, []byte(s.body))
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, kind uint8, ct string, body []byte) {
		k := bodyKinds[int(kind)%len(bodyKinds)]
		v := k.new()
		if err := request.Body(newContext(e, ct, body), v, k.optional); err != nil {
			checkRefusal(t, k, ct, body, err)
			return
		}
		checkAccepted(t, e, k, ct, body, v)
	})
}

// bodyKind is a row of bodyKinds.
type bodyKind = struct {
	name     string
	new      func() any
	fields   []string
	optional bool
}

// checkRefusal checks that decodeBody refused body of kind k rightly: a
// problem the table knows, of the right status, naming a field at fault,
// for a body the standard library would not take as it is.
func checkRefusal(t *testing.T, k bodyKind, ct string, body []byte, err error) {
	trimmed := bytes.TrimSpace(body)
	p, known := toProblem(err, errorTable)
	if !known {
		t.Fatalf("%s body %q: error %T %v, which the error table does not know", k.name, body, err, err)
	}
	checkProblem(t, p)
	switch p.Status {
	case http.StatusRequestEntityTooLarge:
		if len(body) <= request.MaxBodyBytes {
			t.Fatalf("%d bytes answered 413; the limit is %d", len(body), request.MaxBodyBytes)
		}
		return
	case http.StatusUnsupportedMediaType:
		if len(body) == 0 || isJSON(ct) {
			t.Fatalf("content type %q with %d bytes of body answered 415", ct, len(body))
		}
		return
	case http.StatusBadRequest:
	default:
		t.Fatalf("%s body %q: status %d, want 400, 413 or 415", k.name, body, p.Status)
	}
	// The field named must be at fault: the body as a whole, a
	// field of this request (or a member of one: metadata.KEY), or a
	// member the request does not have.
	top, _, _ := strings.Cut(p.Field, ".")
	if p.Field != "body" && !slicesContain(k.fields, p.Field) && !slicesContain(k.fields, top) && !hasKey(trimmed, p.Field) {
		t.Fatalf("%s body %q: problem names field %q, which is neither body, a field of the request nor a member of the body (detail %q)", k.name, body, p.Field, p.Detail)
	}
	// A body that the standard library reads without complaint,
	// with no unknown member, must not be refused.
	if len(body) <= request.MaxBodyBytes && (len(body) == 0 || isJSON(ct)) && (len(trimmed) > 0 || k.optional) &&
		(len(trimmed) == 0 || json.Unmarshal(body, k.new()) == nil && len(unknownKeys(trimmed, k.fields)) == 0 && isObjectOrNull(trimmed)) {
		t.Fatalf("%s body %q (content type %q) is valid, yet refused: %v", k.name, body, ct, err)
	}
}

// checkAccepted checks that a body decodeBody took into v is one JSON
// object of known members, sent as JSON, that survives a round trip.
func checkAccepted(t *testing.T, e *echo.Echo, k bodyKind, ct string, body []byte, v any) {
	trimmed := bytes.TrimSpace(body)
	if len(body) > request.MaxBodyBytes {
		t.Fatalf("a body of %d bytes was accepted; the limit is %d", len(body), request.MaxBodyBytes)
	}
	if len(body) > 0 && !isJSON(ct) {
		t.Fatalf("a body of %d bytes with content type %q accepted; only application/json may carry one", len(body), ct)
	}
	if len(trimmed) == 0 {
		if !k.optional {
			t.Fatalf("%s: an empty body was accepted where one is required", k.name)
		}
		if !reflect.DeepEqual(v, k.new()) {
			t.Fatalf("%s: an empty body decoded as %+v, want the zero request", k.name, v)
		}
		return
	}
	if !json.Valid(body) || !isObjectOrNull(trimmed) {
		t.Fatalf("%s body %q accepted: not one JSON object", k.name, body)
	}
	if u := unknownKeys(trimmed, k.fields); len(u) > 0 {
		t.Fatalf("%s body %q accepted with unknown members %q", k.name, body, u)
	}
	// decode -> encode -> decode gives the same request. Except a
	// fenced write without value: it encodes as "value":null, the JSON
	// value null, which is a request of its own. It never reaches the
	// engine (value is required) and the document says value is
	// required, so FencedRequest keeps no omitempty for it.
	if fr, ok := v.(*FencedRequest); ok && fr.Value == nil {
		return
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", v, err)
	}
	v2 := k.new()
	if err := request.Body(newContext(e, "application/json", again), v2, k.optional); err != nil {
		t.Fatalf("%s: %s re-encoded as %s, which is refused: %v", k.name, body, again, err)
	}
	if !reflect.DeepEqual(normalize(v), normalize(v2)) {
		t.Fatalf("%s: %s decodes to %+v, its re-encoding %s to %+v", k.name, body, v, again, v2)
	}
}

func newContext(e *echo.Echo, ct string, body []byte) echo.Context {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if ct != "" {
		req.Header.Set(echo.HeaderContentType, ct)
	}
	return e.NewContext(req, httptest.NewRecorder())
}

// checkProblem checks what every problem must say.
func checkProblem(t *testing.T, p *Problem) {
	t.Helper()
	if p.Status < 400 || p.Status > 499 || p.Code == "" || p.Type != ProblemType(p.Code) || p.Title == "" || p.Detail == "" {
		t.Fatalf("incomplete problem %+v", p)
	}
	if p.Status == http.StatusBadRequest && (p.Code != "invalid_request" || p.Field == "") {
		t.Fatalf("a 400 must be invalid_request and name the field: %+v", p)
	}
}

// hasKey reports whether the JSON object at the start of b has a member
// named key (what follows it may be garbage: the decoder stops there).
func hasKey(b []byte, key string) bool {
	var m map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(b)).Decode(&m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// unknownKeys returns the members of the JSON object b that name no field,
// exactly: docs/API.md's field names are case-sensitive (encoding/json's are
// not).
func unknownKeys(b []byte, fields []string) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	var out []string
	for key := range m {
		if !slicesContain(fields, key) {
			out = append(out, key)
		}
	}
	return out
}

func isObjectOrNull(b []byte) bool { return b[0] == '{' || string(b) == "null" }

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// normalize makes requests comparable after a round trip: an empty
// metadata map is omitted on encoding, and a raw JSON value is compacted.
func normalize(v any) any {
	switch r := v.(type) {
	case *AcquireRequest:
		c := *r
		if len(c.Metadata) == 0 {
			c.Metadata = nil
		}
		return c
	case *FencedRequest:
		c := *r
		if c.Value != nil {
			var buf bytes.Buffer
			if err := json.Compact(&buf, c.Value); err == nil {
				c.Value = buf.Bytes()
			}
		}
		return c
	}
	return v
}

// queryRoutes are the query parameters each route takes.
var queryRoutes = [][]string{
	{"prefix", "limit", "cursor"}, // GET /v1/locks
	{"token"},                     // DELETE /v1/locks/{name}
	{"lock", "limit", "before", "owner", "type", "from", "to"}, // GET /v1/history
	{"lock", "since"}, // GET /v1/events
	{},                // every other route
}

func FuzzQueryParams(f *testing.F) {
	for _, s := range []struct {
		route uint8
		q     string
	}{
		{0, "prefix=night&limit=100&cursor=" + request.EncodeCursor("nightly-recon")},
		{0, "limit=0"}, {0, "limit=1001"}, {0, "limit=x"}, {0, "cursor=!!!"}, {0, "cursor=YSBi"}, {0, "prefix=a!"}, {0, "sort=name"},
		{1, "token=4711"}, {1, "token=abc"}, {1, "token=0"}, {1, "token=-1"}, {1, "token=5&token=5"}, {1, "token=5&force=1"}, {1, "token=%2B7"},
		{2, "lock=a&limit=10&before=99&owner=w1&type=acquired,released&from=2026-11-29T14:00:00Z&to=2026-11-29T15:00:00.5%2B01:00"},
		{2, "before=0"}, {2, "before=-1"}, {2, "from=yesterday"}, {2, "after=1"},
		{3, "since=0"}, {3, "since=4611686018427387904"}, {3, "since=4611686018427387905"},
		{4, ""}, {4, "verbose=1"}, {4, "a=1;b=2"},
	} {
		f.Add(s.route, s.q)
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, route uint8, rawQuery string) {
		allowed := queryRoutes[int(route)%len(queryRoutes)]
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.RawQuery = rawQuery
		c := e.NewContext(req, httptest.NewRecorder())
		err := request.CheckQuery(rawQuery, allowed)
		q := request.Query(c) // what a handler reads once the check has passed
		parsed, perr := url.ParseQuery(rawQuery)
		_, emptyName := parsed[""]
		if err != nil {
			p := wantBadRequest(t, err)
			if p.Field == "query" && (perr != nil || emptyName) {
				return // the query string itself is at fault
			}
			if vs, ok := parsed[p.Field]; !ok || slicesContain(allowed, p.Field) && len(vs) < 2 {
				t.Fatalf("query %q: problem names %q, which is neither unknown nor repeated (detail %q)", rawQuery, p.Field, p.Detail)
			}
			return
		}
		// A pair that does not parse must not vanish: it may be a typo.
		if perr != nil {
			t.Fatalf("query %q accepted, yet it does not parse: %v", rawQuery, perr)
		}
		for k, vs := range q {
			if !slicesContain(allowed, k) || len(vs) != 1 {
				t.Fatalf("query %q accepted with %q=%q; allowed once each: %q", rawQuery, k, vs, allowed)
			}
		}
		// Every parameter the routes read, each through its own parser.
		checkIntParams(t, q)
		checkTimeParams(t, q)
		checkCursorParam(t, q)
	})
}

// checkIntParams reads the integer parameters of q: each is refused
// naming itself, or read as the integer it spells within its bounds.
func checkIntParams(t *testing.T, q url.Values) {
	for _, p := range []struct {
		name   string
		lo, hi int64
	}{{"limit", 1, lock.MaxListLimit}, {"token", 1, 1<<63 - 1}, {"before", 1, 1<<63 - 1}, {"since", 0, 1 << 62}} {
		n, ok, err := request.Int(q, p.name, p.lo, p.hi)
		s := q.Get(p.name)
		switch {
		case err != nil:
			if pr := wantBadRequest(t, err); pr.Field != p.name {
				t.Fatalf("%s=%q: problem names %q", p.name, s, pr.Field)
			}
			if m, perr := strconv.ParseInt(s, 10, 64); perr == nil && m >= p.lo && m <= p.hi {
				t.Fatalf("%s=%q refused, yet it is an integer in [%d, %d]", p.name, s, p.lo, p.hi)
			}
		case !ok:
			if s != "" {
				t.Fatalf("%s=%q read as absent", p.name, s)
			}
		default:
			if n < p.lo || n > p.hi {
				t.Fatalf("%s=%q accepted as %d, outside [%d, %d]", p.name, s, n, p.lo, p.hi)
			}
			if m, perr := strconv.ParseInt(s, 10, 64); perr != nil || m != n {
				t.Fatalf("%s=%q accepted as %d", p.name, s, n)
			}
		}
	}
}

// checkTimeParams reads from and to: each is refused naming itself, or
// read as a time that survives a round trip.
func checkTimeParams(t *testing.T, q url.Values) {
	for _, name := range []string{"from", "to"} {
		tm, err := request.Time(q, name)
		s := q.Get(name)
		if err != nil {
			if pr := wantBadRequest(t, err); pr.Field != name {
				t.Fatalf("%s=%q: problem names %q", name, s, pr.Field)
			}
			continue
		}
		if s == "" {
			if !tm.IsZero() {
				t.Fatalf("absent %s read as %v", name, tm)
			}
			continue
		}
		if back, err := time.Parse(time.RFC3339Nano, tm.Format(time.RFC3339Nano)); err != nil || !back.Equal(tm) {
			t.Fatalf("%s=%q read as %v, which does not survive a round trip (%v, %v)", name, s, tm, back, err)
		}
	}
}

// checkCursorParam reads the cursor: refused naming itself, or a lock
// name that survives a round trip.
func checkCursorParam(t *testing.T, q url.Values) {
	if cur := q.Get("cursor"); cur != "" {
		name, err := request.DecodeCursor(cur, lock.ValidName)
		if err != nil {
			if pr := wantBadRequest(t, err); pr.Field != "cursor" {
				t.Fatalf("cursor=%q: problem names %q", cur, pr.Field)
			}
		} else {
			if !lock.ValidName(name) {
				t.Fatalf("cursor=%q accepted as %q, not a lock name", cur, name)
			}
			if back, err := request.DecodeCursor(request.EncodeCursor(name), lock.ValidName); err != nil || back != name {
				t.Fatalf("cursor of %q does not survive a round trip: %q, %v", name, back, err)
			}
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30s", "500ms", "2m", "24h", "25h", "0s", "-1s", "abc", "1.5h", "9223372036854775807ns", "9223372036854775808ns", "1e3s", ".5s", "1h1m1s1ms1us1µs1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := request.Duration("ttl", &s)
		if err != nil {
			if p := wantBadRequest(t, err); p.Field != "ttl" || !strings.Contains(p.Detail, "ttl") {
				t.Fatalf("%q: problem %+v does not name ttl", s, p)
			}
			if std, perr := time.ParseDuration(s); perr == nil && std >= 0 {
				t.Fatalf("%q refused, yet it is the duration %v", s, std)
			}
			return
		}
		if d < 0 {
			t.Fatalf("%q accepted as the negative duration %v", s, d)
		}
		if std, perr := time.ParseDuration(s); perr != nil || std != d {
			t.Fatalf("%q accepted as %v; time.ParseDuration says %v, %v", s, d, std, perr)
		}
		// What the API writes back (Lock.TTL is d.String()) reads as d.
		str := d.String()
		if back, err := request.Duration("ttl", &str); err != nil || back != d {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, d, str, back, err)
		}
	})
}

func wantBadRequest(t *testing.T, err error) *Problem {
	t.Helper()
	p, known := toProblem(err, errorTable)
	if !known {
		t.Fatalf("error %T %v, which the error table does not know", err, err)
	}
	checkProblem(t, p)
	if p.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %+v", p.Status, p)
	}
	return p
}

// isJSON reports whether the Content-Type value ct is application/json,
// as request bodies must say.
func isJSON(ct string) bool { return request.CheckMediaType(http.Header{"Content-Type": {ct}}) == nil }
