package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/tests/testserver"
	"github.com/baton-dev/baton/trail"
)

// FuzzHTTP sends any request to any route of the real router, over the
// real engine and a real embedded etcd member (one per fuzz worker
// process, started once), through the OpenAPI contract check. Whatever
// the path parameter, query, content type, body and Last-Event-ID:
//
//   - the answer is never 5xx, and matches the OpenAPI document;
//   - a 4xx is problem+json with a code, and a 400 names the field;
//   - a 4xx changes nothing the engine reports (see checkNoWrite for how
//     that is told apart from the node's own background writes), and a
//     400, 413 or 415 grants no lease either;
//   - a 2xx says what docs/API.md says (names valid, TTLs in bounds, pages
//     sorted and filtered, history before `before`), and the harness then
//     undoes what it did, so iterations do not depend on each other.
//
// The inputs may say $TOKEN and $SESSION: they become the token of a lock
// the harness holds (named "held") and the ID of a session it keeps, so
// the fuzzer reaches the paths behind a right token, too.
func FuzzHTTP(f *testing.F) {
	for _, s := range []struct {
		route           uint8
		param           string
		query, ct, body string
		escapeAll       bool
		lastEventID     string
	}{
		{0, "nightly-recon", "", "application/json", `{"owner":"w1","ttl":"30s","lock_delay":"1s","metadata":{"k":"v"}}`, false, ""},
		{0, "in-session", "", "application/json", `{"session":"$SESSION"}`, false, ""},
		{0, "held", "", "application/json", `{"owner":"w2","wait":"50ms"}`, false, ""},
		{0, "a:b", "", "", ``, true, ""},
		{0, "x", "wait=10s", "application/json", `{"owner":"w"}`, false, ""},
		{0, "curl", "", "application/x-www-form-urlencoded", `{"owner":"w"}`, false, ""},
		{0, "plain", "", "text/plain; charset=utf-8", `{"owner":"w"}`, false, ""},
		{0, "no-type", "", "", `{"owner":"w"}`, false, ""},
		{8, "", "", "0", ` `, false, ""},
		{0, "x", "", "application/xml", `<lock/>`, false, ""},
		{0, "a!b", "", "application/json", `{}`, false, ""},
		{0, "x", "", "application/json", `{"ttl":"25h"}`, false, ""},
		{1, "held", "", "", "", false, ""},
		{1, "a!b", "verbose=1", "", "", false, ""},
		{2, "held", "", "application/json", `{"token":$TOKEN}`, false, ""},
		{2, "held", "", "application/json", `{"token":1}`, false, ""},
		{2, "held", "", "application/json", `{"token":"1"}`, false, ""},
		{3, "held", "token=$TOKEN", "", "", false, ""},
		{3, "held", "token=1", "", "", false, ""},
		{3, "held", "token=abc", "", "", false, ""},
		{4, "held", "", "application/json", `{"reason":"wedged"}`, false, ""},
		{4, "nobody", "", "", "", false, ""},
		{5, "", "prefix=h&limit=1", "", "", false, ""},
		{5, "", "cursor=aGVsZA", "", "", false, ""},
		{5, "", "limit=0", "", "", false, ""},
		{6, "ledger", "", "application/json", `{"token":$TOKEN,"value":{"balance":100},"lock":"held"}`, false, ""},
		{6, "other", "", "application/json", `{"token":1,"value":[1,2]}`, false, ""},
		{6, "ledger", "", "application/json", `{"token":1,"value":2}`, false, ""},
		{7, "ledger", "", "", "", false, ""},
		{8, "", "", "application/json", `{"ttl":"30s","owner":"worker-1"}`, false, ""},
		{8, "", "", "application/json", `{"ttl":"1s"}`, false, ""},
		{9, "$SESSION", "", "", "", false, ""},
		{9, "zz", "", "", "", false, ""},
		{10, "$SESSION", "", "", "", false, ""},
		{10, "$SESSION", "", "application/json", `{"ttl":"1h"}`, false, ""},
		{11, "$SESSION", "", "", "", false, ""},
		{12, "", "lock=held&limit=1&before=1", "", "", false, ""},
		{12, "", "type=acquired,released&owner=w1&from=2026-01-01T00:00:00Z", "", "", false, ""},
		{12, "", "before=0", "", "", false, ""},
		{13, "", "lock=held&since=1", "", "", false, ""},
		{13, "", "", "", "", false, "1"},
		{13, "", "", "", "", false, "-1"},
		{14, "", "", "", "", false, ""},
		{14, "", "verbose=1", "", "", false, ""},
		{15, "", "prefix=w&limit=1", "", "", false, ""},
		{15, "", "cursor=d29ya2VyLTEANjk0ZA", "", "", false, ""},
		{15, "", "prefix=a&cursor=d29ya2VyLTEANjk0ZA", "", "", false, ""}, // a cursor past the prefix's range
		{15, "", "limit=0", "", "", false, ""},
		{16, "config/db", "", "application/json", `{"value":{"host":"db-1"}}`, false, ""},
		{16, "config/db", "", "application/json", `{"value":1,"if_revision":0,"session":"$SESSION"}`, false, ""},
		{16, "config/db", "", "application/json", `{"value":1,"lock":"held","token":$TOKEN}`, true, ""},
		{16, "events", "", "application/json", `{"value":1}`, false, ""},
		{17, "config/db", "wait_revision=1&wait=10ms", "", "", false, ""},
		{18, "config/db", "if_revision=1", "", "", false, ""},
		{18, "config/db", "", "application/json", `{"lock":"held","token":$TOKEN}`, false, ""},
		{19, "", "prefix=config/&limit=1", "", "", false, ""},
	} {
		f.Add(s.route, s.param, s.escapeAll, s.query, s.ct, []byte(s.body), s.lastEventID)
	}
	h := startHTTPFuzz(f)
	f.Fuzz(func(t *testing.T, route uint8, param string, escapeAll bool, rawQuery, ct string, body []byte, lastEventID string) {
		h.tb.cur.Store(t)
		defer h.tb.cur.Store(nil)
		h.one(t, fuzzRoutes[int(route)%len(fuzzRoutes)], param, escapeAll, rawQuery, ct, body, lastEventID)
	})
}

