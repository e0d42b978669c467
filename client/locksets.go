package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/baton-dev/baton/problem"
)

// This file holds lock sets (docs/API.md, Lock sets): several locks
// granted together or not at all, every one with the same token. A
// *LockSet is kept by the same hold machinery as a *Lock (hold.go):
// renewed as one (POST /v1/locksets/renew), judged by the client's clock,
// and watched as each of its locks, since each is an ordinary lock that
// can end on its own; the end of any one of them loses the set.

// LockSetOptions say how to acquire a lock set. Every field is optional,
// and means what AcquireOptions' does; a set takes no lock-delay.
type LockSetOptions struct {
	// Owner labels every lock of the set; empty means the client's
	// address as the server sees it.
	Owner string
	// TTL is the lease the set's locks share, 2s to 24h; 0 means the
	// server's default (30s). It must be 0 with Session.
	TTL time.Duration
	// Wait queues the set for up to this long (at most 5m) in the queue
	// of every one of its locks at once; it is granted when it heads them
	// all. 0 fails at once with ErrHeld.
	Wait time.Duration
	// Session puts the set's locks in a session: they live and die with
	// it.
	Session string
	// MinHold is each lock of the set's at-least window (AcquireOptions.MinHold).
	MinHold time.Duration
	// Metadata is shown with each lock: at most 16 pairs, 4 KiB in all.
	Metadata map[string]string
}

// LockSetInfo describes a lock set held.
type LockSetInfo struct {
	// Names are the set's locks, in the order the acquire gave them.
	Names []string
	// Token is the fencing token of every lock of the set.
	Token int64
	// Locks are the set's locks, in the order of Names.
	Locks []LockInfo
}

type wireLockSet struct {
	Names []string   `json:"names"`
	Token int64      `json:"token"`
	Locks []wireLock `json:"locks"`
}

func (w *wireLockSet) info() *LockSetInfo {
	s := &LockSetInfo{Names: w.Names, Token: w.Token, Locks: make([]LockInfo, len(w.Locks))}
	for i := range w.Locks {
		s.Locks[i] = w.Locks[i].info()
	}
	return s
}

// setOp names a call (verb) on the set of names, as the server's errors
// do, so that Error says it once.
func setOp(verb string, names []string) string {
	return fmt.Sprintf("%s lock set %q", verb, strings.Join(names, ","))
}

// setBody is the body of a lock set's renew and release.
type setBody struct {
	Names []string `json:"names"`
	Token int64    `json:"token"`
}

// AcquireSet takes every lock of names (2 to 64 distinct lock names, in
// any order) in one step, all with one token, or none of them, waiting up
// to o.Wait; and returns the set held. It renews itself in the background
// until Release, at about a third of its TTL, as a *Lock does. Sets and
// single locks wait in one order, first come first served, so two sets
// never deadlock whatever order they name their locks in.
//
// It fails with ErrHeld when a lock is held by another and the wait runs
// out; nothing is taken then. The *Error's Holder is the first lock in
// the way, in the order of names, and its SetHolders are every one of
// them. It fails with ErrInvalid,
// Field "names", for fewer than 2 or more than 64 names, a repeated name
// or an invalid one.
//
// Each lock of the set is an ordinary lock, which an operator can revoke
// on its own: the set is then no longer whole, and Lost fires. Only work
// checked against Token is safe from a holder that lost a lock without
// knowing.
//
// AcquireSet is retried as Acquire is: not after a 503 or a broken
// connection, except in a session, where the server hands back a set the
// session already holds.
func (c *Client) AcquireSet(ctx context.Context, names []string, o LockSetOptions) (*LockSet, error) {
	op := setOp("acquire", names)
	body := struct {
		Names []string `json:"names"`
		seatRequest
	}{names, holdOptions(o).request(o.Wait, false)}
	// sent is when the request left, on the monotonic clock: whatever
	// lease the server grants, it grants after that.
	sent := time.Now()
	var w wireLockSet
	status, err := c.do(ctx, request{
		op: op, method: http.MethodPost, path: "/v1/locksets", body: body,
		idempotent: o.Session != "", timeout: c.timeout + max(o.Wait, 0),
	}, &w)
	if err != nil {
		return nil, setHeld(err)
	}
	s := newLockSet(c, w.info())
	g := grant{status: status, sent: sent, inSession: o.Session != ""}
	if len(s.info.Locks) > 0 {
		// The set's locks share one lease: any of them tells.
		l := s.info.Locks[0]
		g.ttl, g.left = l.TTL, l.ExpiresAt.Sub(l.AcquiredAt)
	}
	if err := s.hold.start(ctx, op, g); err != nil {
		return nil, err
	}
	return s, nil
}

// setHeld gives a lock set's lock_held the Holder that a lock's has: the
// first lock in the way.
func setHeld(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Code == string(problem.LockHeld) && e.Holder == nil && len(e.SetHolders) > 0 {
		h := e.SetHolders[0]
		e.Holder = &h
	}
	return err
}

// lock reads a hold in a lock set's lock_held: a lock.
func (w *wireHold) lock() LockInfo {
	return LockInfo{
		Name: w.Name, Owner: w.Owner, Token: w.Token, Session: w.Session, TTL: time.Duration(w.TTL),
		AcquiredAt: time.Time(w.AcquiredAt), ExpiresAt: time.Time(w.ExpiresAt), MinHold: time.Duration(w.MinHold), Metadata: w.Metadata,
	}
}

