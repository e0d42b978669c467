package api

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
)

// Route is one route of the server: what serves it and what a request
// must bring. Registration (Register), authorisation and the stream caps
// (package server) and the query check all read these rows, so a route is
// declared once. swag's @Router line beside each handler is the one other
// place a route is named; a test compares the two.
type Route struct {
	Method string
	// Path is echo's template, such as "/v1/locks/:name".
	Path    string
	Handler echo.HandlerFunc
	// Role is the weakest role that may call the route when
	// authentication is on (roles nest: admin may what write may), unless
	// Open: anyone may, with or without a token. Register refuses a row
	// with neither.
	Role auth.Role
	Open bool
	// Name is the path parameter that names the thing the route acts on
	// ("name", "resource", "*" for a key), whose rule of the credential
	// must give Role (see authorize) before the handler runs; "" for
	// routes that name nothing in their path, whose handlers check the
	// names they touch.
	Name string
	// Query names the query parameters the route takes. Any other name,
	// one given twice or a query string that does not parse is a 400
	// before the handler runs, so a typo (?wiat=10s) is never silently
	// ignored. AnyQuery routes (pages, probes, metrics) are not checked.
	Query    []string
	AnyQuery bool
	// Stream marks a long-lived answer (the event stream): the per-client
	// stream caps count it, and it ends when a reload takes its
	// credential's access away.
	Stream bool
	// Leader marks a route that needs a leader: while this node's etcd
	// member knows none it answers 503 at once, rather than waiting out
	// the engine's OpTimeout for a proposal that cannot commit.
	Leader bool
}

