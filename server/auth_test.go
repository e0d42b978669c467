package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/testserver"
)

// The tokens of the tests' auth file. The wrong one is as long and alike
// as a real one.
const (
	readTok  = "read-token-6f1d2c3b4a5e6f70"
	writeTok = "write-token-0a9b8c7d6e5f4a3b"
	write2   = "write-token-other-5e4d3c2b1a09"
	adminTok = "admin-token-1b2c3d4e5f6a7b8c"
	wrongTok = "read-token-6f1d2c3b4a5e6f71"
)

var authFile = "# test credentials\nread " + readTok + "\nwrite " + writeTok + "\nwrite " + write2 + "\n\nadmin " + adminTok + "\n"

func startWithAuth(t *testing.T, opts ...testserver.Option) *testserver.Server {
	t.Helper()
	return testserver.Start(t, append([]testserver.Option{testserver.WithAuth(t, authFile)}, opts...)...)
}

// caller is how a request presents itself.
type caller struct {
	name   string
	header string    // the Authorization header, "" for none
	role   auth.Role // 0: not a valid credential
	token  string
}

var callers = []caller{
	{name: "no token"},
	{name: "basic auth", header: "Basic cmVhZDp0b2tlbg=="},
	{name: "empty bearer", header: "Bearer "},
	{name: "wrong token", header: "Bearer " + wrongTok},
	{name: "read", header: "Bearer " + readTok, role: auth.Read, token: readTok},
	{name: "write", header: "Bearer " + writeTok, role: auth.Write, token: writeTok},
	{name: "admin", header: "bearer " + adminTok, role: auth.Admin, token: adminTok}, // the scheme is case-insensitive
}

// send makes a request with a raw Authorization header through the test
// server (and its contract check). An event stream's answer is returned
// as soon as its head arrives.
func send(t *testing.T, s *testserver.Server, authz, method, path, body string) *testserver.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testserver.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.TS.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := s.TS.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	r := &testserver.Response{Status: resp.StatusCode, Header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return r
	}
	if r.Body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return r
}

var seq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// fixtureToken makes what a call acts on as the caller when it may write,
// else as a writer: so a writer acts on its own hold, and a reader is
// refused by its role, not by ownership.
func fixtureToken(c caller) string {
	if c.role.Allows(auth.Write) {
		return c.token
	}
	return writeTok
}

func holdFor(t *testing.T, s *testserver.Server, token string) (string, int64) {
	t.Helper()
	name := unique("lock")
	l := testserver.WantJSON[api.Lock](t, s.DoAs(token, "POST", "/v1/locks/"+name, `{"owner":"fixture","ttl":"60s"}`), http.StatusCreated)
	return name, l.Token
}

func leaderFor(t *testing.T, s *testserver.Server, token string) (string, int64) {
	t.Helper()
	name := unique("election")
	l := testserver.WantJSON[api.Leader](t, s.DoAs(token, "POST", "/v1/elections/"+name+"/campaign", `{"candidate":"fixture","ttl":"60s"}`), http.StatusCreated)
	return name, l.Token
}

func permitFor(t *testing.T, s *testserver.Server, token string) (string, int64) {
	t.Helper()
	name := unique("semaphore")
	p := testserver.WantJSON[api.Hold](t, s.DoAs(token, "POST", "/v1/semaphores/"+name, `{"limit":2,"owner":"fixture","ttl":"60s"}`), http.StatusCreated)
	return name, p.Token
}

func rwHoldFor(t *testing.T, s *testserver.Server, token string) (string, int64) {
	t.Helper()
	name := unique("rwlock")
	h := testserver.WantJSON[api.Hold](t, s.DoAs(token, "POST", "/v1/rwlocks/"+name, `{"mode":"write","owner":"fixture","ttl":"60s"}`), http.StatusCreated)
	return name, h.Token
}

func lockSetFor(t *testing.T, s *testserver.Server, token string) (string, int64) {
	t.Helper()
	a, b := unique("set-a"), unique("set-b")
	set := testserver.WantJSON[api.LockSet](t, s.DoAs(token, "POST", "/v1/locksets", fmt.Sprintf(`{"names":[%q,%q],"owner":"fixture","ttl":"60s"}`, a, b)), http.StatusCreated)
	return fmt.Sprintf(`[%q,%q]`, a, b), set.Token
}