type fuzzRoute struct {
	method, path string // path has %s for the parameter, if any
	param        string // the parameter's name in problems
}

var fuzzRoutes = []fuzzRoute{
	{http.MethodPost, "/v1/locks/%s", "name"},
	{http.MethodGet, "/v1/locks/%s", "name"},
	{http.MethodPost, "/v1/locks/%s/renew", "name"},
	{http.MethodDelete, "/v1/locks/%s", "name"},
	{http.MethodPost, "/v1/locks/%s/revoke", "name"},
	{http.MethodGet, "/v1/locks", ""},
	{http.MethodPut, "/v1/fenced/%s", "resource"},
	{http.MethodGet, "/v1/fenced/%s", "resource"},
	{http.MethodPost, "/v1/sessions", ""},
	{http.MethodGet, "/v1/sessions/%s", "id"},
	{http.MethodPost, "/v1/sessions/%s/renew", "id"},
	{http.MethodDelete, "/v1/sessions/%s", "id"},
	{http.MethodGet, "/v1/history", ""},
	{http.MethodGet, "/v1/events", ""},
	{http.MethodGet, "/v1/cluster", ""},
	{http.MethodGet, "/v1/sessions", ""},
	{http.MethodPut, "/v1/kv/%s", "key"},
	{http.MethodGet, "/v1/kv/%s", "key"},
	{http.MethodDelete, "/v1/kv/%s", "key"},
	{http.MethodGet, "/v1/kv", ""},
}

// fuzzTB hands the server's failure reports (the contract check's and the
// 5xx guard's, made on the handler's goroutine) to the iteration running
// now: a *testing.F must not be failed from inside the fuzz function.
// Requests are served in process and waited for, so no report can
// outlive its iteration.
type fuzzTB struct {
	testing.TB
	cur atomic.Pointer[testing.T]
}

