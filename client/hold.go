package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// minTTL is etcd's lease floor and the server's minimum TTL. It stands in
// for a TTL the server failed to report: shorter is the safe side.
const minTTL = 2 * time.Second

// Kinds of hold, as the audit trail's events name them.
const (
	kindLock      = "lock"
	kindElection  = "election"
	kindSemaphore = "semaphore"
	kindRWLock    = "rwlock"
	// kindLockSet names a lock set's hold for LostError; its events are
	// its locks' (kind lock).
	kindLockSet = "lockset"
)

// hold is what every hold a Client keeps alive shares, whatever its kind
// (a *Lock, a *LockSet, a *Leadership, a *Permit, an *RWHold): the background renewal, the deadline by the
// client's own clock, registration with the Client's event stream, and
// how the hold ends (lost or given back). What differs per kind is in
// ops: how it is renewed and released, by its token.
//
// The client judges the lease by its own monotonic clock, erring on the
// side of "lost": a lease of TTL d whose latest successful renew (or the
// grant) was sent at t is taken to end at t+d, although the server
// granted it a little later. Lost fires then unless a renew succeeded.
type hold struct {
	c   *Client
	key holdKey // kind, name and token: what the event stream reports
	// members are the keys the event stream reports the hold's ends
	// under when they are not key: a lock set's locks, whose key names
	// the set. Empty for every other hold.
	members []holdKey
	ops     holdOps

	lost      chan struct{}
	done      chan struct{}
	stopRenew context.CancelFunc
	renewDone chan struct{}

	mu       sync.Mutex
	ttl      time.Duration
	deadline time.Time // monotonic: never Round(0) or UTC it
	expiry   *time.Timer
	lastErr  error // the latest failed renew, for Err
	err      error // why the hold was lost
	finished bool  // done is closed
	// yields is the channel of YieldRequested, made by its first call
	// and closed with done; heardYields are the requests heard before
	// it (yield.go).
	yields      chan YieldRequest
	heardYields []YieldRequest

	// releaseMu serialises release; released is set once a release got
	// a definite answer.
	releaseMu  sync.Mutex
	released   bool
	releaseErr error
}

// holdOps are the calls by which one kind of hold is kept.
type holdOps struct {
	// renew renews the hold by its token, each attempt bounded by
	// timeout (0: the client's), records what the answer says, and
	// returns the TTL it reports (0: none).
	renew func(ctx context.Context, timeout time.Duration) (time.Duration, error)
	// release gives the hold back by its token.
	release func(ctx context.Context) error
}

// grant is what the answer that granted a hold says about its lease.
type grant struct {
	status    int           // 201: granted now; 200: the session held it already
	sent      time.Time     // when the request left, on the monotonic clock
	ttl       time.Duration // as the server reported it (0: unknown)
	left      time.Duration // expires_at - acquired_at, by the server's clock
	inSession bool
}

func newHold(c *Client, key holdKey) *hold {
	return &hold{c: c, key: key, lost: make(chan struct{}), done: make(chan struct{}), renewDone: make(chan struct{})}
}

// watched are the keys the event stream reports h's ends under.
func (h *hold) watched() []holdKey {
	if len(h.members) > 0 {
		return h.members
	}
	return []holdKey{h.key}
}