func sessionFor(t *testing.T, s *testserver.Server, token string) string {
	t.Helper()
	return testserver.WantJSON[api.Session](t, s.DoAs(token, "POST", "/v1/sessions", `{"owner":"fixture","ttl":"60s"}`), http.StatusCreated).ID
}

// sample builds a request to a route that succeeds for a caller whose role
// allows the route.
type sample func(t *testing.T, s *testserver.Server, c caller) (method, path, body string)

func fixed(method, path, body string) sample {
	return func(*testing.T, *testserver.Server, caller) (string, string, string) { return method, path, body }
}

// samples has a succeeding request for every route. A route added to the
// server without a sample here fails TestAuth_EveryRouteAnswers….
var samples = map[string]sample{
	"GET /":             fixed("GET", "/", ""),
	"GET /ui/*":         fixed("GET", "/ui/app.js", ""),
	"GET /docs":         fixed("GET", "/docs", ""),
	"GET /docs/*":       fixed("GET", "/docs/swagger-ui.css", ""),
	"GET /openapi.json": fixed("GET", "/openapi.json", ""),
	"GET /openapi.yaml": fixed("GET", "/openapi.yaml", ""),
	"GET /healthz":      fixed("GET", "/healthz", ""),
	"GET /readyz":       fixed("GET", "/readyz", ""),
	"GET /metrics":      fixed("GET", "/metrics", ""),
	"GET /v1/cluster":   fixed("GET", "/v1/cluster", ""),
	"GET /v1/whoami":    fixed("GET", "/v1/whoami", ""),
	"GET /v1/locks":     fixed("GET", "/v1/locks", ""),
	"GET /v1/history":   fixed("GET", "/v1/history", ""),
	"GET /v1/events":    fixed("GET", "/v1/events", ""),
	"POST /v1/sessions": fixed("POST", "/v1/sessions", `{"owner":"w","ttl":"30s"}`),
	"POST /v1/locks/:name": func(*testing.T, *testserver.Server, caller) (string, string, string) {
		return "POST", "/v1/locks/" + unique("acq"), `{"owner":"w","ttl":"30s"}`
	},
	"PUT /v1/fenced/:resource": func(*testing.T, *testserver.Server, caller) (string, string, string) {
		return "PUT", "/v1/fenced/" + unique("res"), `{"token":1,"value":{"v":1}}`
	},
	"GET /v1/locks/:name": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := holdFor(t, s, writeTok)
		return "GET", "/v1/locks/" + name, ""
	},
	"POST /v1/locks/:name/renew": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := holdFor(t, s, fixtureToken(c))
		return "POST", "/v1/locks/" + name + "/renew", fmt.Sprintf(`{"token":%d}`, tok)
	},
	"DELETE /v1/locks/:name": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := holdFor(t, s, fixtureToken(c))
		return "DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", name, tok), ""
	},
	"POST /v1/locks/:name/revoke": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := holdFor(t, s, writeTok)
		return "POST", "/v1/locks/" + name + "/revoke", `{"reason":"test"}`
	},
	"POST /v1/locks/:name/yield": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := holdFor(t, s, writeTok)
		return "POST", "/v1/locks/" + name + "/yield", `{"reason":"test"}`
	},
	"GET /v1/sessions": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		sessionFor(t, s, writeTok)
		return "GET", "/v1/sessions?limit=5", ""
	},
	"GET /v1/sessions/:id": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		return "GET", "/v1/sessions/" + sessionFor(t, s, writeTok), ""
	},
	"POST /v1/sessions/:id/renew": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		return "POST", "/v1/sessions/" + sessionFor(t, s, fixtureToken(c)) + "/renew", ""
	},
	"GET /v1/sessions/:id/stream": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		id := testserver.WantJSON[api.Session](t, s.DoAs(fixtureToken(c), "POST", "/v1/sessions", `{"owner":"fixture","bind":"stream","grace":"30s"}`), http.StatusCreated).ID
		return "GET", "/v1/sessions/" + id + "/stream", ""
	},
	"DELETE /v1/sessions/:id": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		return "DELETE", "/v1/sessions/" + sessionFor(t, s, fixtureToken(c)), ""
	},
	"POST /v1/maintenance/recover": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		return "POST", "/v1/maintenance/recover", ""
	},
	"DELETE /v1/locks/:name/delay": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name := unique("delayed")
		testserver.WantStatus(t, s.DoAs(writeTok, "POST", "/v1/locks/"+name, `{"owner":"fixture","ttl":"60s","lock_delay":"1h"}`), http.StatusCreated)
		testserver.WantStatus(t, s.DoAs(adminTok, "POST", "/v1/locks/"+name+"/revoke", `{"reason":"fixture"}`), http.StatusNoContent)
		return "DELETE", "/v1/locks/" + name + "/delay?reason=test", ""
	},
	"DELETE /v1/fenced/:resource": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		res := unique("res")
		testserver.WantStatus(t, s.DoAs(writeTok, "PUT", "/v1/fenced/"+res, `{"token":1,"value":"x"}`), http.StatusOK)
		return "DELETE", "/v1/fenced/" + res + "?reason=test", ""
	},
	"GET /v1/elections":  fixed("GET", "/v1/elections", ""),
	"GET /v1/semaphores": fixed("GET", "/v1/semaphores", ""),
	"GET /v1/rwlocks":    fixed("GET", "/v1/rwlocks", ""),
	"POST /v1/locksets": func(*testing.T, *testserver.Server, caller) (string, string, string) {
		return "POST", "/v1/locksets", fmt.Sprintf(`{"names":[%q,%q],"owner":"c","ttl":"30s"}`, unique("set"), unique("set"))
	},
	"POST /v1/locksets/renew": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		names, tok := lockSetFor(t, s, fixtureToken(c))
		return "POST", "/v1/locksets/renew", fmt.Sprintf(`{"names":%s,"token":%d}`, names, tok)
	},
	"POST /v1/locksets/release": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		names, tok := lockSetFor(t, s, fixtureToken(c))
		return "POST", "/v1/locksets/release", fmt.Sprintf(`{"names":%s,"token":%d}`, names, tok)
	},
	"POST /v1/rwlocks/:name": func(*testing.T, *testserver.Server, caller) (string, string, string) {
		return "POST", "/v1/rwlocks/" + unique("rw"), `{"mode":"read","owner":"c","ttl":"30s"}`
	},
	"GET /v1/rwlocks/:name": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := rwHoldFor(t, s, writeTok)
		return "GET", "/v1/rwlocks/" + name, ""
	},
	"POST /v1/rwlocks/:name/renew": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := rwHoldFor(t, s, fixtureToken(c))
		return "POST", "/v1/rwlocks/" + name + "/renew", fmt.Sprintf(`{"token":%d}`, tok)
	},
	"DELETE /v1/rwlocks/:name": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := rwHoldFor(t, s, fixtureToken(c))
		return "DELETE", fmt.Sprintf("/v1/rwlocks/%s?token=%d", name, tok), ""
	},
	"POST /v1/rwlocks/:name/revoke": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := rwHoldFor(t, s, writeTok)
		return "POST", "/v1/rwlocks/" + name + "/revoke", fmt.Sprintf(`{"token":%d,"reason":"test"}`, tok)
	},
	"POST /v1/rwlocks/:name/yield": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := rwHoldFor(t, s, writeTok)
		return "POST", "/v1/rwlocks/" + name + "/yield", `{"reason":"test"}`
	},
	"POST /v1/semaphores/:name": func(*testing.T, *testserver.Server, caller) (string, string, string) {
		return "POST", "/v1/semaphores/" + unique("sem"), `{"limit":3,"owner":"c","ttl":"30s"}`
	},
	"GET /v1/semaphores/:name": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := permitFor(t, s, writeTok)
		return "GET", "/v1/semaphores/" + name, ""
	},
	"POST /v1/semaphores/:name/renew": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := permitFor(t, s, fixtureToken(c))
		return "POST", "/v1/semaphores/" + name + "/renew", fmt.Sprintf(`{"token":%d}`, tok)
	},
	"DELETE /v1/semaphores/:name": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := permitFor(t, s, fixtureToken(c))
		return "DELETE", fmt.Sprintf("/v1/semaphores/%s?token=%d", name, tok), ""
	},
	"POST /v1/semaphores/:name/revoke": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := permitFor(t, s, writeTok)
		return "POST", "/v1/semaphores/" + name + "/revoke", fmt.Sprintf(`{"token":%d,"reason":"test"}`, tok)
	},
	"POST /v1/semaphores/:name/yield": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := permitFor(t, s, writeTok)
		return "POST", "/v1/semaphores/" + name + "/yield", fmt.Sprintf(`{"token":%d,"reason":"test"}`, tok)
	},
	"GET /v1/elections/:name/observe": func(*testing.T, *testserver.Server, caller) (string, string, string) {
		return "GET", "/v1/elections/" + unique("observed") + "/observe", ""
	},
	"POST /v1/elections/:name/campaign": func(*testing.T, *testserver.Server, caller) (string, string, string) {
		return "POST", "/v1/elections/" + unique("el") + "/campaign", `{"candidate":"c","ttl":"30s"}`
	},
	"GET /v1/elections/:name": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := leaderFor(t, s, writeTok)
		return "GET", "/v1/elections/" + name, ""
	},
	"POST /v1/elections/:name/proclaim": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := leaderFor(t, s, fixtureToken(c))
		return "POST", "/v1/elections/" + name + "/proclaim", fmt.Sprintf(`{"token":%d,"value":"v"}`, tok)
	},
	"POST /v1/elections/:name/renew": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := leaderFor(t, s, fixtureToken(c))
		return "POST", "/v1/elections/" + name + "/renew", fmt.Sprintf(`{"token":%d}`, tok)
	},
	"DELETE /v1/elections/:name/leader": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := leaderFor(t, s, fixtureToken(c))
		return "DELETE", fmt.Sprintf("/v1/elections/%s/leader?token=%d", name, tok), ""
	},
	"POST /v1/elections/:name/leader/transfer": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, tok := leaderFor(t, s, fixtureToken(c))
		// A candidate waits in line until the transfer, or its wait's end
		// for a caller the transfer refuses.
		go s.DoAs(writeTok, "POST", "/v1/elections/"+name+"/campaign", `{"candidate":"next","ttl":"60s","wait":"5s"}`)
		poll.Until(t, 10*time.Second, "the candidate waits", func() bool {
			r := s.DoAs(writeTok, "GET", "/v1/elections/"+name, "")
			return r.Status == http.StatusOK && len(testserver.DecodeAs[api.Leader](t, r).Candidates) == 1
		})
		return "POST", "/v1/elections/" + name + "/leader/transfer", fmt.Sprintf(`{"token":%d,"to":"next"}`, tok)
	},
	"POST /v1/elections/:name/revoke": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := leaderFor(t, s, writeTok)
		return "POST", "/v1/elections/" + name + "/revoke", `{"reason":"test"}`
	},
	"POST /v1/elections/:name/yield": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		name, _ := leaderFor(t, s, writeTok)
		return "POST", "/v1/elections/" + name + "/yield", `{"reason":"test"}`
	},
	"GET /v1/kv":        fixed("GET", "/v1/kv?prefix=a/", ""),
	"GET /v1/kv/events": fixed("GET", "/v1/kv/events?prefix=a/", ""),
	"PUT /v1/kv/*": func(*testing.T, *testserver.Server, caller) (string, string, string) {
		return "PUT", "/v1/kv/auth/" + unique("k"), `{"value":1}`
	},
	"GET /v1/kv/*": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		key := "auth/" + unique("k")
		testserver.WantStatus(t, s.DoAs(writeTok, "PUT", "/v1/kv/"+key, `{"value":"x"}`), http.StatusCreated)
		return "GET", "/v1/kv/" + key, ""
	},
	"DELETE /v1/kv/*": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		key := "auth/" + unique("k")
		testserver.WantStatus(t, s.DoAs(writeTok, "PUT", "/v1/kv/"+key, `{"value":"x"}`), http.StatusCreated)
		return "DELETE", "/v1/kv/" + key, ""
	},
	"GET /v1/fenced/:resource": func(t *testing.T, s *testserver.Server, c caller) (string, string, string) {
		res := unique("res")
		testserver.WantStatus(t, s.DoAs(writeTok, "PUT", "/v1/fenced/"+res, `{"token":1,"value":"x"}`), http.StatusOK)
		return "GET", "/v1/fenced/" + res, ""
	},
}