func (a *fuzzTB) tb() testing.TB {
	if t := a.cur.Load(); t != nil {
		return t
	}
	return a.TB
}

func (a *fuzzTB) Helper()                           {}
func (a *fuzzTB) Errorf(format string, args ...any) { a.tb().Errorf(format, args...) }
func (a *fuzzTB) Fatalf(format string, args ...any) { a.tb().Fatalf(format, args...) }
func (a *fuzzTB) Fatal(args ...any)                 { a.tb().Fatal(args...) }
func (a *fuzzTB) Log(args ...any)                   { a.tb().Log(args...) }
func (a *fuzzTB) Logf(format string, args ...any)   { a.tb().Logf(format, args...) }

const (
	heldName   = "held"
	ledgerName = "ledger"
	// fuzzMaxWait bounds waits in the fuzz server: a wait for "held" lasts
	// until it runs out, and the default 5m would stall the fuzzer. Only
	// the bound changes; the wait code is the same.
	fuzzMaxWait = 50 * time.Millisecond
)

type httpFuzz struct {
	tb      *fuzzTB
	s       *testserver.Server
	token   int64           // of the lock "held"
	session string          // the session the harness keeps
	fenced  map[string]bool // the fenced values written since restore
}

func startHTTPFuzz(f *testing.F) *httpFuzz {
	tb := &fuzzTB{TB: f}
	cfg := lock.DefaultConfig()
	cfg.MaxWait = fuzzMaxWait
	s := testserver.StartOn(tb, testetcd.Start(tb), cfg)
	h := &httpFuzz{tb: tb, s: s, fenced: map[string]bool{}}
	if err := h.restore(f); err != nil {
		f.Fatal(err)
	}
	return h
}

func (h *httpFuzz) ctx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// restore brings the engine back to the harness's state: "held" held,
// the session alive, the ledger written; any other lock released
// (cleanly, so no lock-delay is left), session deleted and fenced value
// reset. It reads that state through the engine, as a client would.
func (h *httpFuzz) restore(tb testing.TB) error {
	ctx, eng := h.ctx(tb), h.s.Eng
	if err := h.restoreLocks(ctx); err != nil {
		return err
	}
	if err := h.restoreSessions(ctx); err != nil {
		return err
	}
	for name := range h.fenced {
		if name == ledgerName {
			continue // the harness's own, which the next write may overwrite
		}
		if err := eng.ResetFenced(ctx, name, "fuzz: restore", "fuzz"); err != nil && !errors.Is(err, lock.ErrNotFound) {
			return fmt.Errorf("reset fenced %q: %w", name, err)
		}
	}
	clear(h.fenced)
	if err := h.restoreKeys(ctx); err != nil {
		return err
	}
	// Nothing may be left behind that changes later iterations.
	_, delays, _, err := eng.ListWithDelays(ctx, lock.ListOptions{Limit: lock.MaxListLimit})
	if err != nil {
		return err
	}
	st, err := eng.Stats(ctx)
	if err != nil {
		return err
	}
	if len(delays) != 0 || st.Waiters != 0 {
		return fmt.Errorf("left behind: %d locks under lock-delay, %d waiters", len(delays), st.Waiters)
	}
	return nil
}

// restoreKeys deletes every key an iteration wrote.
func (h *httpFuzz) restoreKeys(ctx context.Context) error {
	for {
		p, err := h.s.Eng.KV().List(ctx, lock.KeyListOptions{Limit: lock.MaxListLimit})
		if err != nil || len(p.Keys) == 0 {
			return err
		}
		for _, k := range p.Keys {
			if err := h.s.Eng.KV().Delete(ctx, lock.DeleteKeyRequest{Key: k.Key}); err != nil && !errors.Is(err, lock.ErrKeyNotFound) {
				return fmt.Errorf("delete key %q: %w", k.Key, err)
			}
		}
	}
}