// Routes are the API's rows: the v1 routes of docs/API.md and the health
// checks. A resource's handlers live in a file of their own (locks.go,
// sessions.go, …); its routes are rows here.
//
// Every v1 route but /v1/cluster needs a leader: that one is how an
// operator sees that this node has none.
func (a *API) Routes() []Route {
	const get, post, put, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	list := []string{"prefix", "limit", "cursor"}
	return []Route{
		{Method: get, Path: "/healthz", Handler: a.healthz, Open: true, AnyQuery: true},
		{Method: get, Path: "/readyz", Handler: a.readyz, Open: true, AnyQuery: true},
		{Method: get, Path: "/v1/cluster", Handler: a.cluster, Role: auth.Read},
		{Method: get, Path: "/v1/whoami", Handler: a.whoami, Role: auth.Read, Leader: true},

		{Method: post, Path: "/v1/sessions", Handler: a.createSession, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/sessions", Handler: a.listSessions, Role: auth.Read, Query: list, Leader: true},
		{Method: get, Path: "/v1/sessions/:id", Handler: a.getSession, Role: auth.Read, Leader: true},
		{Method: post, Path: "/v1/sessions/:id/renew", Handler: a.renewSession, Role: auth.Write, Leader: true},
		{Method: del, Path: "/v1/sessions/:id", Handler: a.deleteSession, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/sessions/:id/stream", Handler: a.sessionStream, Role: auth.Write, Stream: true, Leader: true},

		{Method: get, Path: "/v1/locks", Handler: a.listLocks, Role: auth.Read, Query: list, Leader: true},
		{Method: post, Path: "/v1/locks/:name", Name: "name", Handler: a.acquire, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/locks/:name", Name: "name", Handler: a.getLock, Role: auth.Read, Leader: true},
		{Method: post, Path: "/v1/locks/:name/renew", Name: "name", Handler: a.renew, Role: auth.Write, Leader: true},
		{Method: del, Path: "/v1/locks/:name", Name: "name", Handler: a.release, Role: auth.Write, Query: []string{"token"}, Leader: true},
		{Method: post, Path: "/v1/locks/:name/revoke", Name: "name", Handler: a.revoke, Role: auth.Admin, Leader: true},
		{Method: post, Path: "/v1/locks/:name/yield", Name: "name", Handler: a.yieldLock, Role: auth.Write, Leader: true},
		{Method: del, Path: "/v1/locks/:name/delay", Name: "name", Handler: a.clearDelay, Role: auth.Admin, Query: []string{"reason"}, Leader: true},

		{Method: get, Path: "/v1/elections", Handler: a.listElections, Role: auth.Read, Query: list, Leader: true},
		{Method: post, Path: "/v1/elections/:name/campaign", Name: "name", Handler: a.campaign, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/elections/:name", Name: "name", Handler: a.getElection, Role: auth.Read, Leader: true},
		{Method: post, Path: "/v1/elections/:name/proclaim", Name: "name", Handler: a.proclaim, Role: auth.Write, Leader: true},
		{Method: post, Path: "/v1/elections/:name/renew", Name: "name", Handler: a.renewLeadership, Role: auth.Write, Leader: true},
		{Method: del, Path: "/v1/elections/:name/leader", Name: "name", Handler: a.resign, Role: auth.Write, Query: []string{"token"}, Leader: true},
		{Method: post, Path: "/v1/elections/:name/leader/transfer", Name: "name", Handler: a.transferLeadership, Role: auth.Write, Leader: true},
		{Method: post, Path: "/v1/elections/:name/revoke", Name: "name", Handler: a.revokeLeadership, Role: auth.Admin, Leader: true},
		{Method: post, Path: "/v1/elections/:name/yield", Name: "name", Handler: a.yieldLeadership, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/elections/:name/observe", Name: "name", Handler: a.observe, Role: auth.Read, Stream: true, Leader: true},

		{Method: get, Path: "/v1/semaphores", Handler: a.listSemaphores, Role: auth.Read, Query: list, Leader: true},
		{Method: post, Path: "/v1/semaphores/:name", Name: "name", Handler: a.acquirePermit, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/semaphores/:name", Name: "name", Handler: a.getSemaphore, Role: auth.Read, Leader: true},
		{Method: post, Path: "/v1/semaphores/:name/renew", Name: "name", Handler: a.renewPermit, Role: auth.Write, Leader: true},
		{Method: del, Path: "/v1/semaphores/:name", Name: "name", Handler: a.releasePermit, Role: auth.Write, Query: []string{"token"}, Leader: true},
		{Method: post, Path: "/v1/semaphores/:name/revoke", Name: "name", Handler: a.revokePermit, Role: auth.Admin, Leader: true},
		{Method: post, Path: "/v1/semaphores/:name/yield", Name: "name", Handler: a.yieldPermits, Role: auth.Write, Leader: true},

		{Method: post, Path: "/v1/locksets", Handler: a.acquireLockSet, Role: auth.Write, Leader: true},
		{Method: post, Path: "/v1/locksets/release", Handler: a.releaseLockSet, Role: auth.Write, Leader: true},
		{Method: post, Path: "/v1/locksets/renew", Handler: a.renewLockSet, Role: auth.Write, Leader: true},

		{Method: get, Path: "/v1/rwlocks", Handler: a.listRWLocks, Role: auth.Read, Query: list, Leader: true},
		{Method: post, Path: "/v1/rwlocks/:name", Name: "name", Handler: a.acquireRW, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/rwlocks/:name", Name: "name", Handler: a.getRWLock, Role: auth.Read, Leader: true},
		{Method: post, Path: "/v1/rwlocks/:name/renew", Name: "name", Handler: a.renewRW, Role: auth.Write, Leader: true},
		{Method: del, Path: "/v1/rwlocks/:name", Name: "name", Handler: a.releaseRW, Role: auth.Write, Query: []string{"token"}, Leader: true},
		{Method: post, Path: "/v1/rwlocks/:name/revoke", Name: "name", Handler: a.revokeRW, Role: auth.Admin, Leader: true},
		{Method: post, Path: "/v1/rwlocks/:name/yield", Name: "name", Handler: a.yieldRW, Role: auth.Write, Leader: true},

		{Method: put, Path: "/v1/fenced/:resource", Name: "resource", Handler: a.putFenced, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/fenced/:resource", Name: "resource", Handler: a.getFenced, Role: auth.Read, Leader: true},
		{Method: del, Path: "/v1/fenced/:resource", Name: "resource", Handler: a.resetFenced, Role: auth.Admin, Query: []string{"reason"}, Leader: true},

		// A key's "/"s need echo's wildcard; /v1/kv/events, a static
		// route, wins over it for GET (keyParam refuses that key).
		{Method: get, Path: "/v1/kv", Handler: a.listKeys, Role: auth.Read, Query: list, Leader: true},
		{Method: get, Path: "/v1/kv/events", Handler: a.keyEvents, Role: auth.Read, Stream: true, Leader: true, Query: []string{"prefix", "since"}},
		{Method: put, Path: "/v1/kv/*", Name: "*", Handler: a.putKey, Role: auth.Write, Leader: true},
		{Method: get, Path: "/v1/kv/*", Name: "*", Handler: a.getKey, Role: auth.Read, Query: []string{"wait_revision", "wait"}, Leader: true},
		{Method: del, Path: "/v1/kv/*", Name: "*", Handler: a.deleteKey, Role: auth.Write, Query: []string{"if_revision"}, Leader: true},

		{Method: get, Path: "/v1/history", Handler: a.history, Role: auth.Read, Leader: true,
			Query: []string{"lock", "kind", "name", "limit", "before", "owner", "type", "from", "to"}},
		{Method: get, Path: "/v1/events", Handler: a.events, Role: auth.Read, Stream: true, Leader: true,
			Query: []string{"lock", "kind", "name", "since"}},

		{Method: post, Path: "/v1/maintenance/recover", Handler: a.recoverSpace, Role: auth.Admin, Leader: true},
	}
}

// echoParam is a path parameter in echo's spelling (:name).
var echoParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// DocPath is the OpenAPI document's path of an echo route template:
// "/v1/locks/:name" is "/v1/locks/{name}", and the keys' wildcard,
// "/v1/kv/*", "/v1/kv/{key}".
func DocPath(echoPath string) string {
	p := echoParam.ReplaceAllString(echoPath, "{$1}")
	if rest, ok := strings.CutSuffix(p, "/*"); ok {
		return rest + "/{key}"
	}
	return p
}

// Register adds routes to e, each handler behind the checks its row asks
// for: the query's names (400), the name the path gives against the
// credential's rules (403), a leader (503). They wrap the handler here, once,
// rather than as route middleware, which echo applies anew, a closure
// allocated, on every request. Routes are added to e itself, not to a
// group: echo gives a group with middleware a catch-all route, which
// would turn 405s into 404s.
//
// Register panics on a row that says neither who may call it nor that
// anyone may: a server must not start with a route it cannot decide.
func (a *API) Register(e *echo.Echo, routes []Route) {
	for _, r := range routes {
		if !r.Open && r.Role == 0 {
			panic(fmt.Sprintf("api: route %s %s has no Role and is not Open", r.Method, r.Path))
		}
		h := r.Handler
		if r.Leader {
			h = a.requireLeader(h)
		}
		if r.Name != "" {
			h = scope.Name(r.Name, r.Role, h)
		}
		if !r.AnyQuery {
			h = checkQuery(r.Query, h)
		}
		e.Add(r.Method, r.Path, h)
	}
}

// requireLeader answers 503 at once while this node's etcd member knows no
// leader.
func (a *API) requireLeader(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := a.eng.CheckLeader(); err != nil {
			return err
		}
		return next(c)
	}
}

// checkQuery answers 400 to a request whose query does not parse, names a
// parameter outside allowed, or names one twice; see request.CheckQuery.
func checkQuery(allowed []string, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := request.CheckQuery(c.Request().URL.RawQuery, allowed); err != nil {
			return err
		}
		return next(c)
	}
}
