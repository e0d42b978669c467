package server_test

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testserver"
)

// rawRequest is a request sent as it is: the headers a browser would set,
// or none at all.
type rawRequest struct {
	method, path, body string
	header             http.Header
	// chunked sends the body with no Content-Length, as a stream.
	chunked bool
	// host, when set, is sent as Host in place of the server's address.
	host string
}

// sendRaw sends r to s over a real connection and reads the answer.
func sendRaw(t *testing.T, s *testserver.Server, r rawRequest) *testserver.Response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
		if r.chunked {
			body = io.MultiReader(body) // of unknown length: sent chunked
		}
	}
	req, err := http.NewRequest(r.method, s.TS.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, r.header)
	if r.host != "" {
		req.Host = r.host
	}
	resp, err := s.TS.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &testserver.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// browserFixture holds what the refused requests would change: a lock,
// a session and a fenced value.
type browserFixture struct {
	s       *testserver.Server
	held    api.Lock
	session api.Session
}

func newBrowserFixture(t *testing.T, opts ...testserver.Option) *browserFixture {
	s := testserver.Start(t, opts...)
	f := &browserFixture{s: s}
	f.held = testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/held", `{"owner":"w1","ttl":"60s"}`), http.StatusCreated)
	f.session = testserver.WantJSON[api.Session](t, s.Do("POST", "/v1/sessions", `{"owner":"w1","ttl":"60s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":1}`, f.held.Token)), http.StatusOK)
	return f
}

