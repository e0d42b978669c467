package client

import (
	"context"
	"fmt"
	"time"
)

// This file holds semaphores: a *Permit is a seat (seats.go), kept by the
// same hold machinery as a *Lock (hold.go), and the plain calls are
// retried as the lock calls are (calls.go): reads, renew and release name
// the permit's token and are retried; an acquire is not, in a session
// neither, since each request takes a permit of its own.

// PermitOptions say how to take a permit. Every field is optional.
type PermitOptions struct {
	// Owner labels the permit for people and the audit trail; empty
	// means the client's address as the server sees it. Identity is the
	// token.
	Owner string
	// TTL is the permit's lease TTL, 2s to 24h; 0 means the server's
	// default (30s). It must be 0 with Session: the session's TTL applies.
	TTL time.Duration
	// Wait waits in line for a permit for up to this long, first come
	// first served across the cluster; 0 fails at once with
	// ErrSemaphoreFull. A Wait over MaxRequestWait (5m), up to
	// WaitForever, needs Session.
	Wait time.Duration
	// Session puts the permit in a session: it lives and dies with it. A
	// session may hold several permits of one semaphore.
	Session string
	// MinHold is the permit's at-least window (AcquireOptions.MinHold).
	MinHold time.Duration
	// Metadata is shown with the permit: at most 16 pairs, 4 KiB in all.
	Metadata map[string]string
}

// PermitInfo describes a permit held.
type PermitInfo struct {
	Name  string
	Owner string
	// Token is the permit's own fencing token, from the same sequence as
	// lock tokens: pass it to whatever the semaphore protects.
	Token int64
	// Limit is the semaphore's: how many permits it has.
	Limit      int
	Session    string
	TTL        time.Duration
	AcquiredAt time.Time
	// ExpiresAt is when the lease runs out unless renewed, by the
	// server's clock.
	ExpiresAt time.Time
	// MinHold is the permit's at-least window (PermitOptions.MinHold).
	MinHold  time.Duration
	Metadata map[string]string
}

// SemaphoreInfo describes a semaphore with permits held.
type SemaphoreInfo struct {
	Name  string
	Limit int
	// Holders are the permits held, oldest first.
	Holders []PermitInfo
	// Waiters are the acquires waiting, first served first; only
	// Semaphore fills them in.
	Waiters []Waiter
}

func (w *wireHold) permit() PermitInfo {
	return PermitInfo{
		Name: w.Name, Owner: w.Owner, Token: w.Token, Limit: w.Limit, Session: w.Session, TTL: time.Duration(w.TTL),
		AcquiredAt: time.Time(w.AcquiredAt), ExpiresAt: time.Time(w.ExpiresAt), MinHold: time.Duration(w.MinHold), Metadata: w.Metadata,
	}
}

func (w *wireSeats) semaphore() SemaphoreInfo {
	return SemaphoreInfo{Name: w.Name, Limit: w.Limit, Holders: holdInfos(w.Holders, (*wireHold).permit), Waiters: w.waiters()}
}

var semaphoreSeats = &seatKind[PermitInfo, SemaphoreInfo]{
	kind: kindSemaphore, path: "/v1/semaphores", list: "semaphores",
	holdOp: func(verb, name string, token int64) string {
		return fmt.Sprintf("%s permit %d of %q", verb, token, name)
	},
	hold:   (*wireHold).permit,
	thing:  (*wireSeats).semaphore,
	listed: func(p *wireSeatsPage) []wireSeats { return p.Semaphores },
}

// AcquirePermit takes one of the limit permits of the semaphore name,
// waiting in line up to o.Wait, and returns it held. The permit renews
// itself in the background until Release, at about a third of its TTL,
// exactly as a *Lock does. It fails with ErrSemaphoreFull, with the
// permits held in Error.Holders, when the wait runs out, and with
// ErrLimitMismatch, with the semaphore's limit in Error.Limit, when the
// semaphore's permits are held or waited for under another limit.
//
// A permit can still be lost, by expiry during a pause or a partition or
// by an operator's revoke: Lost tells. Only work checked against Token is
// safe from a holder that lost its permit without knowing.
//
// AcquirePermit is never retried once the request may have reached a
// node, in a session neither: each request takes a permit of its own, so
// a repeat could take a second one. The error then wraps ErrUnavailable
// and the outcome is unknown; a permit taken that way ends with its lease
// (or shows in its session's Semaphores).
func (c *Client) AcquirePermit(ctx context.Context, name string, limit int, o PermitOptions) (*Permit, error) {
	ho := holdOptions(o)
	body := func(wait time.Duration, keep bool) any {
		return struct {
			Limit int `json:"limit"`
			seatRequest
		}{limit, ho.request(wait, keep)}
	}
	s, err := semaphoreSeats.take(ctx, c, fmt.Sprintf("acquire a permit of %q", name), name, body, ho)
	if err != nil {
		return nil, err
	}
	return &Permit{s}, nil
}