// routes lists the server's routes as "METHOD /path/:param", as echo's
// router has them.
func routes(t *testing.T, s *testserver.Server) []string {
	t.Helper()
	e := server.New(server.Config{Engine: s.Eng, Trail: s.Trail}).Handler().(*echo.Echo)
	var out []string
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound || strings.HasPrefix(r.Name, "github.com/labstack") {
			continue
		}
		out = append(out, r.Method+" "+r.Path)
	}
	if len(out) < 20 {
		t.Fatalf("only %d routes: %q", len(out), out)
	}
	return out
}

// TestAuth_EveryRouteAnswersEachCallerAsItsRoleAllows walks the router's
// routes, not a list of our own: each must have an access decision and a
// sample request, and answer 401 without a valid token, 403 to a role too
// weak and 2xx to a role strong enough; open routes answer everyone.
func TestAuth_EveryRouteAnswersEachCallerAsItsRoleAllows(t *testing.T) {
	s := startWithAuth(t)
	rows := routeRows(s)
	for _, route := range routes(t, s) {
		_, path, _ := strings.Cut(route, " ")
		row, ok := rows[route]
		need, open := row.Role, row.Open
		if !ok {
			t.Errorf("route %s has no access decision", route)
			continue
		}
		mk, ok := samples[route]
		if !ok {
			t.Errorf("route %s has no sample request in this test", route)
			continue
		}
		if !open && strings.HasPrefix(path, "/v1/") == false && path != "/metrics" {
			t.Errorf("route %s needs a token but is neither under /v1 nor /metrics", route)
		}
		for _, c := range callers {
			t.Run(route+"/"+c.name, func(t *testing.T) {
				m, p, body := mk(t, s, c)
				r := send(t, s, c.header, m, p, body)
				switch {
				case open:
					if r.Status >= 300 {
						t.Errorf("open route answered %d: %s", r.Status, r.Body)
					}
				case c.role == 0:
					testserver.WantProblem(t, r, http.StatusUnauthorized, "unauthorized")
					if h := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, `Bearer realm="baton"`) {
						t.Errorf("WWW-Authenticate %q, want a Bearer challenge", h)
					}
				case !c.role.Allows(need):
					p := testserver.WantProblem(t, r, http.StatusForbidden, "forbidden")
					if !strings.Contains(p.Detail, "needs the "+need.String()+" role") {
						t.Errorf("403 detail %q does not name the %s role", p.Detail, need)
					}
				default:
					if r.Status < 200 || r.Status >= 300 {
						t.Errorf("%s with role %s answered %d, want 2xx: %s", route, c.role, r.Status, r.Body)
					}
				}
			})
		}
	}
	// No decision for a route the server does not have.
	served := map[string]bool{}
	for _, r := range routes(t, s) {
		served[r] = true
	}
	for route := range samples {
		if !served[route] {
			t.Errorf("sample for %s, which the server does not serve", route)
		}
	}
}

