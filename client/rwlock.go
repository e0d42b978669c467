package client

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// This file holds read/write locks: an *RWHold is kept by the same hold
// machinery as a *Lock and a *Permit (hold.go), and the plain calls are
// retried as theirs are: reads, renew and release name the hold's token
// and are retried; an acquire is not, since every read request takes a
// hold of its own.

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
	// Wait waits in line for up to this long (at most 5m), strictly first
	// come first served across the cluster: a reader behind a waiting
	// writer waits too. 0 fails at once with ErrHeld.
	Wait time.Duration
	// Session puts the hold in a session: it lives and dies with it.
	Session string
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
	Metadata  map[string]string
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

func (w *wirePermit) rwInfo() RWHoldInfo {
	return RWHoldInfo{
		Name: w.Name, Mode: w.Mode, Owner: w.Owner, Token: w.Token, Session: w.Session, TTL: time.Duration(w.TTL),
		AcquiredAt: time.Time(w.AcquiredAt), ExpiresAt: time.Time(w.ExpiresAt), Metadata: w.Metadata,
	}
}

func rwHoldInfos(ws []wirePermit) []RWHoldInfo {
	if ws == nil {
		return nil
	}
	out := make([]RWHoldInfo, len(ws))
	for i := range ws {
		out[i] = ws[i].rwInfo()
	}
	return out
}

type wireRWLock struct {
	Name    string       `json:"name"`
	Mode    string       `json:"mode"`
	Holders []wirePermit `json:"holders"`
	Waiters []wireWaiter `json:"waiters"`
}

func (w *wireRWLock) info() RWLockInfo {
	rw := RWLockInfo{Name: w.Name, Mode: w.Mode, Holders: rwHoldInfos(w.Holders)}
	for _, x := range w.Waiters {
		rw.Waiters = append(rw.Waiters, x.waiter())
	}
	return rw
}

func rwlockPath(name string) string { return "/v1/rwlocks/" + pathEscape(name) }

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
	op := fmt.Sprintf("acquire a %s hold of %q", mode, name)
	info, status, sent, err := c.acquireRW(ctx, op, name, mode, o)
	if err != nil {
		return nil, err
	}
	h := &RWHold{hold: newHold(c, holdKey{thing{kindRWLock, info.Name}, info.Token}), info: info}
	h.hold.ops = holdOps{renew: h.renew, release: h.giveBack}
	g := grant{status: status, sent: sent, ttl: info.TTL, left: info.ExpiresAt.Sub(info.AcquiredAt), inSession: o.Session != ""}
	if err := h.hold.start(ctx, op, g); err != nil {
		return nil, err
	}
	return h, nil
}

// acquireRW sends the acquire request. sent is when it left, on the
// monotonic clock: whatever lease the server grants, it grants after that.
func (c *Client) acquireRW(ctx context.Context, op, name, mode string, o RWOptions) (info RWHoldInfo, status int, sent time.Time, err error) {
	body := struct {
		Mode     string            `json:"mode"`
		Owner    string            `json:"owner,omitempty"`
		TTL      string            `json:"ttl,omitempty"`
		Session  string            `json:"session,omitempty"`
		Wait     string            `json:"wait,omitempty"`
		Metadata map[string]string `json:"metadata,omitempty"`
	}{Mode: mode, Owner: o.Owner, Session: o.Session, Metadata: o.Metadata}
	if o.TTL != 0 {
		body.TTL = o.TTL.String()
	}
	if o.Wait != 0 {
		body.Wait = o.Wait.String()
	}
	sent = time.Now()
	var w wirePermit
	status, err = c.do(ctx, request{
		op: op, method: http.MethodPost, path: rwlockPath(name), body: body, timeout: c.timeout + max(o.Wait, 0),
	}, &w)
	if err != nil {
		return RWHoldInfo{}, status, sent, err
	}
	return w.rwInfo(), status, sent, nil
}

// RWLock returns the read/write lock's mode, its holds and its waiters in
// the order they will be served. It returns ErrNotHeld when nothing holds
// it. Retried.
func (c *Client) RWLock(ctx context.Context, name string) (*RWLockInfo, error) {
	var w wireRWLock
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("get rwlock %q", name), method: http.MethodGet, path: rwlockPath(name), idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	rw := w.info()
	return &rw, nil
}

// RWLocks returns a page of the read/write locks that are held, sorted by
// name, with their holds (not their waiters), and the cursor of the next
// page, empty on the last. A page may hold fewer locks than o.Limit (the
// server bounds the holds it reads). Retried.
func (c *Client) RWLocks(ctx context.Context, o ListOptions) ([]RWLockInfo, string, error) {
	var w struct {
		RWLocks    []wireRWLock `json:"rwlocks"`
		NextCursor string       `json:"next_cursor"`
	}
	if _, err := c.do(ctx, request{op: "list rwlocks", method: http.MethodGet, path: "/v1/rwlocks", query: o.query(), idempotent: true}, &w); err != nil {
		return nil, "", err
	}
	out := make([]RWLockInfo, len(w.RWLocks))
	for i := range w.RWLocks {
		out[i] = w.RWLocks[i].info()
	}
	return out, w.NextCursor, nil
}

