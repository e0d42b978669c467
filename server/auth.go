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

// requireAuth checks the bearer token of every request to a route that is
// not Open, against the role its row of routes needs. It is root-level
// middleware (e.Use): echo runs it after routing, so c.Path() is the
// matched route's template. A request that matched no route (404, 405)
// has no row and passes on to its 404 or 405: which routes exist is no
// secret, /openapi.json lists them all.
//
// A missing, malformed or unknown token answers 401 with a Bearer
// challenge, a role too weak 403 naming the role needed. A good token's
// credential goes into the echo context (CredentialKey) and, for the lock
// engine's ownership checks, into the request's context (lock.Caller).
// The token itself is never logged nor stored.
func requireAuth(store *auth.Store, routes routeTable, log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			route := routes.of(c)
			if route == nil || route.Open {
				return next(c)
			}
			var changed <-chan struct{}
			if route.Stream {
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
			if !cred.Role.Allows(route.Role) {
				log.Info("request refused", "status", http.StatusForbidden, "method", req.Method, "route", c.Path(), "remote", c.RealIP(), "credential", cred.ID, "role", cred.Role, "need", route.Role)
				return &auth.RoleError{Need: route.Role, Have: cred.Role}
			}
			c.Set(CredentialKey, cred.ID)
			ctx := lock.WithCaller(req.Context(), lock.Caller{Credential: cred.ID, Admin: cred.Role == auth.Admin})
			if route.Stream {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go endOnRevocation(ctx, cancel, store, changed, token, cred, route.Role, log)
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
