package client

import (
	"context"
	"fmt"
	"time"
)

// This file holds read/write locks: an *RWHold is a seat (seats.go), kept
// by the same hold machinery as a *Lock and a *Permit (hold.go), and the
// plain calls are retried as theirs are: reads, renew and release name the
// hold's token and are retried; an acquire is not, since every read
// request takes a hold of its own.

// Modes of a read/write lock's hold.
const (
	// Read holds share the lock with each other.
	Read = "read"
	// Write holds exclude every other hold.
	Write = "write"
)

// RWOptions say how to take a hold of a read/write lock. Every field is
// optional.
type RWOptions struct {
	// Owner labels the hold for people and the audit trail; empty means
	// the client's address as the server sees it. Identity is the token.
	Owner string
	// TTL is the hold's lease TTL, 2s to 24h; 0 means the server's
	// default (30s). It must be 0 with Session: the session's TTL applies.
	TTL time.Duration
	// Wait waits in line for up to this long, strictly first come first
	// served across the cluster: a reader behind a waiting writer waits
	// too. 0 fails at once with ErrHeld. A Wait over MaxRequestWait (5m),
	// up to WaitForever, needs Session.
	Wait time.Duration
	// Session puts the hold in a session: it lives and dies with it.
	Session string
	// MinHold is the hold's at-least window (AcquireOptions.MinHold).
	MinHold time.Duration
	// Metadata is shown with the hold: at most 16 pairs, 4 KiB in all.
	Metadata map[string]string
}

// RWHoldInfo describes a hold of a read/write lock.
type RWHoldInfo struct {
	Name string
	// Mode is Read or Write.
	Mode  string
	Owner string
	// Token is the hold's own fencing token, from the same sequence as
	// lock tokens. A write hold's is greater than that of every hold that
	// ended before it was granted.
	Token      int64
	Session    string
	TTL        time.Duration
	AcquiredAt time.Time
	// ExpiresAt is when the lease runs out unless renewed, by the
	// server's clock.
	ExpiresAt time.Time
	// MinHold is the hold's at-least window (RWOptions.MinHold).
	MinHold  time.Duration
	Metadata map[string]string
}

// RWLockInfo describes a read/write lock that is held.
type RWLockInfo struct {
	Name string
	// Mode is the holds': Write (one hold) or Read (any number).
	Mode string
	// Holders are the holds, oldest first.
	Holders []RWHoldInfo
	// Waiters are the acquires waiting, first served first, each with its
	// Mode; only RWLock fills them in.
	Waiters []Waiter
}

func (w *wireHold) rwHold() RWHoldInfo {
	return RWHoldInfo{
		Name: w.Name, Mode: w.Mode, Owner: w.Owner, Token: w.Token, Session: w.Session, TTL: time.Duration(w.TTL),
		AcquiredAt: time.Time(w.AcquiredAt), ExpiresAt: time.Time(w.ExpiresAt), MinHold: time.Duration(w.MinHold), Metadata: w.Metadata,
	}
}

func (w *wireSeats) rwLock() RWLockInfo {
	return RWLockInfo{Name: w.Name, Mode: w.Mode, Holders: holdInfos(w.Holders, (*wireHold).rwHold), Waiters: w.waiters()}
}

var rwlockSeats = &seatKind[RWHoldInfo, RWLockInfo]{
	kind: kindRWLock, path: "/v1/rwlocks", list: "rwlocks",
	holdOp: func(verb, name string, token int64) string {
		return fmt.Sprintf("%s rwlock %q hold %d", verb, name, token)
	},
	hold:   (*wireHold).rwHold,
	thing:  (*wireSeats).rwLock,
	listed: func(p *wireSeatsPage) []wireSeats { return p.RWLocks },
}

// AcquireRW takes a hold of the read/write lock name in mode (Read or
// Write), waiting in line up to o.Wait, and returns it held. Readers
// share; a writer excludes everyone. The hold renews itself in the
// background until Release, at about a third of its TTL, exactly as a
// *Lock does. It fails with ErrHeld, with the holds in the way in
// Error.RWHolders, when the wait runs out.
//
// A hold can still be lost, by expiry during a pause or a partition or by
// an operator's revoke: Lost tells. Only work checked against Token is
// safe from a holder that lost its hold without knowing; a writer's
// fenced writes can name the lock (PutFencedOptions.RWLock) to require
// exactly the current write hold.
//
// AcquireRW is never retried once the request may have reached a node:
// every read request takes a hold of its own, so a repeat could take a
// second one. The error then wraps ErrUnavailable and the outcome is
// unknown; a hold taken that way ends with its lease (or shows in its
// session's RWLocks).
func (c *Client) AcquireRW(ctx context.Context, name, mode string, o RWOptions) (*RWHold, error) {
	ho := holdOptions(o)
	body := func(wait time.Duration, keep bool) any {
		return struct {
			Mode string `json:"mode"`
			seatRequest
		}{mode, ho.request(wait, keep)}
	}
	s, err := rwlockSeats.take(ctx, c, fmt.Sprintf("acquire a %s hold of %q", mode, name), name, body, ho)
	if err != nil {
		return nil, err
	}
	return &RWHold{s}, nil
}