// routeRows are the rows of the server's route table by "METHOD /path".
func routeRows(s *testserver.Server) map[string]api.Route {
	rows := map[string]api.Route{}
	for _, r := range server.New(server.Config{Engine: s.Eng, Trail: s.Trail}).Routes() {
		rows[r.Method+" "+r.Path] = r
	}
	return rows
}

func TestAuth_RolesAreDecidedAsDocumented(t *testing.T) {
	rows := routeRows(testserver.Start(t))
	for route, want := range map[string]auth.Role{
		"GET /v1/locks": auth.Read, "GET /v1/events": auth.Read, "GET /metrics": auth.Read, "GET /v1/cluster": auth.Read,
		"POST /v1/locks/:name": auth.Write, "DELETE /v1/sessions/:id": auth.Write, "PUT /v1/fenced/:resource": auth.Write,
		"POST /v1/locks/:name/revoke": auth.Admin, "DELETE /v1/fenced/:resource": auth.Admin,
		"DELETE /v1/locks/:name/delay": auth.Admin, "POST /v1/locks/:name/yield": auth.Write,
	} {
		if r, ok := rows[route]; !ok || r.Open || r.Role != want {
			t.Errorf("%s: role %s open %v known %v, want %s", route, r.Role, r.Open, ok, want)
		}
	}
}

