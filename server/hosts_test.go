package server_test

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/testserver"
)

// sendHost sends a request to s over a real connection, naming host in
// its Host header.
func sendHost(t *testing.T, s *testserver.Server, host, method, path, body string) *testserver.Response {
	t.Helper()
	r := rawRequest{method: method, path: path, body: body, host: host}
	if body != "" {
		r.header = hdr("Content-Type", "application/json")
	}
	return sendRaw(t, s, r)
}

func withHosts(hosts ...string) testserver.Option {
	return testserver.WithServer(func(c *server.Config) { c.AllowedHosts = hosts })
}

// TestHosts_ALoopbackNodeRefusesAForeignHostWith421AndDoesNothing is DNS
// rebinding: a page's name, resolving to 127.0.0.1 now, is the Host of
// every request the page sends. The node answers none of them but the
// probes, and changes nothing.
func TestHosts_ALoopbackNodeRefusesAForeignHostWith421AndDoesNothing(t *testing.T) {
	s := testserver.Start(t, withHosts(server.DefaultAllowedHosts(s0Addr)...))
	held := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/held", `{"owner":"w1","ttl":"60s"}`), http.StatusCreated)
	keys, leases := s.Keys(), len(s.Leases())
	_, port, _ := net.SplitHostPort(s.TS.Listener.Addr().String())
	for _, host := range []string{"rebind.evil.example:" + port, "rebind.evil.example", "10.0.0.1:" + port, "localhost.evil.example:" + port} {
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/v1/locks/page", `{"owner":"page"}`},
			{"POST", "/v1/locks/held/revoke", ""},
			{"DELETE", fmt.Sprintf("/v1/locks/held?token=%d", held.Token), ""},
			{"POST", "/v1/sessions", ""},
			{"GET", "/v1/locks/held", ""},
			{"GET", "/v1/locks", ""},
			{"GET", "/metrics", ""},
			{"GET", "/", ""},
		} {
			t.Run(fmt.Sprintf("%q %s %s", host, r.method, r.path), func(t *testing.T) {
				got := sendHost(t, s, host, r.method, r.path, r.body)
				p := testserver.WantProblem(t, got, http.StatusMisdirectedRequest, "host_not_allowed")
				if !strings.Contains(p.Detail, "--allowed-hosts") {
					t.Errorf("detail %q does not name the flag", p.Detail)
				}
				if strings.Contains(string(got.Body), `"holder"`) || strings.Contains(string(got.Body), `"locks"`) {
					t.Errorf("a refused read leaked data: %s", got.Body)
				}
			})
		}
		// Probes answer any Host: they change nothing and tell nothing.
		for _, path := range []string{"/healthz", "/readyz"} {
			testserver.WantStatus(t, sendHost(t, s, host, "GET", path, ""), http.StatusOK)
		}
	}
	// An HTTP/1.0 request may name no Host at all: no name, no answer.
	req := httptest.NewRequest("GET", "/v1/locks/held", nil)
	req.Host = ""
	testserver.WantProblem(t, s.Serve(req), http.StatusMisdirectedRequest, "host_not_allowed")

	if now := s.Keys(); !maps.Equal(now, keys) || len(s.Leases()) != leases {
		t.Errorf("refused requests changed keys or leases:\nbefore %v\nafter  %v", keys, now)
	}
	if got := testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/held", ""), http.StatusOK); got.Token != held.Token {
		t.Errorf("held has token %d, want %d", got.Token, held.Token)
	}
	// The loopback names, with any port or none, in any case.
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost:" + port, "[::1]:" + port, "[::1]", "localhost", "127.0.0.1:1"} {
		testserver.WantStatus(t, sendHost(t, s, host, "GET", "/v1/locks/held", ""), http.StatusOK)
	}
}

// s0Addr is where a node listens by default (docs/API.md, Command line): loopback.
const s0Addr = "127.0.0.1:8080"