// writes are every state-changing route, each as a request that would
// succeed if nothing refused it.
func (f *browserFixture) writes() []rawRequest {
	json := hdr("Content-Type", "application/json")
	tok := f.held.Token
	return []rawRequest{
		{method: "POST", path: "/v1/locks/page", body: `{"owner":"page"}`, header: json},
		{method: "POST", path: "/v1/locks/page"},
		{method: "POST", path: "/v1/locks/held/renew", body: fmt.Sprintf(`{"token":%d}`, tok), header: json},
		{method: "DELETE", path: fmt.Sprintf("/v1/locks/held?token=%d", tok)},
		{method: "POST", path: "/v1/locks/held/revoke"},
		{method: "POST", path: "/v1/locks/held/revoke", body: `{"reason":"page"}`, header: json},
		{method: "POST", path: "/v1/sessions"},
		{method: "POST", path: "/v1/sessions/" + f.session.ID + "/renew"},
		{method: "DELETE", path: "/v1/sessions/" + f.session.ID},
		{method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d,"value":2}`, tok), header: json},
	}
}

// unchanged fails the test unless every key, lease and the held lock are
// as they were before the refused requests.
func (f *browserFixture) unchanged(t *testing.T, keys map[string]bool, leases int) {
	t.Helper()
	if now := f.s.Keys(); !maps.Equal(now, keys) {
		t.Errorf("keys changed by refused requests:\nbefore %v\nafter  %v", keys, now)
	}
	if now := len(f.s.Leases()); now != leases {
		t.Errorf("%d leases after refused requests, want %d", now, leases)
	}
	if got := testserver.WantJSON[api.Lock](t, f.s.Do("GET", "/v1/locks/held", ""), http.StatusOK); got.Token != f.held.Token {
		t.Errorf("held has token %d, want %d", got.Token, f.held.Token)
	}
	fv := testserver.WantJSON[api.FencedValue](t, f.s.Do("GET", "/v1/fenced/ledger", ""), http.StatusOK)
	if string(fv.Value) != "1" {
		t.Errorf("fenced value %s, want 1", fv.Value)
	}
}

func TestBrowser_CrossSiteWritesAreRefusedAndDoNothing(t *testing.T) {
	f := newBrowserFixture(t)
	keys, leases := f.s.Keys(), len(f.s.Leases())
	for _, marks := range []struct {
		name string
		h    http.Header
	}{
		{"cross-site", hdr("Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")},
		// Another port of the node's own host is another origin.
		{"same-site", hdr("Sec-Fetch-Site", "same-site", "Origin", "http://localhost:1")},
		{"old browser", hdr("Origin", "https://evil.example")}, // no Sec-Fetch-Site
		{"null origin", hdr("Origin", "null")},                 // a sandboxed frame, a file: page
	} {
		for _, r := range f.writes() {
			h := marks.h.Clone()
			maps.Copy(h, r.header)
			r.header = h
			t.Run(fmt.Sprintf("%s/%s %s", marks.name, r.method, r.path), func(t *testing.T) {
				p := testserver.WantProblem(t, sendRaw(t, f.s, r), http.StatusForbidden, "cross_origin")
				if !strings.Contains(p.Detail, "another origin") && !strings.Contains(p.Detail, "not this node's own") {
					t.Errorf("detail %q does not say why", p.Detail)
				}
			})
		}
	}
	f.unchanged(t, keys, leases)
	// Reading is no write: a page may send it (and cannot read the answer).
	testserver.WantStatus(t, sendRaw(t, f.s, rawRequest{method: "GET", path: "/v1/locks/held", header: hdr("Sec-Fetch-Site", "cross-site")}), http.StatusOK)
}

func TestBrowser_TheNodesOwnPagesAndNonBrowserClientsWrite(t *testing.T) {
	f := newBrowserFixture(t)
	s := f.s
	own := s.TS.URL
	json := "application/json"
	// The dashboard and /docs: same-origin, by Sec-Fetch-Site or, in an
	// older browser, by an Origin that is the node's own.
	l := testserver.WantJSON[api.Lock](t, sendRaw(t, s, rawRequest{method: "POST", path: "/v1/locks/mine", body: `{"owner":"ui"}`,
		header: hdr("Content-Type", json, "Sec-Fetch-Site", "same-origin", "Origin", own)}), http.StatusCreated)
	testserver.WantStatus(t, sendRaw(t, s, rawRequest{method: "DELETE", path: fmt.Sprintf("/v1/locks/mine?token=%d", l.Token),
		header: hdr("Origin", own)}), http.StatusNoContent)
	// Typed in the address bar or opened from a bookmark: none.
	testserver.WantStatus(t, sendRaw(t, s, rawRequest{method: "POST", path: "/v1/sessions/" + f.session.ID + "/renew",
		header: hdr("Sec-Fetch-Site", "none")}), http.StatusOK)
	// curl, the Go client, the CLI: neither header.
	testserver.WantStatus(t, sendRaw(t, s, rawRequest{method: "POST", path: "/v1/locks/held/revoke"}), http.StatusNoContent)
}

func TestBrowser_BodiesThatDoNotSayJSONAreRefusedAndDoNothing(t *testing.T) {
	f := newBrowserFixture(t)
	s := f.s
	keys, leases := s.Keys(), len(s.Leases())
	tok := f.held.Token
	for _, r := range []rawRequest{
		// What a page's form or no-cors fetch sends: no preflight asked.
		{method: "POST", path: "/v1/locks/page", body: `{"owner":"page"}`, header: hdr("Content-Type", "text/plain;charset=UTF-8")},
		{method: "POST", path: "/v1/locks/page", body: `owner=page`, header: hdr("Content-Type", "application/x-www-form-urlencoded")},
		{method: "POST", path: "/v1/sessions", body: "--x\r\n\r\n--x--\r\n", header: hdr("Content-Type", "multipart/form-data; boundary=x")},
		// The optional body of revoke: blanks, or a form, must not pass for none.
		{method: "POST", path: "/v1/locks/held/revoke", body: " ", header: hdr("Content-Type", "text/plain")},
		{method: "POST", path: "/v1/locks/held/revoke", body: "reason=x", header: hdr("Content-Type", "application/x-www-form-urlencoded")},
		// Routes that read no body: it must say JSON all the same.
		{method: "DELETE", path: fmt.Sprintf("/v1/locks/held?token=%d", tok), body: "x", header: hdr("Content-Type", "text/plain")},
		{method: "DELETE", path: "/v1/sessions/" + f.session.ID, body: "{}"},
		{method: "POST", path: "/v1/sessions/" + f.session.ID + "/renew", body: "{}", header: hdr("Content-Type", "text/plain")},
		// No Content-Type, of known length or streamed; JSON of another type;
		// two Content-Types.
		{method: "POST", path: "/v1/locks/held/renew", body: fmt.Sprintf(`{"token":%d}`, tok)},
		{method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d,"value":2}`, tok), chunked: true},
		{method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d,"value":2}`, tok), header: hdr("Content-Type", "application/merge-patch+json")},
		{method: "POST", path: "/v1/locks/page", body: `{"owner":"page"}`, header: hdr("Content-Type", "application/json", "Content-Type", "text/plain")},
	} {
		t.Run(fmt.Sprintf("%s %s %v %q", r.method, r.path, r.header, r.body), func(t *testing.T) {
			p := testserver.WantProblem(t, sendRaw(t, s, r), http.StatusUnsupportedMediaType, "unsupported_media_type")
			if !strings.Contains(p.Detail, "application/json") {
				t.Errorf("detail %q does not say what to send", p.Detail)
			}
		})
	}
	f.unchanged(t, keys, leases)

	// A route that does not exist answers 404 whatever its body.
	testserver.WantProblem(t, sendRaw(t, s, rawRequest{method: "POST", path: "/v1/nowhere", body: "x", header: hdr("Content-Type", "text/plain")}),
		http.StatusNotFound, "route_not_found")
	// Body-less writes need no Content-Type; JSON with a charset is JSON.
	testserver.WantStatus(t, sendRaw(t, s, rawRequest{method: "POST", path: "/v1/sessions/" + f.session.ID + "/renew"}), http.StatusOK)
	testserver.WantStatus(t, sendRaw(t, s, rawRequest{method: "POST", path: "/v1/locks/held/renew", body: fmt.Sprintf(`{"token":%d}`, tok),
		header: hdr("Content-Type", "application/json; charset=utf-8")}), http.StatusOK)
	testserver.WantStatus(t, sendRaw(t, s, rawRequest{method: "PUT", path: "/v1/fenced/ledger", body: fmt.Sprintf(`{"token":%d,"value":3}`, tok),
		header: hdr("Content-Type", "application/json"), chunked: true}), http.StatusOK)
	testserver.WantStatus(t, sendRaw(t, s, rawRequest{method: "DELETE", path: fmt.Sprintf("/v1/locks/held?token=%d", tok)}), http.StatusNoContent)
}

// TestBrowser_APageOfAnotherSiteCannotWriteInChromium: a page of another
// site, open in a browser on the node's machine, sends what a page may
// send anywhere without asking: no-cors fetches with no body, a blank one
// and a JSON one as text/plain, and an auto-submitted form. Each reaches
// the node and is refused; the lock stays held and nothing is created.
func TestBrowser_APageOfAnotherSiteCannotWriteInChromium(t *testing.T) {
	var logs testserver.LogBuffer
	f := newBrowserFixture(t, testserver.WithLog(&logs))
	s := f.s
	keys, leases := s.Keys(), len(s.Leases())
	b := startBrowser(t, s, 800, 600)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>another site</title><body></body>")
	}))
	t.Cleanup(site.Close)
	u, err := url.Parse(site.URL)
	if err != nil {
		t.Fatal(err)
	}
	// localhost, where the node is 127.0.0.1: another site, not merely
	// another port of the same one.
	b.do("open the other site", 30*time.Second, chromedp.Navigate("http://localhost:"+u.Port()+"/"))
	const sent = 5
	out, err := chromedp.Run(b.Context(), chromedp.Evaluate[map[string]string](fmt.Sprintf(`(async () => {
		const node = %q, out = {};
		const tries = {
			revokeNoBody: [node + "/v1/locks/held/revoke", {method: "POST", mode: "no-cors"}],
			revokeBlank: [node + "/v1/locks/held/revoke", {method: "POST", mode: "no-cors", body: " "}],
			session: [node + "/v1/sessions", {method: "POST", mode: "no-cors"}],
			acquire: [node + "/v1/locks/page", {method: "POST", mode: "no-cors", body: '{"owner":"page","ttl":"60s"}'}],
		};
		for (const [name, [u, init]] of Object.entries(tries)) {
			try { await fetch(u, init); out[name] = "sent"; } catch (e) { out[name] = String(e); }
		}
		const frame = document.createElement("iframe");
		frame.name = "sink";
		document.body.appendChild(frame);
		const form = document.createElement("form");
		form.method = "POST";
		form.enctype = "text/plain";
		form.target = "sink";
		form.action = node + "/v1/locks/held/revoke";
		const field = document.createElement("input");
		field.name = "reason";
		field.value = "page";
		form.appendChild(field);
		document.body.appendChild(form);
		form.submit();
		out.form = "submitted";
		return out;
	})()`, s.TS.URL), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the page's script: %v", err)
	}
	for _, k := range []string{"revokeNoBody", "revokeBlank", "session", "acquire"} {
		if out[k] != "sent" { // no-cors: the answer is opaque, but the request goes
			t.Errorf("the page's %s fetch: %q, want sent", k, out[k])
		}
	}
	// The form's answer loads in the frame when it will: wait for the node
	// to have refused all five.
	poll.Until(t, 10*time.Second, "the page's requests refused", func() bool {
		return strings.Count(logs.String(), "reason=cross_origin") >= sent
	})
	if n := strings.Count(logs.String(), "reason=cross_origin"); n != sent {
		t.Errorf("%d requests refused as cross_origin, want %d:\n%s", n, sent, logs.String())
	}
	f.unchanged(t, keys, leases)
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/page", ""), http.StatusNotFound, "not_held")
}