// restoreLocks releases every lock but the harness's, and takes that
// again when it is gone, with the ledger written under it.
func (h *httpFuzz) restoreLocks(ctx context.Context) error {
	eng := h.s.Eng
	locks, _, err := eng.List(ctx, lock.ListOptions{Limit: lock.MaxListLimit})
	if err != nil {
		return err
	}
	heldOK := false
	for _, l := range locks {
		if l.Name == heldName && l.Token == h.token {
			heldOK = true
			continue
		}
		if err := eng.Release(ctx, l.Name, l.Token); err != nil {
			return fmt.Errorf("release %q: %w", l.Name, err)
		}
	}
	if heldOK {
		return nil
	}
	l, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: heldName, Owner: "fuzz", TTL: 24 * time.Hour})
	if err != nil {
		return fmt.Errorf("acquire %q: %w", heldName, err)
	}
	h.token = l.Token
	_, err = eng.PutFenced(ctx, ledgerName, h.token, json.RawMessage(`1`), "")
	return err
}

// restoreSessions deletes every session but the harness's, and creates
// that again when it is gone.
func (h *httpFuzz) restoreSessions(ctx context.Context) error {
	eng := h.s.Eng
	sessions, _, err := eng.ListSessions(ctx, lock.SessionListOptions{Limit: lock.MaxListLimit})
	if err != nil {
		return err
	}
	sessOK := false
	for _, s := range sessions {
		if s.ID == h.session {
			sessOK = true
			continue
		}
		if err := eng.DeleteSession(ctx, s.ID); err != nil {
			return fmt.Errorf("delete session %s: %w", s.ID, err)
		}
	}
	if sessOK {
		return nil
	}
	s, err := eng.CreateSession(ctx, "fuzz", 24*time.Hour)
	if err != nil {
		return err
	}
	h.session = s.ID
	return nil
}

// expand puts the harness's token and session in for the placeholders.
func (h *httpFuzz) expand(s string) string {
	return strings.NewReplacer("$TOKEN", strconv.FormatInt(h.token, 10), "$SESSION", h.session).Replace(s)
}

// wireHeader is what a header value becomes on a real connection, and
// false for one that no client can send.
func wireHeader(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return "", false
		}
	}
	return strings.Trim(v, " \t"), true
}

func escapeEvery(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func (h *httpFuzz) one(t *testing.T, r fuzzRoute, param string, escapeAll bool, rawQuery, ct string, rawBody []byte, lastEventID string) {
	param, rawQuery = h.expand(param), h.expand(rawQuery)
	body := []byte(h.expand(string(rawBody)))
	lastEventID, okLEI := wireHeader(h.expand(lastEventID))
	ct, okCT := wireHeader(ct)
	if !okLEI || !okCT {
		return // not a request a client can send
	}
	path := r.path
	if strings.Contains(path, "%s") {
		esc := url.PathEscape(param)
		if escapeAll {
			esc = escapeEvery(param)
		}
		path = fmt.Sprintf(path, esc)
	}
	target := path
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	// What net/http's server would turn away before any handler runs is
	// no input for the handlers.
	u, err := url.ParseRequestURI(target)
	if err != nil || strings.ContainsAny(target, " \t#") {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, "http://baton.test"+u.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return
	}
	// As net/http's server hands a request to its handler: the URL holds
	// the path and query only.
	req.URL.Scheme, req.URL.Host, req.RequestURI = "", "", u.RequestURI()
	req.RemoteAddr = "192.0.2.1:4711"
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}

	rev0 := h.revision(t)
	leases0 := h.s.Leases()
	w := h.serve(t, req, cancel)
	status := w.status

	if status >= 500 {
		t.Fatalf("%s %s answered %d: %s", r.method, target, status, w.body.Bytes())
	}
	if status >= 400 {
		p := wantFuzzProblem(t, w)
		if status == http.StatusBadRequest && r.param != "" && p.Field == r.param && validParam(r.param, param) {
			t.Fatalf("%s %s: %s %q is valid, yet the answer blames it: %s", r.method, target, r.param, param, p.Detail)
		}
		h.checkNoWrite(t, rev0, status, param)
		if status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnsupportedMediaType {
			for id := range h.s.Leases() {
				if !leases0[id] {
					t.Fatalf("%s %s answered %d, yet granted lease %x", r.method, target, status, id)
				}
			}
		}
		return
	}
	h.checkSuccess(t, r, param, u.Query(), body, w)
	if r.method == http.MethodPut && r.param == "resource" {
		h.fenced[param] = true
	}
	if r.method != http.MethodGet {
		if err := h.restore(t); err != nil {
			t.Fatalf("after %s %s (%d): restore: %v", r.method, target, status, err)
		}
	}
}

