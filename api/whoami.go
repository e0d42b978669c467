package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api/internal/scope"
)

// Whoami is who a request's credential is and what it may do. It never
// holds a token.
type Whoami struct {
	// Authentication is false when the node checks no token: then every
	// request may do everything, as one rule "": admin says.
	Authentication bool `json:"authentication" example:"true"`
	// Credential is the credential's ID: its name in a policy file, or
	// "cred-" and 12 hex digits of its token's SHA-256 in the line format.
	Credential string `json:"credential,omitempty" example:"payments"`
	// Rules give a role on the names under each prefix, sorted by prefix:
	// of those a name starts with, the longest decides; a name none
	// covers may be neither touched nor seen.
	Rules []Rule `json:"rules"`
	// Quotas are the credential's quotas that are set; absent when none is.
	Quotas *Quotas `json:"quotas,omitempty"`
	// Usage is what the quotas of holds, sessions and waiters count now,
	// each only when its quota is set; absent when none of them is.
	Usage *QuotaUsage `json:"usage,omitempty"`
}

// Rule gives Role on the names that start with Prefix ("": every name).
type Rule struct {
	Prefix string `json:"prefix" example:"payments."`
	Role   string `json:"role" example:"write" enums:"read,write,admin"`
}

// Quotas bound what a credential may use (docs/SECURITY.md, Quotas): its
// holds and sessions across the cluster, its waiting acquires and event
// streams on each node, and its requests a second (rate, burst).
type Quotas struct {
	Holds    int     `json:"holds,omitempty" example:"500"`
	Sessions int     `json:"sessions,omitempty" example:"100"`
	Waiters  int     `json:"waiters,omitempty" example:"200"`
	Streams  int     `json:"streams,omitempty" example:"10"`
	Rate     float64 `json:"rate,omitempty" example:"50"`
	Burst    int     `json:"burst,omitempty" example:"100"`
}

// QuotaUsage is what a credential's quotas count now: its holds and
// sessions across the cluster, its acquires waiting on this node.
type QuotaUsage struct {
	Holds    *int `json:"holds,omitempty" example:"3"`
	Sessions *int `json:"sessions,omitempty" example:"1"`
	Waiters  *int `json:"waiters,omitempty" example:"0"`
}

// whoami godoc
//
//	@Summary		Who the request's credential is
//	@ID				whoami
//	@Description	The credential the request's token speaks for (its ID, never the token), its rules (a role per name prefix; the longest prefix of a name decides) and its quotas, with what the quotas of holds, sessions and waiters count now. Without --auth-file: `{"authentication":false,"rules":[{"prefix":"","role":"admin"}]}`. Any credential may ask.
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	api.Whoami
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Security		BearerAuth
//	@Router			/v1/whoami [get]
func (a *API) whoami(c echo.Context) error {
	w, err := scope.Whoami(c, a.eng.QuotaUsage)
	if err != nil {
		return err
	}
	out := Whoami{Authentication: w.Authentication, Credential: w.Credential, Rules: make([]Rule, len(w.Rules))}
	for i, r := range w.Rules {
		out.Rules[i] = Rule{Prefix: r.Prefix, Role: r.Role.String()}
	}
	if q := w.Quotas; q != nil {
		out.Quotas = &Quotas{Holds: q.Holds, Sessions: q.Sessions, Waiters: q.Waiters, Streams: q.Streams, Rate: q.Rate, Burst: q.Burst}
	}
	if u := w.Usage; u != (scope.Usage{}) {
		out.Usage = &QuotaUsage{Holds: u.Holds, Sessions: u.Sessions, Waiters: u.Waiters}
	}
	return c.JSON(http.StatusOK, out)
}