// TestAuth_UnknownRoutesAnswer404And405WithoutAToken: which routes exist
// is public (/openapi.json lists them), so a token is not asked for them.
func TestAuth_UnknownRoutesAnswer404And405WithoutAToken(t *testing.T) {
	s := startWithAuth(t)
	testserver.WantProblem(t, send(t, s, "", "GET", "/v1/nope", ""), http.StatusNotFound, "route_not_found")
	testserver.WantProblem(t, send(t, s, "", "PATCH", "/v1/locks/x", ""), http.StatusMethodNotAllowed, "method_not_allowed")
	testserver.WantProblem(t, send(t, s, "Bearer "+readTok, "PATCH", "/v1/locks/x", ""), http.StatusMethodNotAllowed, "method_not_allowed")
	testserver.WantProblem(t, send(t, s, "", "GET", "/nope", ""), http.StatusNotFound, "route_not_found")
}

// TestAuth_AnotherWriterCannotReleaseOrRenewAHoldEvenWithItsToken is the
// caller check over HTTP: the fencing token identifies the hold, and the
// credential must be the one that acquired it (or an admin's).
func TestAuth_AnotherWriterCannotReleaseOrRenewAHoldEvenWithItsToken(t *testing.T) {
	s := startWithAuth(t)
	name, tok := holdFor(t, s, writeTok)
	sess := sessionFor(t, s, writeTok)
	testserver.WantStatus(t, s.DoAs(writeTok, "POST", "/v1/locks/in-session", `{"owner":"a","session":"`+sess+`"}`), http.StatusCreated)
	keys := s.Keys()
	history := s.DoAs(readTok, "GET", "/v1/history", "").Body

	for _, tc := range []struct{ what, method, path, body string }{
		{"release", "DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", name, tok), ""},
		{"renew", "POST", "/v1/locks/" + name + "/renew", fmt.Sprintf(`{"token":%d}`, tok)},
		{"renew session", "POST", "/v1/sessions/" + sess + "/renew", ""},
		{"delete session", "DELETE", "/v1/sessions/" + sess, ""},
		{"acquire in the session", "POST", "/v1/locks/other", `{"owner":"b","session":"` + sess + `"}`},
	} {
		t.Run(tc.what, func(t *testing.T) {
			p := testserver.WantProblem(t, s.DoAs(write2, tc.method, tc.path, tc.body), http.StatusForbidden, "forbidden")
			if !strings.Contains(p.Detail, "another credential") {
				t.Errorf("detail %q, want it to say the hold or session is another credential's", p.Detail)
			}
		})
	}
	if after := s.Keys(); fmt.Sprint(after) != fmt.Sprint(keys) {
		t.Fatalf("refused calls changed etcd:\nbefore %v\nafter  %v", keys, after)
	}
	if after := s.DoAs(readTok, "GET", "/v1/history", "").Body; string(after) != string(history) {
		t.Fatalf("refused calls were audited:\nbefore %s\nafter  %s", history, after)
	}
	if l := testserver.WantJSON[api.Lock](t, s.DoAs(readTok, "GET", "/v1/locks/"+name, ""), http.StatusOK); l.Token != tok {
		t.Fatalf("the hold changed: token %d, want %d", l.Token, tok)
	}
	// The credential ID stays out of the public Lock.
	testserver.WantKeys(t, "lock", testserver.RawObject(t, s.DoAs(readTok, "GET", "/v1/locks/"+name, "").Body),
		[]string{"name", "owner", "token", "ttl", "acquired_at", "expires_at", "metadata"}, []string{"session", "lock_delay", "waiters"})

	// An admin may, and so may the acquirer.
	testserver.WantStatus(t, s.DoAs(adminTok, "POST", "/v1/locks/"+name+"/renew", fmt.Sprintf(`{"token":%d}`, tok)), http.StatusOK)
	testserver.WantStatus(t, s.DoAs(writeTok, "POST", "/v1/locks/"+name+"/renew", fmt.Sprintf(`{"token":%d}`, tok)), http.StatusOK)
	testserver.WantStatus(t, s.DoAs(adminTok, "DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", name, tok), ""), http.StatusNoContent)
	testserver.WantStatus(t, s.DoAs(adminTok, "DELETE", "/v1/sessions/"+sess, ""), http.StatusNoContent)
	name, tok = holdFor(t, s, writeTok)
	testserver.WantStatus(t, s.DoAs(writeTok, "DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", name, tok), ""), http.StatusNoContent)
}