// validParam reports whether v is a valid value of the path parameter.
func validParam(name, v string) bool {
	switch name {
	case "id":
		return false // a session ID is judged by existing, not by a rule
	case "key":
		return lock.CheckKey("key", v) == nil && v != "events"
	}
	return lock.ValidName(v)
}

func wantFuzzProblem(t *testing.T, w *fuzzRecorder) api.Problem {
	t.Helper()
	if ct := w.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("%d with Content-Type %q: %s", w.status, ct, w.body.Bytes())
	}
	var p api.Problem
	if err := json.Unmarshal(w.body.Bytes(), &p); err != nil {
		t.Fatalf("%d with a body that is no problem: %v: %s", w.status, err, w.body.Bytes())
	}
	if p.Status != w.status || p.Code == "" || p.Type != api.ProblemType(p.Code) || p.Title == "" || p.Detail == "" {
		t.Fatalf("incomplete problem for %d: %+v", w.status, p)
	}
	if w.status == http.StatusBadRequest && p.Field == "" {
		t.Fatalf("a 400 that names no field: %+v", p)
	}
	if bytes.Contains(w.body.Bytes(), []byte("etcdserver")) || bytes.Contains(w.body.Bytes(), []byte("rpc error")) {
		t.Fatalf("problem leaks etcd's error: %s", w.body.Bytes())
	}
	return p
}

// revision is etcd's current revision, from the header of a read. A
// serializable read suffices: the only member applied our request's
// writes before the request answered.
func (h *httpFuzz) revision(t *testing.T) int64 {
	resp, err := h.s.Eng.Client().Get(h.ctx(t), "revision", clientv3.WithCountOnly(), clientv3.WithSerializable())
	if err != nil {
		t.Fatalf("read revision: %v", err)
	}
	return resp.Header.Revision
}

// checkNoWrite fails unless the engine holds what it held at rev0, before
// a request that answered status. When etcd's revision has not moved,
// nothing was written. It may move without the request: the expiry
// recorder saves its cursor every few seconds after any activity. So then
// the engine is asked: the harness's state holds before every request
// (restore makes it, and a GET or a refusal keeps it), so every lock must
// be older than rev0, the harness's session the only one, no waiter left
// (a wait that ran out, 409, queued and must have left), no lock-delay,
// no event recorded after rev0, and no fenced value of param written
// after it.
func (h *httpFuzz) checkNoWrite(t *testing.T, rev0 int64, status int, param string) {
	if h.revision(t) == rev0 {
		return
	}
	ctx, eng := h.ctx(t), h.s.Eng
	locks, delays, _, err := eng.ListWithDelays(ctx, lock.ListOptions{Limit: lock.MaxListLimit})
	if err != nil {
		t.Fatalf("list locks: %v", err)
	}
	for _, l := range locks {
		if l.Token > rev0 {
			t.Fatalf("a request answered %d acquired %q (token %d, after revision %d)", status, l.Name, l.Token, rev0)
		}
	}
	sessions, _, err := eng.ListSessions(ctx, lock.SessionListOptions{Limit: lock.MaxListLimit})
	if err != nil || len(sessions) != 1 || sessions[0].ID != h.session {
		t.Fatalf("a request answered %d left sessions %v (%v), want the harness's %s alone", status, sessions, err, h.session)
	}
	st, err := eng.Stats(ctx)
	if err != nil || st.Waiters != 0 || len(delays) != 0 {
		t.Fatalf("a request answered %d left %d waiters and %d lock-delays (%v)", status, st.Waiters, len(delays), err)
	}
	evs, _, err := h.s.Trail.History(ctx, trail.HistoryOptions{Limit: 1})
	if err != nil || len(evs) > 0 && evs[0].Revision > rev0 {
		t.Fatalf("a request answered %d recorded %+v (%v)", status, evs, err)
	}
	for _, name := range []string{ledgerName, param} {
		if fv, err := eng.GetFenced(ctx, name); err == nil && fv.Revision > rev0 {
			t.Fatalf("a request answered %d wrote the fenced value %q at revision %d", status, name, fv.Revision)
		}
	}
}