// start keeps h alive from its grant g on: it works out the lease's
// deadline, renews at once when the first renew is due already, and then
// starts the renewal, the expiry timer and the watch. op names the call
// that granted it, for errors. On error nothing runs, and a hold with a
// lease of its own whose deadline is unknown has been given back.
func (h *hold) start(ctx context.Context, op string, g grant) error {
	ttl := g.ttl
	if ttl <= 0 {
		ttl = minTTL
	}
	var deadline time.Time // zero: unknown
	switch {
	case !g.inSession:
		// The hold's own lease was granted with ttl after we sent the
		// request (a waiting grant replaces a lease that ran down), so
		// it runs out no sooner than sent+ttl.
		deadline = g.sent.Add(ttl)
	case g.status == http.StatusCreated:
		// The session's lease is older than this request and the grant
		// did not renew it. The server measured, on one clock, what was
		// left of it when the hold began, after we sent the request.
		deadline = g.sent.Add(min(ttl, g.left))
	default:
		// 200: the session held it already, since an unknown time, so
		// nothing here says how much of its lease is left.
	}
	if deadline.IsZero() || time.Until(deadline) < 2*ttl/3 {
		// The first renew is due already (a long wait, a session lease
		// that ran down, a hold begun elsewhere): renew before handing
		// the hold over, so that it starts with a deadline we know.
		rsent := time.Now()
		rttl, rerr := h.ops.renew(ctx, 0)
		switch {
		case rerr == nil:
			if rttl > 0 {
				ttl = rttl
			}
			deadline = rsent.Add(ttl)
		case isLostAnswer(rerr):
			return fmt.Errorf("%s: granted with token %d, then lost before its first renew: %w: %w", op, h.key.token, ErrLockLost, rerr)
		case !deadline.IsZero() && time.Until(deadline) > 0:
			// Still ours for a while: the background renewal keeps trying.
		default:
			if !g.inSession {
				// Not ours to keep without a known deadline; give it back
				// rather than let it sit until it expires.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.c.timeout)
				_ = h.ops.release(rctx)
				cancel()
			}
			return fmt.Errorf("%s: granted with token %d, but its lease could not be renewed: %w", op, h.key.token, rerr)
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	h.stopRenew = cancel
	h.mu.Lock()
	h.ttl, h.deadline = ttl, deadline
	// Under mu: the callback takes mu, so it cannot run before expiry is set.
	h.expiry = time.AfterFunc(time.Until(deadline), h.checkExpiry)
	h.mu.Unlock()
	go h.keepAlive(rctx)
	h.c.watch.register(h)
	return nil
}

// isLostAnswer reports whether a renew's error means the hold is over.
func isLostAnswer(err error) bool {
	return errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNoLeader) || errors.Is(err, ErrTokenMismatch) || errors.Is(err, ErrSessionNotFound)
}

// lostErr returns why the hold was lost, or nil.
func (h *hold) lostErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// release stops the renewal and gives the hold back with its token. It
// returns nil when it did, and an error wrapping ErrLockLost when the hold
// was lost before. Calling it again returns the same result. When it gets
// no answer (ErrUnavailable, ctx ended), another call tries again.
func (h *hold) release(ctx context.Context) error {
	h.releaseMu.Lock()
	defer h.releaseMu.Unlock()
	if h.released {
		return h.releaseErr
	}
	// Renewal stops first: a renew racing the release could only make a
	// lost hold look held for a moment.
	h.stopRenew()
	<-h.renewDone
	// Before the release: its own end's event is no loss.
	h.c.watch.unregister(h)
	// Even a hold the client judged lost is given back: its clock errs
	// early, so the server may still have it, and others should not wait
	// for the lease to run out.
	err := h.ops.release(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil && !isLostAnswer(err) {
		// No answer: another call may try again. A hold already lost
		// says so first, whatever became of the release.
		if h.err != nil {
			return fmt.Errorf("%w; release: %w", h.err, err)
		}
		return err
	}
	if err != nil {
		h.loseLocked(err)
	}
	h.released = true
	h.finishLocked()
	switch {
	case h.err != nil && err != nil && !errors.Is(h.err, err):
		h.releaseErr = fmt.Errorf("%w; release: %w", h.err, err)
	case h.err != nil:
		h.releaseErr = h.err
	}
	return h.releaseErr
}

// handOn ends the hold by call, a request that hands it to another
// (a leadership's transfer), as release ends it by its release: the
// renewal and the watch stop first, so its own end is no loss. A call
// refused with an answer that says the hold goes on (ErrCandidateNotWaiting,
// ErrElectionHeld), or with no answer, resumes them: if the hold did
// change hands unseen, the next renew finds it lost.
func (h *hold) handOn(ctx context.Context, call func(ctx context.Context) error) error {
	h.releaseMu.Lock()
	defer h.releaseMu.Unlock()
	if h.released {
		if h.releaseErr != nil {
			return h.releaseErr
		}
		return fmt.Errorf("%s %q (token %d) was given up already: %w", h.key.kind, h.key.name, h.key.token, ErrLockLost)
	}
	h.stopRenew()
	<-h.renewDone
	h.c.watch.unregister(h)
	err := call(ctx)
	h.mu.Lock()
	lost := err != nil && isLostAnswer(err)
	if err == nil || lost {
		defer h.mu.Unlock()
		if lost {
			h.loseLocked(err)
		}
		h.released = true
		h.finishLocked()
		if h.err != nil {
			h.releaseErr = h.err
			return h.err
		}
		return nil
	}
	h.mu.Unlock()
	rctx, cancel := context.WithCancel(context.Background())
	h.stopRenew, h.renewDone = cancel, make(chan struct{})
	go h.keepAlive(rctx)
	h.c.watch.register(h)
	return err
}

// keepAlive renews the hold until ctx ends: at a third of the TTL, and
// again soon after a renew fails, until the deadline passes.
func (h *hold) keepAlive(ctx context.Context) {
	defer close(h.renewDone)
	failures := 0
	for {
		h.mu.Lock()
		deadline, ttl := h.deadline, h.ttl
		h.mu.Unlock()
		wait := time.Until(deadline.Add(-2 * ttl / 3))
		if failures > 0 {
			wait = min(h.c.backoff(failures-1), ttl/6)
		}
		if sleep(ctx, wait) != nil {
			return
		}
		sent := time.Now()
		// A renew that answers after the deadline is of no use: the hold
		// is lost by then. Each attempt gets a third of the TTL, so a
		// hung node leaves time to try another.
		rctx, cancel := context.WithDeadline(ctx, deadline)
		rttl, err := h.ops.renew(rctx, min(h.c.timeout, max(ttl/3, 100*time.Millisecond)))
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			failures = 0
			h.extend(sent, rttl)
		case isLostAnswer(err):
			h.lose(err) // the error names the renew
			return
		default:
			failures++
			h.mu.Lock()
			h.lastErr = err
			h.mu.Unlock()
		}
	}
}

// extend records a successful renew sent at sent, which reported ttl.
func (h *hold) extend(sent time.Time, ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.finished {
		return
	}
	if ttl > 0 {
		h.ttl = ttl
	}
	if d := sent.Add(h.ttl); d.After(h.deadline) {
		h.deadline = d
		h.expiry.Reset(time.Until(d))
	}
	h.lastErr = nil
}

// checkExpiry runs when the deadline timer fires.
func (h *hold) checkExpiry() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.finished {
		return
	}
	if left := time.Until(h.deadline); left > 0 {
		h.expiry.Reset(left) // a renew moved the deadline as the timer fired
		return
	}
	cause := fmt.Errorf("its %s lease ran out by this client's clock with no renew confirmed", h.ttl)
	if h.lastErr != nil {
		cause = fmt.Errorf("%w; last renew: %w", cause, h.lastErr)
	}
	h.loseLocked(cause)
}

