package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// CredentialKey is the echo context key under which the auth middleware
// leaves the ID of the request's credential (auth.Credential.ID, never the
// token) for the middleware after it: per-credential rate limits, access
// logs. It is unset when auth is off or the route is open.
const CredentialKey = "baton.credential"

// requireAuth checks the credential of every request to a route that is
// not Open, against the role its row of routes needs. It is root-level
// middleware (e.Use): echo runs it after routing, so c.Path() is the
// matched route's template. A request that matched no route (404, 405)
// has no row and passes on to its 404 or 405: which routes exist is no
// secret, /openapi.json lists them all.
//
// A request proves its credential by its bearer token (a listed token or
// a JWT, auth.Credentials.Bearer) or, without an Authorization header, by
// a client certificate the TLS layer verified (authenticate). A missing,
// malformed, unknown or failing proof answers 401 with a Bearer
// challenge, a role too weak 403 naming the role needed. The credential
// goes into the echo context (CredentialKey) and, for the lock engine's
// ownership checks, into the request's context (lock.Caller). The token
// itself is never logged nor stored.
func requireAuth(store *auth.Store, routes routeTable, log *slog.Logger, reg prometheus.Registerer) echo.MiddlewareFunc {
	denials := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "baton_auth_denials_total",
		Help: "Requests refused with 403 forbidden by a credential's role or rules, by credential and the rule that decided: " +
			"a rule's quoted prefix, \"none\" (no rule covers the name), \"role\" (the credential's strongest role is too weak for the route) " +
			"or \"global\" (a call across names needs admin on every name).",
	}, []string{"credential", "rule"})
	if reg != nil {
		reg.MustRegister(denials)
	}
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
			id, err := authenticate(store, req, time.Now())
			if err != nil {
				return refused(c, log, err)
			}
			cred := id.Cred
			if rule, err := mayCall(cred, route); err != nil {
				log.Info("request refused", "status", http.StatusForbidden, "method", req.Method, "route", c.Path(), "remote", c.RealIP(), "credential", cred.ID, "role", cred.Role, "need", route.Role)
				denials.WithLabelValues(cred.ID, rule).Inc()
				return err
			}
			c.Set(CredentialKey, cred.ID)
			c.Set(api.AccessKey, cred)
			q := cred.Quotas
			ctx := lock.WithCaller(req.Context(), lock.Caller{
				Credential: cred.ID, Admin: cred.Rules.Global(auth.Admin),
				Quotas: lock.CallerQuotas{Holds: q.Holds, Waiters: q.Waiters, Sessions: q.Sessions},
			})
			if route.Stream {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go endOnRevocation(ctx, cancel, store, changed, req, id, route.Role, log)
			}
			c.SetRequest(req.WithContext(ctx))
			err = next(c)
			var se *auth.ScopeError
			if err != nil && errors.As(err, &se) {
				log.Info("request refused", "status", http.StatusForbidden, "method", req.Method, "route", c.Path(), "remote", c.RealIP(), "credential", cred.ID, "rule", se.RuleName(), "need", se.Need)
				denials.WithLabelValues(cred.ID, se.RuleName()).Inc()
			}
			return err
		}
	}
}

// authenticate returns the identity req proves. The Authorization header
// decides when there is one, whatever certificate the connection
// presented: a client holding both chose the token. Without one, a
// client certificate that the TLS layer verified against the client CA
// (--tls-client-ca) is looked up in the policy file's certificates:.
func authenticate(store *auth.Store, req *http.Request, now time.Time) (auth.Identity, error) {
	if len(req.Header.Values(echo.HeaderAuthorization)) == 0 {
		if cert := verifiedClientCertificate(req); cert != nil {
			return store.Certificate(cert)
		}
	}
	token, why := bearerToken(req.Header)
	if why != "" {
		return auth.Identity{}, &auth.ProofError{Reason: why, Detail: why + "; send Authorization: Bearer TOKEN"}
	}
	return store.Bearer(token, now)
}

// verifiedClientCertificate is the leaf of the connection's verified
// client certificate chain, nil when there is none: a certificate the TLS
// layer only received, unverified, proves nothing.
func verifiedClientCertificate(req *http.Request) *x509.Certificate {
	if req.TLS == nil || len(req.TLS.VerifiedChains) == 0 || len(req.TLS.VerifiedChains[0]) == 0 {
		return nil
	}
	return req.TLS.VerifiedChains[0][0]
}

// refused logs a 401 and answers it: with RFC 6750's error="invalid_token"
// when a bearer token was sent and failed. The log names the reason and,
// for a certificate, its subject (its CA vouched for it); never the token.
func refused(c echo.Context, log *slog.Logger, err error) error {
	req := c.Request()
	attrs := []any{"status", http.StatusUnauthorized, "method", req.Method, "route", c.Path(), "remote", c.RealIP()}
	var pe *auth.ProofError
	if errors.As(err, &pe) {
		if pe.Via != "" {
			attrs = append(attrs, "via", pe.Via)
		}
		attrs = append(attrs, "reason", pe.Reason)
		if pe.Subject != "" {
			attrs = append(attrs, "subject", pe.Subject)
		}
		if pe.InvalidToken() {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, api.WWWAuthenticate+`, error="invalid_token"`)
		}
	}
	log.Info("request refused", attrs...)
	return err
}

// mayCall is nil when cred may call route, as far as the route alone
// decides: its rules give the route's role somewhere. The names a request
// touches are checked against the rules after (api.Route.Name, and the
// handlers). A route that needs admin and names nothing acts across names
// (maintenance): it needs admin on every name. rule labels a refusal in
// baton_auth_denials_total.
func mayCall(cred *auth.Credential, route *api.Route) (rule string, err error) {
	if !cred.Role.Allows(route.Role) {
		return "role", &auth.RoleError{Need: route.Role, Have: cred.Role}
	}
	if route.Role == auth.Admin && route.Name == "" && !cred.Rules.Global(auth.Admin) {
		return "global", fmt.Errorf("%w: this call acts on every name and needs a rule \"\": admin; this credential's rules are %s", auth.ErrForbidden, cred.Rules)
	}
	return "", nil
}

// endOnRevocation ends a stream's request when a reload takes its
// credential's access away or changes its rules, and when its proof
// expires (a JWT's exp, a certificate's NotAfter): a token removed from
// the auth file, or one that expired, must not keep a stream open for
// days, nor a stream show names its credential no longer may see. A
// client resumes with Last-Event-ID, under the rules in force and with a
// proof that holds.
func endOnRevocation(ctx context.Context, cancel context.CancelFunc, store *auth.Store, changed <-chan struct{}, req *http.Request, id auth.Identity, need auth.Role, log *slog.Logger) {
	var expired <-chan time.Time
	if !id.Expires.IsZero() {
		t := time.NewTimer(time.Until(id.Expires))
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-expired:
			log.Info("stream ended: its credential's proof expired", "credential", id.Cred.ID, "via", id.Via)
			cancel()
			return
		case <-changed:
			changed = store.Changed()
			now, err := authenticate(store, req, time.Now())
			if err != nil || now.Cred.ID != id.Cred.ID || !now.Cred.Role.Allows(need) || !now.Cred.Rules.Equal(id.Cred.Rules) {
				log.Info("stream ended: its credential was removed or its rules changed", "credential", id.Cred.ID)
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