// RenewRW extends the lease of the hold that token is (in a session: the
// session's lease) and returns it with its new expiry. It returns
// ErrNotHeld when no hold of name has that token. Retried. An *RWHold
// renews itself: this is for holders that keep the token only.
func (c *Client) RenewRW(ctx context.Context, name string, token int64) (*RWHoldInfo, error) {
	return c.renewRW(ctx, name, token, 0)
}

func (c *Client) renewRW(ctx context.Context, name string, token int64, timeout time.Duration) (*RWHoldInfo, error) {
	var w wirePermit
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("renew rwlock %q hold %d", name, token), method: http.MethodPost, path: rwlockPath(name) + "/renew",
		body: struct {
			Token int64 `json:"token"`
		}{token}, idempotent: true, timeout: timeout,
	}, &w); err != nil {
		return nil, err
	}
	h := w.rwInfo()
	return &h, nil
}

// ReleaseRW ends the hold that token is; the waiters at the head of the
// queue get the lock when it is free for them. It returns ErrNotHeld when
// no hold of name has that token. Retried, as Release is: if an earlier
// attempt may have released it, a not_held answer says so.
func (c *Client) ReleaseRW(ctx context.Context, name string, token int64) error {
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("release rwlock %q hold %d", name, token), method: http.MethodDelete, path: rwlockPath(name),
		query: url.Values{"token": {strconv.FormatInt(token, 10)}}, idempotent: true,
	}, nil)
	return err
}

// RevokeRW ends the hold that token is (an operator's action), recorded
// with reason. It returns ErrNotHeld when no hold of name has that token.
// Retried: it names the hold's token, so a repeat can end no other hold;
// if an earlier attempt may have revoked it, a not_held answer says so.
func (c *Client) RevokeRW(ctx context.Context, name string, token int64, reason string) error {
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("revoke rwlock %q hold %d", name, token), method: http.MethodPost, path: rwlockPath(name) + "/revoke",
		body: struct {
			Token  int64  `json:"token"`
			Reason string `json:"reason,omitempty"`
		}{token, reason}, idempotent: true,
	}, nil)
	return err
}

// RWHold is a read or write hold of a read/write lock: it renews itself
// until Release or until it is lost. Its methods are safe for concurrent
// use. It is kept by the same machinery as a *Lock (a hold with a token of
// its own), so the client's clock, renewals and the Client's event stream
// decide when it is lost, as Lock describes.
type RWHold struct {
	hold *hold

	mu   sync.Mutex
	info RWHoldInfo
}

// renew is the hold's renewal: by token, recording the answer.
func (h *RWHold) renew(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	info, err := h.hold.c.renewRW(ctx, h.hold.key.name, h.hold.key.token, timeout)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	md, mode := h.info.Metadata, h.info.Mode
	h.info = *info
	if h.info.Metadata == nil {
		h.info.Metadata = md
	}
	if h.info.Mode == "" {
		h.info.Mode = mode
	}
	return info.TTL, nil
}

func (h *RWHold) giveBack(ctx context.Context) error {
	return h.hold.c.ReleaseRW(ctx, h.hold.key.name, h.hold.key.token)
}

// Name returns the read/write lock's name.
func (h *RWHold) Name() string { return h.hold.key.name }

// Token returns the hold's fencing token. Pass it with every access the
// lock protects; it never changes while the hold lasts.
func (h *RWHold) Token() int64 { return h.hold.key.token }

// Mode returns the hold's mode, Read or Write, as it was granted.
func (h *RWHold) Mode() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.info.Mode
}

// Info returns the hold as the latest acquire or renew described it.
func (h *RWHold) Info() RWHoldInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := h.info
	i.Metadata = maps.Clone(i.Metadata)
	return i
}

// Lost returns a channel that is closed as soon as the hold is known
// lost: the audit trail recorded its end (revoked, expired, its session
// expired, or released by its token from elsewhere), which the Client's
// event stream delivers within milliseconds; a renew was answered
// not_held; or the TTL ran out by the client's clock with no renew
// confirmed. Stop the protected work when it closes. Err says why. A
// Release does not close it, unless the release finds the hold lost.
func (h *RWHold) Lost() <-chan struct{} { return h.hold.lost }

// Done returns a channel that is closed when the hold is no longer kept:
// when it is lost, or released.
func (h *RWHold) Done() <-chan struct{} { return h.hold.done }

// Err returns why the hold was lost, a *LostError wrapping ErrLockLost and
// the cause (ErrNotHeld for a revoke, an expiry or a release elsewhere;
// ErrUnavailable…), or nil while it is held or if it was released cleanly.
func (h *RWHold) Err() error { return h.hold.lostErr() }

// Release stops the renewal and ends the hold with its token. It returns
// nil when it did, and an error wrapping ErrLockLost when the hold was
// lost before. Calling it again returns the same result. When it gets no
// answer (ErrUnavailable, ctx ended), another call tries again; without
// one, the lease runs out after its TTL.
func (h *RWHold) Release(ctx context.Context) error { return h.hold.release(ctx) }