// TestAuth_LogsNeverContainATokenButNameTheCredential reads everything the
// server logged, at debug level, through refused and accepted calls.
func TestAuth_LogsNeverContainATokenButNameTheCredential(t *testing.T) {
	var logs testserver.LogBuffer
	s := startWithAuth(t, testserver.WithLog(&logs))
	for _, c := range callers {
		send(t, s, c.header, "POST", "/v1/locks/log-test", `{"owner":"w","ttl":"30s"}`)
		send(t, s, c.header, "POST", "/v1/locks/log-test/revoke", `{}`)
		send(t, s, c.header, "GET", "/metrics", "")
	}
	name, tok := holdFor(t, s, writeTok)
	send(t, s, "Bearer "+write2, "DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", name, tok), "")
	out := logs.String()
	for _, tok := range []string{readTok, writeTok, write2, adminTok, wrongTok, "cmVhZDp0b2tlbg=="} {
		if strings.Contains(out, tok) {
			t.Errorf("the log contains a token %q:\n%s", tok, out)
		}
	}
	if !strings.Contains(out, auth.CredentialID(readTok)) || !strings.Contains(out, "unknown token") {
		t.Errorf("the log does not say which credential was refused, nor that a token was unknown:\n%s", out)
	}
}

// TestAuth_AStreamEndsWhenItsCredentialIsRemoved: a reload that drops a
// token ends the event streams opened with it; the others go on.
func TestAuth_AStreamEndsWhenItsCredentialIsRemoved(t *testing.T) {
	s := startWithAuth(t)
	reader, admin := openEvents(t, s, readTok, "/v1/events"), openEvents(t, s, adminTok, "/v1/events")
	// Each stream starts with its retry line.
	for _, r := range []*bufio.Reader{reader, admin} {
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
			t.Fatalf("first line %q, %v", line, err)
		}
	}
	c, err := auth.Parse(strings.NewReader("admin " + adminTok + "\nwrite " + writeTok + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.Auth.Swap(c)
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, reader)
		ended <- err
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the read token's stream is still open 10 s after the token was removed")
	}
	// The admin's stream still delivers.
	testserver.WantStatus(t, s.DoAs(writeTok, "POST", "/v1/locks/after-swap", `{"owner":"w"}`), http.StatusCreated)
	for {
		line, err := admin.ReadString('\n')
		if err != nil {
			t.Fatalf("the admin's stream broke before the acquired event: %v", err)
		}
		if strings.HasPrefix(line, "event: acquired") {
			break
		}
	}
	testserver.WantProblem(t, send(t, s, "Bearer "+readTok, "GET", "/v1/events", ""), http.StatusUnauthorized, "unauthorized")
	if r := send(t, s, "Bearer "+adminTok, "GET", "/v1/locks", ""); r.Status != http.StatusOK {
		t.Fatalf("admin after the swap: %d", r.Status)
	}
}

