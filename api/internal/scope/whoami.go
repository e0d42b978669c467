package scope

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// Self is who a request's credential is and what it may do, as GET
// /v1/whoami answers it. It holds no token.
type Self struct {
	// Authentication is false when the node checks no token.
	Authentication bool
	// Credential is the credential's ID (auth.Credential.ID).
	Credential string
	// Rules are the credential's, sorted by prefix: without
	// authentication, "": admin.
	Rules []auth.Rule
	// Quotas are the credential's, nil when it has none.
	Quotas *auth.Quotas
	// Usage is what the quotas that are set count now.
	Usage Usage
}

// Usage is what a credential's quotas of holds, sessions and waiters
// count now; nil for a quota that is not set, which is not counted.
type Usage struct{ Holds, Sessions, Waiters *int }

// UsageFunc counts what cred holds and waits for, for the quotas set
// bounds: lock.Engine.QuotaUsage.
type UsageFunc func(ctx context.Context, cred string, set lock.CallerQuotas) (lock.CallerQuotas, error)

// Whoami says who c's credential is and what it may do. It counts the
// credential's usage with usage only when it has a quota of holds,
// sessions or waiters, so a node whose credentials have none reads
// nothing for it.
func Whoami(c echo.Context, usage UsageFunc) (Self, error) {
	cred := Of(c)
	if cred == nil {
		return Self{Rules: auth.Everything(auth.Admin).List()}, nil
	}
	s := Self{Authentication: true, Credential: cred.ID, Rules: cred.Rules.List()}
	q := cred.Quotas
	if q == (auth.Quotas{}) {
		return s, nil
	}
	s.Quotas = &q
	set := lock.CallerQuotas{Holds: q.Holds, Sessions: q.Sessions, Waiters: q.Waiters}
	if set == (lock.CallerQuotas{}) {
		return s, nil
	}
	u, err := usage(c.Request().Context(), cred.ID, set)
	if err != nil {
		return Self{}, err
	}
	s.Usage = Usage{Holds: counted(q.Holds, u.Holds), Sessions: counted(q.Sessions, u.Sessions), Waiters: counted(q.Waiters, u.Waiters)}
	return s, nil
}

// counted is n when a quota is set (limit > 0), else nil.
func counted(limit, n int) *int {
	if limit <= 0 {
		return nil
	}
	return &n
}
