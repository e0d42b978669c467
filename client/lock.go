package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"
)

// minTTL is etcd's lease floor and the server's minimum TTL. It stands in
// for a TTL the server failed to report: shorter is the safe side.
const minTTL = 2 * time.Second

// AcquireOptions say how to acquire a lock. Every field is optional.
type AcquireOptions struct {
	// Owner labels the hold for people and the audit trail; empty means
	// the client's address as the server sees it. Identity is the token.
	Owner string
	// TTL is the lease's TTL, 2s to 24h; 0 means the server's default
	// (30s). It must be 0 with Session: the session's TTL applies.
	TTL time.Duration
	// Wait queues for the lock for up to this long (at most 5m), first
	// come first served across the cluster; 0 fails at once with ErrHeld.
	Wait time.Duration
	// LockDelay: when this hold ends by expiry or revoke (not by a
	// release), nobody may take the lock for this long.
	LockDelay time.Duration
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
	info, status, sent, err := c.acquire(ctx, op, name, o)
	if err != nil {
		return nil, err
	}
	ttl := info.TTL
	if ttl <= 0 {
		ttl = minTTL
	}
	var deadline time.Time // zero: unknown
	switch {
	case o.Session == "":
		// The lock's own lease was granted with ttl after we sent the
		// request (a waiting acquire replaces a lease that ran down), so
		// it runs out no sooner than sent+ttl.
		deadline = sent.Add(ttl)
	case status == http.StatusCreated:
		// The session's lease is older than this request and the acquire
		// did not renew it. The server measured, on one clock, what was
		// left of it when the hold began, after we sent the request.
		deadline = sent.Add(min(ttl, info.ExpiresAt.Sub(info.AcquiredAt)))
	default:
		// 200: the session held the lock already, since an unknown time,
		// so nothing here says how much of its lease is left.
	}
	if deadline.IsZero() || time.Until(deadline) < 2*ttl/3 {
		// The first renew is due already (a long wait, a session lease
		// that ran down, a hold begun elsewhere): renew before handing
		// the lock over, so that it starts with a deadline we know.
		rsent := time.Now()
		ri, rerr := c.renew(ctx, name, info.Token, 0)
		switch {
		case rerr == nil:
			info.TTL, info.ExpiresAt = ri.TTL, ri.ExpiresAt
			if ri.TTL > 0 {
				ttl = ri.TTL
			}
			deadline = rsent.Add(ttl)
		case isLostAnswer(rerr):
			return nil, fmt.Errorf("%s: granted with token %d, then lost before its first renew: %w: %w", op, info.Token, ErrLockLost, rerr)
		case !deadline.IsZero() && time.Until(deadline) > 0:
			// Still ours for a while: the background renewal keeps trying.
		default:
			if o.Session == "" {
				// Not ours to keep without a known deadline; give it back
				// rather than let it sit until it expires.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
				_ = c.Release(rctx, name, info.Token)
				cancel()
			}
			return nil, fmt.Errorf("%s: granted with token %d, but its lease could not be renewed: %w", op, info.Token, rerr)
		}
	}
	return c.newLock(info, ttl, deadline), nil
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
	info, _, _, err := c.acquire(ctx, fmt.Sprintf("acquire %q", name), name, o)
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// acquire sends the acquire request. sent is when it left, on the
// monotonic clock: whatever lease the server grants, it grants after that.
func (c *Client) acquire(ctx context.Context, op, name string, o AcquireOptions) (info LockInfo, status int, sent time.Time, err error) {
	body := struct {
		Owner     string            `json:"owner,omitempty"`
		TTL       string            `json:"ttl,omitempty"`
		Session   string            `json:"session,omitempty"`
		Wait      string            `json:"wait,omitempty"`
		LockDelay string            `json:"lock_delay,omitempty"`
		Metadata  map[string]string `json:"metadata,omitempty"`
	}{Owner: o.Owner, Session: o.Session, Metadata: o.Metadata}
	if o.TTL != 0 {
		body.TTL = o.TTL.String()
	}
	if o.Wait != 0 {
		body.Wait = o.Wait.String()
	}
	if o.LockDelay != 0 {
		body.LockDelay = o.LockDelay.String()
	}
	sent = time.Now()
	var w wireLock
	status, err = c.do(ctx, request{
		op: op, method: http.MethodPost, path: "/v1/locks/" + pathEscape(name), body: body,
		// In a session the server hands a lock the session holds back
		// (200), so a repeat cannot take a second hold.
		idempotent: o.Session != "", timeout: c.timeout + max(o.Wait, 0),
	}, &w)
	if err != nil {
		return LockInfo{}, status, sent, err
	}
	return w.info(), status, sent, nil
}

// isLostAnswer reports whether a renew's error means the hold is over.
func isLostAnswer(err error) bool {
	return errors.Is(err, ErrNotHeld) || errors.Is(err, ErrTokenMismatch) || errors.Is(err, ErrSessionNotFound)
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
	c     *Client
	name  string
	token int64

	lost      chan struct{}
	done      chan struct{}
	stopRenew context.CancelFunc
	renewDone chan struct{}

	mu       sync.Mutex
	info     LockInfo
	ttl      time.Duration
	deadline time.Time // monotonic: never Round(0) or UTC it
	expiry   *time.Timer
	lastErr  error // the latest failed renew, for Err
	err      error // why the lock was lost
	finished bool  // done is closed

	// releaseMu serialises Release; released is set once a release got a
	// definite answer.
	releaseMu  sync.Mutex
	released   bool
	releaseErr error
}

func (c *Client) newLock(info LockInfo, ttl time.Duration, deadline time.Time) *Lock {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Lock{
		c: c, name: info.Name, token: info.Token, info: info, ttl: ttl, deadline: deadline,
		lost: make(chan struct{}), done: make(chan struct{}), stopRenew: cancel, renewDone: make(chan struct{}),
	}
	l.mu.Lock()
	// Under mu: the callback takes mu, so it cannot run before expiry is set.
	l.expiry = time.AfterFunc(time.Until(deadline), l.checkExpiry)
	l.mu.Unlock()
	go l.keepAlive(ctx)
	c.watch.register(l)
	return l
}

// Name returns the lock's name.
func (l *Lock) Name() string { return l.name }

// Token returns the fencing token. Pass it with every write the lock
// protects; it never changes while the hold lasts.
func (l *Lock) Token() int64 { return l.token }

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
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Done returns a channel that is closed when the lock is no longer kept:
// when it is lost, or released. Goroutines that watch a lock should wait
// on Done, or they outlive a clean Release.
func (l *Lock) Done() <-chan struct{} { return l.done }

// Err returns why the lock was lost, an error wrapping ErrLockLost (and
// the cause: ErrNotHeld, ErrTokenMismatch, ErrUnavailable…), or nil while
// it is held or if it was released cleanly.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Release stops the renewal and releases the lock with its token. It
// returns nil when it released the hold, and an error wrapping
// ErrLockLost when the lock was lost before (with ErrNotHeld or
// ErrTokenMismatch when the server says so). Calling it again returns the
// same result. When it gets no answer (ErrUnavailable, ctx ended), the
// outcome is unknown and another call tries again; without one, the lease
// runs out after its TTL, and Lost fires then.
func (l *Lock) Release(ctx context.Context) error {
	l.releaseMu.Lock()
	defer l.releaseMu.Unlock()
	if l.released {
		return l.releaseErr
	}
	// Renewal stops first: a renew racing the release could only make a
	// lost lock look held for a moment.
	l.stopRenew()
	<-l.renewDone
	// Before the release: its own released event is no loss.
	l.c.watch.unregister(l)
	// Even a lock the client judged lost is released: its clock errs
	// early, so the server may still hold it, and others should not wait
	// for the lease to run out.
	err := l.c.Release(ctx, l.name, l.token)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil && !isLostAnswer(err) {
		// No answer: another call may try again. A lock already lost
		// says so first, whatever became of the release.
		if l.err != nil {
			return fmt.Errorf("%w; release: %w", l.err, err)
		}
		return err
	}
	if err != nil {
		l.loseLocked(err)
	}
	l.released = true
	l.finishLocked()
	switch {
	case l.err != nil && err != nil && !errors.Is(l.err, err):
		l.releaseErr = fmt.Errorf("%w; release: %w", l.err, err)
	case l.err != nil:
		l.releaseErr = l.err
	}
	return l.releaseErr
}

// keepAlive renews the lock until ctx ends: at a third of the TTL, and
// again soon after a renew fails, until the deadline passes.
func (l *Lock) keepAlive(ctx context.Context) {
	defer close(l.renewDone)
	failures := 0
	for {
		l.mu.Lock()
		deadline, ttl := l.deadline, l.ttl
		l.mu.Unlock()
		wait := time.Until(deadline.Add(-2 * ttl / 3))
		if failures > 0 {
			wait = min(l.c.backoff(failures-1), ttl/6)
		}
		if sleep(ctx, wait) != nil {
			return
		}
		sent := time.Now()
		// A renew that answers after the deadline is of no use: the lock
		// is lost by then. Each attempt gets a third of the TTL, so a
		// hung node leaves time to try another.
		rctx, cancel := context.WithDeadline(ctx, deadline)
		info, err := l.c.renew(rctx, l.name, l.token, min(l.c.timeout, max(ttl/3, 100*time.Millisecond)))
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			failures = 0
			l.extend(sent, info)
		case isLostAnswer(err):
			l.lose(err) // the error names the renew
			return
		default:
			failures++
			l.mu.Lock()
			l.lastErr = err
			l.mu.Unlock()
		}
	}
}