func TestHosts_AnAllowedListAnswersItsNamesOnly(t *testing.T) {
	s := testserver.Start(t, withHosts("baton.example.com", "10.0.0.7"))
	for host, want := range map[string]int{
		"baton.example.com":       http.StatusOK,
		"baton.example.com:8443":  http.StatusOK,
		"BATON.example.com":       http.StatusOK,
		"10.0.0.7:8080":           http.StatusOK,
		"evil.example.com":        http.StatusMisdirectedRequest,
		"baton.example.com.evil":  http.StatusMisdirectedRequest,
		"127.0.0.1:8080":          http.StatusMisdirectedRequest, // a list replaces the default
		"x.baton.example.com:443": http.StatusMisdirectedRequest,
	} {
		if got := sendHost(t, s, host, "GET", "/v1/locks", ""); got.Status != want {
			t.Errorf("Host %q: %d, want %d (%s)", host, got.Status, want, got.Body)
		}
	}
	// Behind a reverse proxy that passes the Host on (nginx:
	// proxy_set_header Host $host), the dashboard's writes are
	// same-origin, from a browser with Sec-Fetch-Site or without.
	for _, h := range []http.Header{
		hdr("Content-Type", "application/json", "Sec-Fetch-Site", "same-origin", "Origin", "https://baton.example.com"),
		hdr("Content-Type", "application/json", "Origin", "https://baton.example.com"),
	} {
		l := testserver.WantJSON[api.Lock](t, sendRaw(t, s, rawRequest{method: "POST", path: "/v1/locks/via-proxy", body: `{"owner":"ui"}`,
			header: h, host: "baton.example.com"}), http.StatusCreated)
		testserver.WantStatus(t, sendRaw(t, s, rawRequest{method: "DELETE", path: fmt.Sprintf("/v1/locks/via-proxy?token=%d", l.Token),
			header: h, host: "baton.example.com"}), http.StatusNoContent)
	}
}

func TestHosts_AnyHostAndNoListAnswerEveryHost(t *testing.T) {
	for _, hosts := range [][]string{nil, {server.AnyHost}, {"baton.example.com", server.AnyHost}} {
		s := testserver.Start(t, withHosts(hosts...))
		for _, host := range []string{"rebind.evil.example", "10.0.0.1:80", "localhost"} {
			testserver.WantStatus(t, sendHost(t, s, host, "GET", "/v1/locks", ""), http.StatusOK)
		}
	}
}

func TestDefaultAllowedHosts_LoopbackNamesOnALoopbackAddressElseAny(t *testing.T) {
	for addr, loopback := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:8080": true, "[::1]:8080": true, "localhost:8080": true, "LOCALHOST:1": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.0.0.1:8080": false, "baton.example.com:8080": false,
	} {
		got := server.DefaultAllowedHosts(addr)
		if want := []string(nil); loopback {
			if !slices.Equal(got, server.LoopbackHosts) {
				t.Errorf("DefaultAllowedHosts(%q) = %q, want %q", addr, got, server.LoopbackHosts)
			}
		} else if got != nil {
			t.Errorf("DefaultAllowedHosts(%q) = %q, want %v (any)", addr, got, want)
		}
	}
}

func TestCheckAllowedHosts_RefusesEntriesNoHostCanMatch(t *testing.T) {
	for _, ok := range [][]string{nil, {"*"}, {"localhost", "127.0.0.1", "[::1]", "::1", "baton.example.com", "10.0.0.1"}} {
		if err := server.CheckAllowedHosts(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"baton.example.com:8080": "port", "[::1]:8080": "port", "127.0.0.1:80": "port",
		"*.example.com": "wildcard", "": "no host name", "https://baton.example.com": "no host name", "a b": "no host name", "baton.example.com/x": "no host name",
	} {
		if err := server.CheckAllowedHosts([]string{"localhost", bad}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", bad, err, want)
		}
	}
}
