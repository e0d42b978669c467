package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// CredentialKey is the echo context key under which the auth middleware
// leaves the ID of the request's credential (auth.Credential.ID, never the
// token) for the middleware after it: per-credential rate limits, access
// logs. It is unset when auth is off or the route is open.
const CredentialKey = "baton.credential"

// access is what a route needs.
type access struct {
	open bool      // anyone may call it, with or without a token
	role auth.Role // else the weakest role that may
	// stream marks a long-lived answer (the event stream): it ends when a
	// reload takes its credential's access away.
	stream bool
}

var (
	open      = access{open: true}
	readRole  = access{role: auth.Read}
	writeRole = access{role: auth.Write}
	adminRole = access{role: auth.Admin}
)

// routeAccess decides every route by method and echo path template. New
// refuses to build a server with a route missing here, so a route added
// later cannot be served without a decision.
var routeAccess = map[string]access{
	// For people and probes: the dashboard and the docs are static files
	// that call the API, which checks the caller; health checks are for
	// load balancers and supervisors that hold no token.
	"GET /":             open,
	"GET /ui/*":         open,
	"GET /docs":         open,
	"GET /docs/*":       open,
	"GET /openapi.json": open,
	"GET /openapi.yaml": open,
	"GET /healthz":      open,
	"GET /readyz":       open,

	"GET /metrics":             readRole,
	"GET /v1/cluster":          readRole,
	"GET /v1/locks":            readRole,
	"GET /v1/locks/:name":      readRole,
	"GET /v1/sessions":         readRole,
	"GET /v1/sessions/:id":     readRole,
	"GET /v1/fenced/:resource": readRole,
	"GET /v1/history":          readRole,
	"GET /v1/events":           {role: auth.Read, stream: true},

	"POST /v1/locks/:name":         writeRole,
	"POST /v1/locks/:name/renew":   writeRole,
	"DELETE /v1/locks/:name":       writeRole,
	"POST /v1/sessions":            writeRole,
	"POST /v1/sessions/:id/renew":  writeRole,
	"DELETE /v1/sessions/:id":      writeRole,
	"PUT /v1/fenced/:resource":     writeRole,
	"POST /v1/locks/:name/revoke":  adminRole,
	"DELETE /v1/fenced/:resource":  adminRole,
	"DELETE /v1/locks/:name/delay": adminRole,

	// Recovery from a full data store (api/maintenance.go).
	"POST /v1/maintenance/recover": adminRole,
}

// RouteAccess reports what the route of method and path (an echo path
// template, such as "/v1/locks/:name") needs when auth is on: nothing
// (open), or a credential with role or a stronger one. ok is false for a
// route without a decision.
func RouteAccess(method, path string) (role auth.Role, isOpen, ok bool) {
	a, ok := routeAccess[method+" "+path]
	return a.role, a.open, ok
}

// checkRouteAccess panics on a route of e without a decision: a server
// that cannot say who may call a route must not start, whether auth is on
// or not, so every test catches the omission.
func checkRouteAccess(e *echo.Echo) {
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound || strings.HasPrefix(r.Name, "github.com/labstack") {
			continue
		}
		if _, _, ok := RouteAccess(r.Method, r.Path); !ok {
			panic(fmt.Sprintf("server: route %s %s has no access decision in routeAccess (server/auth.go)", r.Method, r.Path))
		}
	}
}

// requireAuth checks the bearer token of every request to a route that is
// not open. It is root-level middleware (e.Use): echo runs it after
// routing, so c.Path() is the matched route's template. A request that
// matched no route (404, 405) has no decision and passes on to its 404 or
// 405: which routes exist is no secret, /openapi.json lists them all.
//
// A missing, malformed or unknown token answers 401 with a Bearer
// challenge, a role too weak 403 naming the role needed. A good token's
// credential goes into the echo context (CredentialKey) and, for the lock
// engine's ownership checks, into the request's context (lock.Caller).
// The token itself is never logged nor stored.
func requireAuth(store *auth.Store, log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			acc, ok := routeAccess[req.Method+" "+c.Path()]
			if !ok || acc.open {
				return next(c)
			}
			var changed <-chan struct{}
			if acc.stream {
				// Before the check, so no reload slips between the two.
				changed = store.Changed()
			}
			token, why := bearerToken(req.Header)
			if why != "" {
				log.Info("request refused", "status", http.StatusUnauthorized, "method", req.Method, "route", c.Path(), "remote", c.RealIP(), "reason", why)
				return fmt.Errorf("%w: %s; send Authorization: Bearer TOKEN", auth.ErrUnauthorized, why)
			}
			cred, ok := store.Check(token)
			if !ok {
				log.Info("request refused", "status", http.StatusUnauthorized, "method", req.Method, "route", c.Path(), "remote", c.RealIP(), "reason", "unknown token")
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, api.WWWAuthenticate+`, error="invalid_token"`)
				return fmt.Errorf("%w: the bearer token is not valid", auth.ErrUnauthorized)
			}
			if !cred.Role.Allows(acc.role) {
				log.Info("request refused", "status", http.StatusForbidden, "method", req.Method, "route", c.Path(), "remote", c.RealIP(), "credential", cred.ID, "role", cred.Role, "need", acc.role)
				return &auth.RoleError{Need: acc.role, Have: cred.Role}
			}
			c.Set(CredentialKey, cred.ID)
			ctx := lock.WithCaller(req.Context(), lock.Caller{Credential: cred.ID, Admin: cred.Role == auth.Admin})
			if acc.stream {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go endOnRevocation(ctx, cancel, store, changed, token, cred, acc.role, log)
			}
			c.SetRequest(req.WithContext(ctx))
			return next(c)
		}
	}
}

// endOnRevocation ends a stream's request when a reload takes its
// credential's access away: a token removed from the auth file must not
// keep a stream open for days.
func endOnRevocation(ctx context.Context, cancel context.CancelFunc, store *auth.Store, changed <-chan struct{}, token string, cred auth.Credential, need auth.Role, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			changed = store.Changed()
			now, ok := store.Check(token)
			if !ok || !now.Role.Allows(need) {
				log.Info("stream ended: its credential was removed or lost its role", "credential", cred.ID)
				cancel()
				return
			}
		}
	}
}

// bearerToken reads the token of an "Authorization: Bearer TOKEN" header
// (RFC 6750). why, when not empty, says what is wrong, without quoting
// anything the client sent.
func bearerToken(h http.Header) (token, why string) {
	vals := h.Values(echo.HeaderAuthorization)
	switch {
	case len(vals) == 0:
		return "", "no Authorization header"
	case len(vals) > 1:
		return "", "more than one Authorization header"
	}
	scheme, rest, _ := strings.Cut(vals[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", "the Authorization header is not of the Bearer scheme"
	}
	token = strings.TrimLeft(rest, " ")
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", "the Authorization header holds no single bearer token"
	}
	return token, ""
}