// checkSuccess checks a 2xx against docs/API.md.
func (h *httpFuzz) checkSuccess(t *testing.T, r fuzzRoute, param string, q url.Values, body []byte, w *fuzzRecorder) {
	t.Helper()
	b := w.body.Bytes()
	decode := func(v any) {
		t.Helper()
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s answered %d with %s: %v", r.method, r.path, w.status, b, err)
		}
	}
	switch r.path {
	case "/v1/locks/%s":
		if r.method == http.MethodDelete {
			return
		}
		var l api.Lock
		decode(&l)
		h.checkLock(t, l, param)
	case "/v1/locks/%s/renew":
		var l api.Lock
		decode(&l)
		h.checkLock(t, l, param)
	case "/v1/locks":
		var page api.LockList
		decode(&page)
		h.checkLockList(t, q, page)
	case "/v1/fenced/%s":
		var fv api.FencedValue
		decode(&fv)
		if fv.Resource != param || fv.Token < 1 || fv.Revision < 1 || !json.Valid(fv.Value) {
			t.Fatalf("fenced %q answered %+v", param, fv)
		}
		if r.method == http.MethodPut {
			var req api.FencedRequest
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatalf("PUT %q succeeded with a body that does not decode: %v", param, err)
			}
			if *req.Token != fv.Token || compact(req.Value) != compact(fv.Value) {
				t.Fatalf("PUT %q with %s stored %+v", param, body, fv)
			}
		}
	case "/v1/sessions", "/v1/sessions/%s", "/v1/sessions/%s/renew":
		if r.method == http.MethodDelete {
			return
		}
		if r.method == http.MethodGet && r.path == "/v1/sessions" {
			h.checkSessionList(t, q, b)
			return
		}
		var s api.Session
		decode(&s)
		checkSession(t, r, param, s)
	case "/v1/history":
		var page api.History
		decode(&page)
		h.checkHistory(t, q, page)
	case "/v1/kv/%s", "/v1/kv":
		checkKeyAnswer(t, r, param, q, body, decode)
	case "/v1/events":
		if ct := w.header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("events answered %d with Content-Type %q", w.status, ct)
		}
	}
}

// checkKeyAnswer checks a 2xx of a key's route: the key as put or read,
// or a page of keys in order under the prefix.
func checkKeyAnswer(t *testing.T, r fuzzRoute, param string, q url.Values, body []byte, decode func(any)) {
	t.Helper()
	switch {
	case r.path == "/v1/kv":
		var page api.KeyList
		decode(&page)
		for i, k := range page.Keys {
			if !strings.HasPrefix(k.Key, q.Get("prefix")) || i > 0 && k.Key <= page.Keys[i-1].Key {
				t.Fatalf("keys %v: %q out of order or outside the prefix", q, k.Key)
			}
		}
	case r.method != http.MethodDelete:
		var k api.Key
		decode(&k)
		if k.Key != param || k.Version < 1 || k.Revision < k.CreatedRevision || !json.Valid(k.Value) {
			t.Fatalf("key %q answered %+v", param, k)
		}
		if r.method != http.MethodPut {
			return
		}
		var req api.PutKeyRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("PUT %q succeeded with a body that does not decode: %v", param, err)
		}
		if compact(req.Value) != compact(k.Value) || req.Session != k.Session {
			t.Fatalf("PUT %q with %s stored %+v", param, body, k)
		}
	}
}