// RWLock returns the read/write lock's mode, its holds and its waiters in
// the order they will be served. It returns ErrNotHeld when nothing holds
// it. Retried.
func (c *Client) RWLock(ctx context.Context, name string) (*RWLockInfo, error) {
	return rwlockSeats.get(ctx, c, name)
}

// RWLocks returns a page of the read/write locks that are held, sorted by
// name, with their holds (not their waiters), and the cursor of the next
// page, empty on the last. A page may hold fewer locks than o.Limit (the
// server bounds the holds it reads). Retried.
func (c *Client) RWLocks(ctx context.Context, o ListOptions) ([]RWLockInfo, string, error) {
	return rwlockSeats.page(ctx, c, o)
}

// RenewRW extends the lease of the hold that token is (in a session: the
// session's lease) and returns it with its new expiry. It returns
// ErrNotHeld when no hold of name has that token. Retried. An *RWHold
// renews itself: this is for holders that keep the token only.
func (c *Client) RenewRW(ctx context.Context, name string, token int64) (*RWHoldInfo, error) {
	return rwlockSeats.renewInfo(ctx, c, name, token)
}

// ReleaseRW ends the hold that token is; the waiters at the head of the
// queue get the lock when it is free for them. It returns ErrNotHeld when
// no hold of name has that token. Retried, as Release is: if an earlier
// attempt may have released it, a not_held answer says so.
func (c *Client) ReleaseRW(ctx context.Context, name string, token int64) error {
	return rwlockSeats.release(ctx, c, name, token)
}

// RevokeRW ends the hold that token is (an operator's action), recorded
// with reason. It returns ErrNotHeld when no hold of name has that token.
// Retried: it names the hold's token, so a repeat can end no other hold;
// if an earlier attempt may have revoked it, a not_held answer says so.
func (c *Client) RevokeRW(ctx context.Context, name string, token int64, reason string) error {
	return rwlockSeats.revoke(ctx, c, name, token, reason)
}

// RWHold is a read or write hold of a read/write lock: it renews itself
// until Release or until it is lost. Its methods are safe for concurrent
// use. It is kept by the same machinery as a *Lock (a hold with a token of
// its own), so the client's clock, renewals and the Client's event stream
// decide when it is lost, as Lock describes.
type RWHold struct{ s *seat }

// Name returns the read/write lock's name.
func (h *RWHold) Name() string { return h.s.hold.key.name }

// Token returns the hold's fencing token. Pass it with every access the
// lock protects; it never changes while the hold lasts.
func (h *RWHold) Token() int64 { return h.s.hold.key.token }

// Mode returns the hold's mode, Read or Write, as it was granted.
func (h *RWHold) Mode() string { return h.s.current().Mode }

// Info returns the hold as the latest acquire or renew described it.
func (h *RWHold) Info() RWHoldInfo { return h.s.current().rwHold() }

// Lost returns a channel that is closed as soon as the hold is known
// lost: the audit trail recorded its end (revoked, expired, its session
// expired, or released by its token from elsewhere), which the Client's
// event stream delivers within milliseconds; a renew was answered
// not_held; or the TTL ran out by the client's clock with no renew
// confirmed. Stop the protected work when it closes. Err says why. A
// Release does not close it, unless the release finds the hold lost.
func (h *RWHold) Lost() <-chan struct{} { return h.s.hold.lost }

// Done returns a channel that is closed when the hold is no longer kept:
// when it is lost, or released.
func (h *RWHold) Done() <-chan struct{} { return h.s.hold.done }

// Err returns why the hold was lost, a *LostError wrapping ErrLockLost and
// the cause (ErrNotHeld for a revoke, an expiry or a release elsewhere;
// ErrUnavailable…), or nil while it is held or if it was released cleanly.
func (h *RWHold) Err() error { return h.s.hold.lostErr() }

// YieldRequested returns a channel that delivers each request that this
// hold give way (YieldRW, of every hold or of this one's token), as
// Lock.YieldRequested does a lock's.
func (h *RWHold) YieldRequested() <-chan YieldRequest { return h.s.hold.yieldRequested() }

// Release stops the renewal and ends the hold with its token. It returns
// nil when it did, and an error wrapping ErrLockLost when the hold was
// lost before. Calling it again returns the same result. When it gets no
// answer (ErrUnavailable, ctx ended), another call tries again; without
// one, the lease runs out after its TTL.
func (h *RWHold) Release(ctx context.Context) error { return h.s.hold.release(ctx) }
