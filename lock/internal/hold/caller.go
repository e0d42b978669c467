package hold

import "context"

// Caller is who makes a request, for the ownership checks: with a caller
// in the context (WithCaller), Acquire records its Credential on the hold
// and CreateSession on the session, and Release, Renew, RenewSession and
// DeleteSession, and an Acquire into a session, refuse with ErrNotOwner
// when the hold or session was recorded for another credential, unless
// the caller is Admin.
//
// Without a caller (no authentication) nothing is recorded or compared. A
// hold or session recorded without a credential belongs to nobody in
// particular: any caller may act on it.
type Caller struct {
	// Credential is a non-secret ID of the credential (never the token).
	Credential string
	// Admin may act on any hold or session.
	Admin bool
	// Quotas bound what the credential may hold and wait for (0: no
	// bound): the engine refuses past them with ErrQuotaExceeded.
	Quotas Quotas
}

// Quotas are a caller's credential's bounds (auth.Quotas): its holds and
// sessions across the cluster, its acquires waiting on this node.
type Quotas struct {
	Holds, Waiters, Sessions int
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok && c.Credential != ""
}

// CredentialOf is what a new hold or session records: the caller's
// credential, or "" without one.
func CredentialOf(ctx context.Context) string {
	c, _ := CallerFrom(ctx)
	return c.Credential
}

// MayActOn reports whether ctx's caller may end or renew what recorded was
// created by.
func MayActOn(ctx context.Context, recorded string) bool {
	c, ok := CallerFrom(ctx)
	return !ok || c.Admin || recorded == "" || recorded == c.Credential
}