// checkLockList checks a page of locks against the query that asked
// for it: at most limit locks, sorted, after the cursor, with the prefix.
func (h *httpFuzz) checkLockList(t *testing.T, q url.Values, page api.LockList) {
	t.Helper()
	limit := 100
	if n, err := strconv.Atoi(q.Get("limit")); err == nil {
		limit = n
	}
	if len(page.Locks) > limit {
		t.Fatalf("list with limit %d returned %d locks", limit, len(page.Locks))
	}
	after := ""
	if cur := q.Get("cursor"); cur != "" {
		after = cursorName(t, cur)
	}
	for i, l := range page.Locks {
		if !strings.HasPrefix(l.Name, q.Get("prefix")) || l.Name <= after || i > 0 && l.Name <= page.Locks[i-1].Name {
			t.Fatalf("list %v: lock %q out of order or outside the page (prefix %q, after %q)", q, l.Name, q.Get("prefix"), after)
		}
		h.checkLock(t, *l, l.Name)
	}
}

// checkSession checks a session a route of r answered, for the path
// parameter param.
func checkSession(t *testing.T, r fuzzRoute, param string, s api.Session) {
	t.Helper()
	ttl, err := time.ParseDuration(s.TTL)
	if id, perr := strconv.ParseUint(s.ID, 16, 63); perr != nil || id == 0 || err != nil || ttl < 2*time.Second || ttl > 24*time.Hour || !ownerOK(s.Owner) {
		t.Fatalf("session %+v breaks docs/API.md", s)
	}
	if r.path != "/v1/sessions" {
		if want, _ := strconv.ParseUint(param, 16, 64); s.ID != strconv.FormatUint(want, 16) {
			t.Fatalf("session %q answered as %q", param, s.ID)
		}
	}
}

func (h *httpFuzz) checkLock(t *testing.T, l api.Lock, name string) {
	t.Helper()
	ttl, err := time.ParseDuration(l.TTL)
	switch {
	case l.Name != name || !lock.ValidName(l.Name):
		t.Fatalf("lock %q answered as %+v", name, l)
	case l.Token < 1 || !ownerOK(l.Owner) || len(l.Metadata) > lock.MaxMetadataPairs:
		t.Fatalf("lock %+v breaks docs/API.md", l)
	case err != nil || l.Session == "" && (ttl < 2*time.Second || ttl > 24*time.Hour):
		t.Fatalf("lock %q has TTL %q", l.Name, l.TTL)
	}
}

func (h *httpFuzz) checkHistory(t *testing.T, q url.Values, page api.History) {
	t.Helper()
	before, _ := strconv.ParseInt(q.Get("before"), 10, 64)
	var types []string
	if s := q.Get("type"); s != "" {
		for _, p := range strings.Split(s, ",") {
			types = append(types, strings.TrimSpace(p))
		}
	}
	for i, ev := range page.Events {
		switch {
		case before > 0 && ev.Revision >= before:
			t.Fatalf("history before=%d returned an event of revision %d", before, ev.Revision)
		case i > 0 && ev.Revision > page.Events[i-1].Revision:
			t.Fatalf("history not newest first: %d after %d", ev.Revision, page.Events[i-1].Revision)
		case q.Get("lock") != "" && ev.Lock != q.Get("lock"):
			t.Fatalf("history lock=%q returned an event of %q", q.Get("lock"), ev.Lock)
		case q.Get("owner") != "" && ev.Owner != q.Get("owner"):
			t.Fatalf("history owner=%q returned an event of %q", q.Get("owner"), ev.Owner)
		case len(types) > 0 && !slices.Contains(types, ev.Type):
			t.Fatalf("history type=%q returned a %q event", q.Get("type"), ev.Type)
		}
	}
	if page.NextBefore != 0 && len(page.Events) > 0 && page.NextBefore != page.Events[len(page.Events)-1].Revision {
		t.Fatalf("next_before %d is not the last event's revision %d", page.NextBefore, page.Events[len(page.Events)-1].Revision)
	}
}