// Semaphore returns the semaphore's limit, its permits held and its
// waiters in the order they will be served. It returns ErrNotHeld when
// no permit is held. Retried.
func (c *Client) Semaphore(ctx context.Context, name string) (*SemaphoreInfo, error) {
	return semaphoreSeats.get(ctx, c, name)
}

// Semaphores returns a page of the semaphores that have permits held,
// sorted by name, with their permits (not their waiters), and the cursor
// of the next page, empty on the last. A page may hold fewer semaphores
// than o.Limit (the server bounds the permits it reads). Retried.
func (c *Client) Semaphores(ctx context.Context, o ListOptions) ([]SemaphoreInfo, string, error) {
	return semaphoreSeats.page(ctx, c, o)
}

// RenewPermit extends the lease of the permit that token holds (in a
// session: the session's lease) and returns it with its new expiry. It
// returns ErrNotHeld when no permit of name has that token. Retried. A
// *Permit renews itself: this is for holders that keep the token only.
func (c *Client) RenewPermit(ctx context.Context, name string, token int64) (*PermitInfo, error) {
	return semaphoreSeats.renewInfo(ctx, c, name, token)
}

// ReleasePermit gives back the permit that token holds; the oldest waiter
// gets it. It returns ErrNotHeld when no permit of name has that token.
// Retried, as Release is: if an earlier attempt may have released it, a
// not_held answer says so.
func (c *Client) ReleasePermit(ctx context.Context, name string, token int64) error {
	return semaphoreSeats.release(ctx, c, name, token)
}

// RevokePermit ends the permit that token holds (an operator's action),
// recorded with reason; the oldest waiter gets a permit. It returns
// ErrNotHeld when no permit of name has that token. Retried: it names the
// permit's token, so a repeat can end no other permit; if an earlier
// attempt may have revoked it, a not_held answer says so.
func (c *Client) RevokePermit(ctx context.Context, name string, token int64, reason string) error {
	return semaphoreSeats.revoke(ctx, c, name, token, reason)
}

// Permit is one of a semaphore's permits, held: it renews itself until
// Release or until it is lost. Its methods are safe for concurrent use.
// It is kept by the same machinery as a *Lock (a permit is a hold of the
// semaphore, with a token of its own), so the client's clock, renewals
// and the Client's event stream decide when it is lost, as Lock describes.
type Permit struct{ s *seat }

// Name returns the semaphore's name.
func (p *Permit) Name() string { return p.s.hold.key.name }

// Token returns the permit's fencing token. Pass it with every write the
// semaphore protects; it never changes while the permit lasts.
func (p *Permit) Token() int64 { return p.s.hold.key.token }

// Limit returns the semaphore's limit, as the permit was granted under.
func (p *Permit) Limit() int { return p.s.current().Limit }

// Info returns the permit as the latest acquire or renew described it.
func (p *Permit) Info() PermitInfo { return p.s.current().permit() }

// Lost returns a channel that is closed as soon as the permit is known
// lost: the audit trail recorded its end (revoked, expired, its session
// expired, or released by its token from elsewhere), which the Client's
// event stream delivers within milliseconds; a renew was answered
// not_held; or the TTL ran out by the client's clock with no renew
// confirmed. Stop the protected work when it closes. Err says why. A
// Release does not close it, unless the release finds the permit lost.
func (p *Permit) Lost() <-chan struct{} { return p.s.hold.lost }

// Done returns a channel that is closed when the permit is no longer
// kept: when it is lost, or released.
func (p *Permit) Done() <-chan struct{} { return p.s.hold.done }

// Err returns why the permit was lost, a *LostError wrapping ErrLockLost
// and the cause (ErrNotHeld for a revoke, an expiry or a release
// elsewhere; ErrUnavailable…), or nil while it is held or if it was
// released cleanly.
func (p *Permit) Err() error { return p.s.hold.lostErr() }

// YieldRequested returns a channel that delivers each request that this
// permit be given back (YieldPermits, of every permit or of this one's
// token), as Lock.YieldRequested does a lock's.
func (p *Permit) YieldRequested() <-chan YieldRequest { return p.s.hold.yieldRequested() }

// Release stops the renewal and gives the permit back with its token; the
// oldest waiter gets it. It returns nil when it did, and an error
// wrapping ErrLockLost when the permit was lost before. Calling it again
// returns the same result. When it gets no answer (ErrUnavailable, ctx
// ended), another call tries again; without one, the lease runs out after
// its TTL.
func (p *Permit) Release(ctx context.Context) error { return p.s.hold.release(ctx) }