// TestAuth_EventsNameTheCredentialThatActedNeverItsToken: the owner label
// is the client's to choose, so the trail records the credential
// authentication proved for each event.
func TestAuth_EventsNameTheCredentialThatActedNeverItsToken(t *testing.T) {
	s := startWithAuth(t)
	name, tok := holdFor(t, s, writeTok)
	testserver.WantStatus(t, s.DoAs(adminTok, "POST", "/v1/locks/"+name+"/revoke", `{"reason":"test"}`), http.StatusNoContent)
	h := testserver.WantJSON[api.History](t, s.DoAs(readTok, "GET", "/v1/history?lock="+name, ""), http.StatusOK)
	if len(h.Events) != 2 || h.Events[0].Type != "revoked" || h.Events[1].Type != "acquired" || h.Events[1].Token != tok {
		t.Fatalf("history %+v, want revoked then acquired", h.Events)
	}
	if got, want := h.Events[1].Credential, auth.CredentialID(writeTok); got != want {
		t.Errorf("acquired event credential %q, want the writer's %q", got, want)
	}
	if got, want := h.Events[0].Credential, auth.CredentialID(adminTok); got != want {
		t.Errorf("revoked event credential %q, want the admin's %q", got, want)
	}
	body := string(s.DoAs(readTok, "GET", "/v1/history?lock="+name, "").Body)
	for _, secret := range []string{writeTok, adminTok} {
		if strings.Contains(body, secret) {
			t.Fatalf("history carries a token:\n%s", body)
		}
	}
	if !strings.Contains(body, `"credential":"`+auth.CredentialID(adminTok)+`"`) {
		t.Fatalf("history JSON has no credential member:\n%s", body)
	}
}
