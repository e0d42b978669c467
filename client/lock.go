package client

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"
)

// AcquireOptions say how to acquire a lock. Every field is optional.
type AcquireOptions struct {
	// Owner labels the hold for people and the audit trail; empty means
	// the client's address as the server sees it. Identity is the token.
	Owner string
	// TTL is the lease's TTL, 2s to 24h; 0 means the server's default
	// (30s). It must be 0 with Session: the session's TTL applies.
	TTL time.Duration
	// Wait queues for the lock for up to this long, first come first
	// served across the cluster; 0 fails at once with ErrHeld. A Wait
	// over MaxRequestWait (5m), up to WaitForever, needs Session.
	Wait time.Duration
	// LockDelay: when this hold ends by expiry or revoke (not by a
	// release), nobody may take the lock for this long.
	LockDelay time.Duration
	// MinHold is the hold's at-least window, up to 24h: however early
	// the hold ends (a release, an expiry, a revoke), nobody takes it
	// again before its AcquiredAt plus MinHold. A job scheduled on many
	// hosts sets it to run once per window.
	MinHold time.Duration
	// Session puts the lock in a session: it lives and dies with it.
	Session string
	// Metadata is shown with the lock: at most 16 pairs, 4 KiB in all.
	Metadata map[string]string
}

// Acquire takes the lock name, waiting up to o.Wait for it, and returns it
// held. The lock renews itself in the background until Release, at about
// a third of its TTL. It fails with ErrHeld, with the holder in the
// *Error, when the wait runs out.
//
// The hold can still be lost, by expiry during a pause or a partition or
// by an operator's revoke: Lost tells. Only work checked against Token,
// by whatever the lock protects, is safe from a holder that lost its lock
// without knowing.
//
// Acquire is not retried after a 503 or a broken connection (it is when
// the connection could not be made at all): a repeat could take a second
// hold. The error then wraps ErrUnavailable and the outcome is unknown; a
// lock taken that way expires after its TTL. An acquire in a session is
// idempotent on the server (the session already holding the lock gets it
// back) and is retried.
func (c *Client) Acquire(ctx context.Context, name string, o AcquireOptions) (*Lock, error) {
	op := fmt.Sprintf("acquire %q", name)
	info, status, sent, err := c.acquireInLine(ctx, op, name, o)
	if err != nil {
		return nil, err
	}
	l := &Lock{hold: newHold(c, holdKey{thing{kindLock, info.Name}, info.Token}), info: info}
	l.hold.ops = holdOps{renew: l.renew, release: l.giveBack}
	g := grant{status: status, sent: sent, ttl: info.TTL, left: info.ExpiresAt.Sub(info.AcquiredAt), inSession: o.Session != ""}
	if err := l.hold.start(ctx, op, g); err != nil {
		return nil, err
	}
	return l, nil
}

// TryAcquire is Acquire without waiting: it fails at once with ErrHeld
// when the lock is held. o.Wait must be 0.
func (c *Client) TryAcquire(ctx context.Context, name string, o AcquireOptions) (*Lock, error) {
	if o.Wait != 0 {
		return nil, fmt.Errorf("try acquire %q: Wait must be 0; Acquire waits: %w", name, ErrInvalid)
	}
	return c.Acquire(ctx, name, o)
}