func cursorName(t *testing.T, cur string) string {
	t.Helper()
	// The API's cursor: base64url of the last name, unpadded.
	b := make([]byte, len(cur))
	n, err := base64.RawURLEncoding.Decode(b, []byte(cur))
	if err != nil {
		t.Fatalf("cursor %q accepted, yet it is not base64url: %v", cur, err)
	}
	return string(b[:n])
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return "invalid: " + string(b)
	}
	return buf.String()
}

// ownerOK is docs/API.md's rule for owners: 1-128 printable characters.
func ownerOK(s string) bool {
	n := utf8.RuneCountInString(s)
	return utf8.ValidString(s) && n >= 1 && n <= 128 && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// fuzzRecorder records an answer, safely for the test goroutine to look
// at while the handler runs (an event stream never ends by itself).
type fuzzRecorder struct {
	mu     sync.Mutex
	header http.Header
	status int
	body   bytes.Buffer
	head   chan struct{} // closed when the status is written
}

func (w *fuzzRecorder) Header() http.Header { return w.header }

func (w *fuzzRecorder) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = code
		close(w.head)
	}
}

func (w *fuzzRecorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}

func (w *fuzzRecorder) Flush() {}

// serve runs req through the server in process and waits for the whole
// answer; an event stream is ended (by cancel, as a client leaving) once
// its head is written.
func (h *httpFuzz) serve(t *testing.T, req *http.Request, cancel context.CancelFunc) *fuzzRecorder {
	t.Helper()
	w := &fuzzRecorder{header: http.Header{}, head: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.s.Handler.ServeHTTP(w, req)
	}()
	timeout := time.NewTimer(15 * time.Second)
	defer timeout.Stop()
	select {
	case <-done:
	case <-w.head:
		if req.URL.Path == "/v1/events" {
			cancel()
		}
		select {
		case <-done:
		case <-timeout.C:
			t.Fatalf("%s %s: the handler did not return", req.Method, req.URL)
		}
	case <-timeout.C:
		t.Fatalf("%s %s: no answer within 15s", req.Method, req.URL)
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_, _ = io.Copy(io.Discard, req.Body)
	return w
}

// checkSessionList checks a page of GET /v1/sessions: within the limit,
// every owner under the prefix, sorted by owner then ID, every session
// within docs/API.md's bounds.
func (h *httpFuzz) checkSessionList(t *testing.T, q url.Values, b []byte) {
	t.Helper()
	var page api.SessionList
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatalf("GET /v1/sessions answered %s: %v", b, err)
	}
	limit := 100
	if n, err := strconv.Atoi(q.Get("limit")); err == nil {
		limit = n
	}
	if len(page.Sessions) > limit {
		t.Fatalf("list with limit %d returned %d sessions", limit, len(page.Sessions))
	}
	for i, s := range page.Sessions {
		ttl, err := time.ParseDuration(s.TTL)
		if id, perr := strconv.ParseUint(s.ID, 16, 63); perr != nil || id == 0 || err != nil || ttl < 2*time.Second || ttl > 24*time.Hour || !ownerOK(s.Owner) {
			t.Fatalf("listed session %+v breaks docs/API.md", s)
		}
		if !strings.HasPrefix(s.Owner, q.Get("prefix")) {
			t.Fatalf("list %v: owner %q outside the prefix", q, s.Owner)
		}
		if i > 0 {
			prev := page.Sessions[i-1]
			if s.Owner+"\x00"+s.ID <= prev.Owner+"\x00"+prev.ID {
				t.Fatalf("list %v: session %+v out of order after %+v", q, s, prev)
			}
		}
	}
}
