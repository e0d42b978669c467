package lock

import (
	"context"
	"errors"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
)

// A semaphore is a thing with seats (internal/store/kinds.go): each permit is a hold of
// the engine in a seat of its own, with its own token, lease (or
// session), audit records and expiry, and its waiters share the
// semaphore's queue, so a release hands its seat to the oldest waiter in
// its own txn and everything a lock has (sessions, the recorder, the
// trail, batching, the waiter cap) a semaphore has too. What it adds:
//
//	seats/<key>   the limit its permits are held under, put by every grant (seats.go says when it may change)
//
// A semaphore takes no lock-delay: the contract has none for it. A
// permit with an at-least window (min_hold) keeps its seat's guard, as a
// lock does: an acquire picks no seat a guard keeps (seats.go).

// PermitRequest asks for one of a semaphore's permits.
type PermitRequest struct {
	Name  string
	Owner string
	// Limit is how many permits the semaphore has; it must be the limit
	// its permits are held under, if any are.
	Limit int
	// TTL, Session, Wait and Metadata are as in AcquireRequest: the
	// permit is a hold of the engine.
	TTL     time.Duration
	Session string
	Wait    time.Duration
	// KeepPlace is AcquireRequest.KeepPlace.
	KeepPlace bool
	// MinHold is AcquireRequest.MinHold: the permit's seat stays taken
	// until its window ends.
	MinHold  time.Duration
	Metadata map[string]string
}

// Semaphore is a semaphore's state: its permits held, sorted by token,
// and its waiters in the order they will be served.
type Semaphore struct {
	Name    string
	Limit   int
	Holders []*Lock
	Waiters []Waiter
}

// AcquirePermit takes one of the permits of semaphore req.Name, waiting
// in line for up to req.Wait (first come, first served across every
// node), and returns it: a *Lock whose Token is the permit's own fencing
// token and Limit the semaphore's. Each call takes a permit of its own,
// in a session too. It answers a *HeldError (errors.Is(err,
// ErrSemaphoreFull)) with the permits held when none is free in time, a
// *LimitMismatchError when permits are held under another
// limit, and leaves nothing behind when ctx ends.
func (e *Engine) AcquirePermit(ctx context.Context, req PermitRequest) (*Lock, error) {
	if err := store.CheckName("name", req.Name); err != nil {
		return nil, err
	}
	key := store.KeyName(KindSemaphore, req.Name)
	l, _, err := e.acquire(ctx, AcquireRequest{
		Name: key, Owner: req.Owner, TTL: req.TTL, Session: req.Session, Wait: req.Wait, KeepPlace: req.KeepPlace, MinHold: req.MinHold,
		Metadata: req.Metadata,
	}, func(base core.LockKind) (core.HoldKind, error) {
		return newSeatKind(base, KindSemaphore, req.Limit, "")
	}, nil)
	if err != nil {
		var he *HeldError
		if errors.As(err, &he) {
			he.Kind, he.Holder = KindSemaphore, nil
			if s, serr := e.Semaphore(ctx, req.Name); serr == nil {
				he.Holders = s.Holders
			}
		}
		return nil, seatsErr("acquire a permit of", req.Name, err)
	}
	return l, nil
}

// Semaphore returns the permits of name and its waiters (at most
// MaxListLimit of each), or ErrNotHeld when no permit is held.
func (e *Engine) Semaphore(ctx context.Context, name string) (*Semaphore, error) {
	holders, waiters, err := e.heldState(ctx, KindSemaphore, name)
	if err != nil {
		return nil, err
	}
	return semaphoreOf(name, holders, waiters), nil
}

// semaphoreOf is the semaphore name with holders. Its limit is its
// permits': every seat held was granted under the stored limit (seats.go).
func semaphoreOf(name string, holders []*Lock, waiters []Waiter) *Semaphore {
	s := &Semaphore{Name: name, Holders: holders, Waiters: waiters}
	for _, l := range holders {
		s.Limit = max(s.Limit, l.Limit)
	}
	return s
}

// Semaphores returns the semaphores that have permits held, sorted by
// name, a page at a time as List does for locks (without their waiters).
func (e *Engine) Semaphores(ctx context.Context, o ListOptions) ([]*Semaphore, string, error) {
	groups, next, err := e.seatPage(ctx, KindSemaphore, o)
	if err != nil {
		return nil, "", err
	}
	page := make([]*Semaphore, len(groups))
	for i, g := range groups {
		page[i] = semaphoreOf(g.name, g.holders, []Waiter{})
	}
	return page, next, nil
}

// RenewPermit extends the lease of the permit token of semaphore name, as
// Renew does a lock's.
func (e *Engine) RenewPermit(ctx context.Context, name string, token int64) (*Lock, error) {
	return e.renewSeat(ctx, KindSemaphore, name, token)
}

// ReleasePermit gives the permit token of semaphore name back, handing
// its seat to the oldest waiter in the same txn. ErrNotHeld when token
// holds no permit of name.
func (e *Engine) ReleasePermit(ctx context.Context, name string, token int64) error {
	return e.endSeat(ctx, KindSemaphore, name, token, EventReleased, "")
}

// RevokePermit forcibly ends the permit token of semaphore name (an
// operator's action), recorded as revoked with reason.
func (e *Engine) RevokePermit(ctx context.Context, name string, token int64, reason string) error {
	return e.endSeat(ctx, KindSemaphore, name, token, EventRevoked, reason)
}