func newLockSet(c *Client, info *LockSetInfo) *LockSet {
	key := holdKey{thing{kindLockSet, strings.Join(info.Names, ",")}, info.Token}
	s := &LockSet{hold: newHold(c, key), info: *info}
	for _, n := range info.Names {
		s.hold.members = append(s.hold.members, holdKey{thing{kindLock, n}, info.Token})
	}
	s.hold.ops = holdOps{renew: s.renew, release: s.giveBack}
	return s
}

// RenewSet extends the lease of the lock set that token holds (in a
// session: the session's lease) and returns it with its new expiry. It
// returns ErrNotHeld or ErrTokenMismatch, naming the lock, when token no
// longer holds every lock of names. Retried. A *LockSet renews itself:
// this is for holders that keep the token only.
func (c *Client) RenewSet(ctx context.Context, names []string, token int64) (*LockSetInfo, error) {
	return c.renewSet(ctx, names, token, 0)
}

func (c *Client) renewSet(ctx context.Context, names []string, token int64, timeout time.Duration) (*LockSetInfo, error) {
	var w wireLockSet
	if _, err := c.do(ctx, request{
		op: setOp("renew", names), method: http.MethodPost, path: "/v1/locksets/renew",
		body: setBody{names, token}, idempotent: true, timeout: timeout,
	}, &w); err != nil {
		return nil, err
	}
	return w.info(), nil
}

// ReleaseSet ends every lock of names that token still holds, at once,
// each handed to its next waiter. It returns ErrNotHeld when none of them
// is held, and ErrTokenMismatch when they are held with another token.
// Retried, as Release is: if an earlier attempt may have released it, a
// not_held answer says so.
func (c *Client) ReleaseSet(ctx context.Context, names []string, token int64) error {
	_, err := c.do(ctx, request{
		op: setOp("release", names), method: http.MethodPost, path: "/v1/locksets/release",
		body: setBody{names, token}, idempotent: true,
	}, nil)
	return err
}

// LockSet is a held lock set that renews itself until Release or until
// it is lost. Its methods are safe for concurrent use. It is kept by the
// same machinery as a *Lock, so the client's clock, renewals and the
// Client's event stream decide when it is lost, as Lock describes; the
// set is lost as soon as any one of its locks is.
type LockSet struct {
	hold *hold

	mu   sync.Mutex
	info LockSetInfo
}

// renew is the hold's renewal: the set's, by token, recording the answer.
func (s *LockSet) renew(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	info, err := s.hold.c.renewSet(ctx, s.info.Names, s.hold.key.token, timeout)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range info.Locks {
		if info.Locks[i].Metadata == nil && i < len(s.info.Locks) {
			info.Locks[i].Metadata = s.info.Locks[i].Metadata
		}
	}
	s.info.Locks = info.Locks
	if len(info.Locks) == 0 {
		return 0, nil
	}
	return info.Locks[0].TTL, nil
}

func (s *LockSet) giveBack(ctx context.Context) error {
	return s.hold.c.ReleaseSet(ctx, s.info.Names, s.hold.key.token)
}

// Names returns the set's lock names, in the order the acquire gave them.
func (s *LockSet) Names() []string { return slices.Clone(s.info.Names) }

// Token returns the fencing token of every lock of the set. Pass it with
// every write the set protects; it never changes while the set lasts.
func (s *LockSet) Token() int64 { return s.hold.key.token }

// Locks returns the set's locks, in the order of Names, as the latest
// acquire or renew described them.
func (s *LockSet) Locks() []LockInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.info.Locks)
	for i := range out {
		out[i].Metadata = maps.Clone(out[i].Metadata)
		out[i].Set = slices.Clone(out[i].Set)
	}
	return out
}

// Lost returns a channel that is closed as soon as the set is known lost:
// the audit trail recorded the end of any of its locks (revoked, expired,
// its session expired, or released by the token from elsewhere), which
// the Client's event stream delivers within milliseconds; a renew was
// answered not_held or token_mismatch; or the TTL ran out by the client's
// clock with no renew confirmed. Stop the protected work when it closes.
// Err says why. A Release does not close it, unless the release finds the
// set lost.
func (s *LockSet) Lost() <-chan struct{} { return s.hold.lost }

// Done returns a channel that is closed when the set is no longer kept:
// when it is lost, or released.
func (s *LockSet) Done() <-chan struct{} { return s.hold.done }

// Err returns why the set was lost, a *LostError of Kind "lockset"
// wrapping ErrLockLost and the cause (ErrNotHeld for a lock's revoke,
// expiry or release elsewhere; ErrTokenMismatch; ErrUnavailable…), or nil
// while it is held or if it was released cleanly.
func (s *LockSet) Err() error { return s.hold.lostErr() }

// YieldRequested returns a channel that delivers each request that one
// of the set's locks give way (Yield of that lock; the request's Name
// says which), as Lock.YieldRequested does a lock's.
func (s *LockSet) YieldRequested() <-chan YieldRequest { return s.hold.yieldRequested() }

// Release stops the renewal and releases every lock of the set still
// held with its token, at once. It returns nil when it released the set,
// and an error wrapping ErrLockLost when the set was lost before (a lock
// of it ended on its own: the others are released all the same). Calling
// it again returns the same result. When it gets no answer
// (ErrUnavailable, ctx ended), another call tries again; without one, the
// lease runs out after its TTL.
func (s *LockSet) Release(ctx context.Context) error { return s.hold.release(ctx) }