// LostError is why a *Lock, a *LockSet, a *Leadership, a *Permit or an
// *RWHold was lost, as their Err returns it. It matches ErrLockLost and
// whatever Cause matches (ErrNotHeld for a lock's, a lock set's lock's,
// a permit's or an rwlock hold's revoke, expiry or release elsewhere,
// ErrNoLeader for a leadership's; ErrTokenMismatch; ErrUnavailable…).
type LostError struct {
	// Kind is "lock", "lockset", "election", "semaphore" or "rwlock".
	Kind string
	// Name is the thing's name; a lock set's is its names joined by
	// commas, which no lock name contains.
	Name  string
	Token int64
	// Cause says how the loss became known: the audit trail's event, a
	// renew's answer, or the TTL running out by the client's clock.
	Cause error
}

func (e *LostError) Error() string {
	switch e.Kind {
	case kindElection:
		return fmt.Sprintf("baton: leadership of %q (token %d) lost: %v", e.Name, e.Token, e.Cause)
	case kindSemaphore:
		return fmt.Sprintf("baton: permit of %q (token %d) lost: %v", e.Name, e.Token, e.Cause)
	case kindRWLock:
		return fmt.Sprintf("baton: hold of rwlock %q (token %d) lost: %v", e.Name, e.Token, e.Cause)
	case kindLockSet:
		return fmt.Sprintf("baton: lock set %q (token %d) lost: %v", e.Name, e.Token, e.Cause)
	}
	return fmt.Sprintf("baton: lock %q (token %d) lost: %v", e.Name, e.Token, e.Cause)
}

func (e *LostError) Unwrap() []error { return []error{ErrLockLost, e.Cause} }

func (h *hold) lose(cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loseLocked(cause)
}

func (h *hold) loseLocked(cause error) {
	if h.err != nil || h.finished {
		return
	}
	h.err = &LostError{Kind: h.key.kind, Name: h.key.name, Token: h.key.token, Cause: cause}
	close(h.lost)
	h.finishLocked()
}

func (h *hold) finishLocked() {
	if h.finished {
		return
	}
	h.finished = true
	close(h.done)
	if h.yields != nil {
		close(h.yields)
	}
	h.expiry.Stop()
	h.stopRenew()
	h.c.watch.unregister(h)
}