// extend records a successful renew sent at sent.
func (l *Lock) extend(sent time.Time, info *LockInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished {
		return
	}
	if info.TTL > 0 {
		l.ttl = info.TTL
	}
	if d := sent.Add(l.ttl); d.After(l.deadline) {
		l.deadline = d
		l.expiry.Reset(time.Until(d))
	}
	md := l.info.Metadata
	l.info = *info
	if l.info.Metadata == nil {
		l.info.Metadata = md
	}
	l.lastErr = nil
}

// checkExpiry runs when the deadline timer fires.
func (l *Lock) checkExpiry() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished {
		return
	}
	if left := time.Until(l.deadline); left > 0 {
		l.expiry.Reset(left) // a renew moved the deadline as the timer fired
		return
	}
	cause := fmt.Errorf("its %s lease ran out by this client's clock with no renew confirmed", l.ttl)
	if l.lastErr != nil {
		cause = fmt.Errorf("%w; last renew: %w", cause, l.lastErr)
	}
	l.loseLocked(cause)
}

// LostError is why a *Lock was lost, as Lock.Err returns it. It matches
// ErrLockLost and whatever Cause matches (ErrNotHeld for a revoke, an
// expiry or a release elsewhere; ErrTokenMismatch; ErrUnavailable…).
type LostError struct {
	Name  string
	Token int64
	// Cause says how the loss became known: the audit trail's event, a
	// renew's answer, or the TTL running out by the client's clock.
	Cause error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("baton: lock %q (token %d) lost: %v", e.Name, e.Token, e.Cause)
}

func (e *LostError) Unwrap() []error { return []error{ErrLockLost, e.Cause} }

func (l *Lock) lose(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loseLocked(cause)
}

func (l *Lock) loseLocked(cause error) {
	if l.err != nil || l.finished {
		return
	}
	l.err = &LostError{Name: l.name, Token: l.token, Cause: cause}
	close(l.lost)
	l.finishLocked()
}

func (l *Lock) finishLocked() {
	if l.finished {
		return
	}
	l.finished = true
	close(l.done)
	l.expiry.Stop()
	l.stopRenew()
	l.c.watch.unregister(l)
}