// AcquireOnce takes the lock as Acquire does, and returns it as the
// server describes it: nothing renews it. It lasts its TTL unless renewed
// with Renew (or, in a session, by the session's renewals) and ends with
// Release, both by its token. It is for holders that keep the token
// rather than a *Lock, such as a CLI whose invocations come and go. It is
// retried as Acquire is.
func (c *Client) AcquireOnce(ctx context.Context, name string, o AcquireOptions) (*LockInfo, error) {
	info, _, _, err := c.acquireInLine(ctx, fmt.Sprintf("acquire %q", name), name, o)
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// acquireInLine is acquire, over as many requests as o.Wait takes
// (inLine).
func (c *Client) acquireInLine(ctx context.Context, op, name string, o AcquireOptions) (info LockInfo, status int, sent time.Time, err error) {
	err = c.inLine(ctx, op, o.Session, o.Wait, func(ctx context.Context, wait time.Duration, keep bool) (err error) {
		info, status, sent, err = c.acquire(ctx, op, name, o, wait, keep)
		return err
	}, func() { _ = c.Release(context.WithoutCancel(ctx), name, info.Token) })
	return info, status, sent, err
}

// acquire sends the acquire request, which waits up to wait, and with
// keep keeps the session's place in line when that runs out. sent is
// when it left, on the monotonic clock: whatever lease the server grants,
// it grants after that.
func (c *Client) acquire(ctx context.Context, op, name string, o AcquireOptions, wait time.Duration, keep bool) (info LockInfo, status int, sent time.Time, err error) {
	body := struct {
		Owner     string            `json:"owner,omitempty"`
		TTL       string            `json:"ttl,omitempty"`
		Session   string            `json:"session,omitempty"`
		Wait      string            `json:"wait,omitempty"`
		KeepPlace bool              `json:"keep_place,omitempty"`
		LockDelay string            `json:"lock_delay,omitempty"`
		MinHold   string            `json:"min_hold,omitempty"`
		Metadata  map[string]string `json:"metadata,omitempty"`
	}{Owner: o.Owner, Session: o.Session, KeepPlace: keep, Metadata: o.Metadata}
	if o.TTL != 0 {
		body.TTL = o.TTL.String()
	}
	if wait != 0 {
		body.Wait = wait.String()
	}
	if o.LockDelay != 0 {
		body.LockDelay = o.LockDelay.String()
	}
	if o.MinHold != 0 {
		body.MinHold = o.MinHold.String()
	}
	sent = time.Now()
	var w wireLock
	status, err = c.do(ctx, request{
		op: op, method: http.MethodPost, path: "/v1/locks/" + pathEscape(name), body: body,
		// In a session the server hands a lock the session holds back
		// (200), so a repeat cannot take a second hold.
		idempotent: o.Session != "", timeout: c.timeout + max(wait, 0),
	}, &w)
	if err != nil {
		return LockInfo{}, status, sent, err
	}
	return w.info(), status, sent, nil
}

// Lock is a held lock that renews itself until Release or until it is lost.
// Its methods are safe for concurrent use.
//
// The client judges the lease by its own monotonic clock, erring on the
// side of "lost": a lease of TTL d whose latest successful renew (or the
// acquire) was sent at t is taken to end at t+d, although the server
// granted it a little later. Lost fires then unless a renew succeeded.
//
// For a lock in a session, renewing means renewing the lock with its token
// (POST /v1/locks/{name}/renew): the server renews the session's lease,
// and also checks that the token still holds the lock, so a revoke is
// noticed even while the session lives.
type Lock struct {
	hold *hold

	mu   sync.Mutex
	info LockInfo
}

// renew is the hold's renewal: by token, recording the answer.
func (l *Lock) renew(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	info, err := l.hold.c.renew(ctx, l.hold.key.name, l.hold.key.token, timeout)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	md := l.info.Metadata
	l.info = *info
	if l.info.Metadata == nil {
		l.info.Metadata = md
	}
	return info.TTL, nil
}

func (l *Lock) giveBack(ctx context.Context) error {
	return l.hold.c.Release(ctx, l.hold.key.name, l.hold.key.token)
}

// Name returns the lock's name.
func (l *Lock) Name() string { return l.hold.key.name }

// Token returns the fencing token. Pass it with every write the lock
// protects; it never changes while the hold lasts.
func (l *Lock) Token() int64 { return l.hold.key.token }

// Info returns the lock as the latest acquire or renew described it.
func (l *Lock) Info() LockInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := l.info
	i.Metadata = maps.Clone(i.Metadata)
	return i
}

// Lost returns a channel that is closed as soon as the lock is known lost:
// the audit trail recorded the hold's end (revoked, expired, its session
// expired, or released by its token from elsewhere), which the Client's
// event stream delivers within milliseconds; a renew was answered
// not_held or token_mismatch; or the TTL ran out by the client's clock
// with no renew confirmed (the cluster unreachable, renewals hanging).
// Stop the protected work when it closes. Err says why. A Release does
// not close it, unless the release finds the lock lost.
//
// The event stream only ever tells sooner: when it cannot connect, the
// renewals alone decide, at about a third of the TTL.
func (l *Lock) Lost() <-chan struct{} { return l.hold.lost }

// Done returns a channel that is closed when the lock is no longer kept:
// when it is lost, or released. Goroutines that watch a lock should wait
// on Done, or they outlive a clean Release.
func (l *Lock) Done() <-chan struct{} { return l.hold.done }

// Err returns why the lock was lost, a *LostError wrapping ErrLockLost
// (and the cause: ErrNotHeld, ErrTokenMismatch, ErrUnavailable…), or nil
// while it is held or if it was released cleanly.
func (l *Lock) Err() error { return l.hold.lostErr() }

// YieldRequested returns a channel that delivers each request that this
// hold give way (Yield, POST /v1/locks/{name}/yield), within
// milliseconds of it, from the Client's event stream; requests made since
// the grant and before the first call are delivered too. The lock stays
// held: release it if you choose to. Up to 16 requests wait unread;
// more are dropped. The channel is closed when the lock is no longer
// kept (lost or released).
func (l *Lock) YieldRequested() <-chan YieldRequest { return l.hold.yieldRequested() }

// Release stops the renewal and releases the lock with its token. It
// returns nil when it released the hold, and an error wrapping
// ErrLockLost when the lock was lost before (with ErrNotHeld or
// ErrTokenMismatch when the server says so). Calling it again returns the
// same result. When it gets no answer (ErrUnavailable, ctx ended), the
// outcome is unknown and another call tries again; without one, the lease
// runs out after its TTL, and Lost fires then.
func (l *Lock) Release(ctx context.Context) error { return l.hold.release(ctx) }
