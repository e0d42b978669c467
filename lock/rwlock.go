package lock

import (
	"context"
	"errors"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
)

// A read/write lock is a thing with seats (internal/store/kinds.go): a writer's seat and
// readers' seats, each hold of the engine in its own, with its own
// token, lease (or session), audit records and expiry. Every acquire,
// reader's or writer's, waits in the lock's one queue, in order of
// arrival: a writer behind every entry older than its own, a reader
// behind the writers' (seats.go), and a direct acquire never passes
// either (acquireCmps). So a reader that comes while a writer waits
// queues behind it, and writers never starve; and the readers between
// two writers in line are granted together when the writer ahead of
// them releases: the release grants the first (internal/core/handover.go), the others
// take their seats at once. What a seat's acquire requires (seatKind.cmps):
//
//	a read hold    no writer's seat held or kept by its guard, and a reader's seat free
//	a write hold   no seat held at all, nor kept by a reader's guard
//
// A guard keeps a seat only inside the at-least window (min_hold) of the
// hold that ended in it.
//
// So a writer excludes every other hold, and a write hold's token, the
// revision of its grant, exceeds the token of every hold that ended
// before it. A read/write lock takes no lock-delay: the contract has
// none for it.

// RWRequest asks for a hold of a read/write lock.
type RWRequest struct {
	Name string
	Mode RWMode
	// Owner, TTL, Session, Wait and Metadata are as in AcquireRequest.
	Owner   string
	TTL     time.Duration
	Session string
	Wait    time.Duration
	// KeepPlace is AcquireRequest.KeepPlace.
	KeepPlace bool
	// MinHold is AcquireRequest.MinHold: a write hold's window keeps
	// every hold out, a read hold's the writers.
	MinHold  time.Duration
	Metadata map[string]string
}

// RWLock is a read/write lock's state: its holds, sorted by token (a
// write hold alone, or read holds), and its waiters in the order they
// will be served.
type RWLock struct {
	Name string
	// Mode is the holds': ModeWrite or ModeRead.
	Mode    RWMode
	Holders []*Lock
	Waiters []Waiter
}

// AcquireRW takes a hold of read/write lock req.Name in req.Mode, waiting
// in line for up to req.Wait, and returns it: a *Lock whose Token is the
// hold's own fencing token and Mode its mode. A write hold in the session
// that holds the write hold already is that hold (fresh false); every
// read acquire is a hold of its own. It answers a *HeldError
// (errors.Is(err, ErrHeld), Kind KindRWLock) with the holds in the way
// when the wait runs out, and leaves nothing behind when ctx ends.
func (e *Engine) AcquireRW(ctx context.Context, req RWRequest) (l *Lock, fresh bool, err error) {
	if err := store.CheckName("name", req.Name); err != nil {
		return nil, false, err
	}
	key := store.KeyName(KindRWLock, req.Name)
	l, fresh, err = e.acquire(ctx, AcquireRequest{
		Name: key, Owner: req.Owner, TTL: req.TTL, Session: req.Session, Wait: req.Wait, KeepPlace: req.KeepPlace, MinHold: req.MinHold,
		Metadata: req.Metadata,
	}, func(base core.LockKind) (core.HoldKind, error) { return newSeatKind(base, KindRWLock, 0, req.Mode) }, nil)
	if err != nil {
		var he *HeldError
		if errors.As(err, &he) {
			he.Kind, he.Holder = KindRWLock, nil
			if rw, rerr := e.RWLock(ctx, req.Name); rerr == nil {
				he.Holders = rw.Holders
			}
		}
		return nil, false, seatsErr("acquire", req.Name, err)
	}
	return l, fresh, nil
}

// RWLock returns the holds of name and its waiters (at most
// MaxListLimit of each), or ErrNotHeld when nothing holds it.
func (e *Engine) RWLock(ctx context.Context, name string) (*RWLock, error) {
	holders, waiters, err := e.heldState(ctx, KindRWLock, name)
	if err != nil {
		return nil, err
	}
	return &RWLock{Name: name, Mode: holders[0].Mode, Holders: holders, Waiters: waiters}, nil
}

// RWLocks returns the read/write locks that are held, sorted by name, a
// page at a time as Semaphores does (without their waiters).
func (e *Engine) RWLocks(ctx context.Context, o ListOptions) ([]*RWLock, string, error) {
	groups, next, err := e.seatPage(ctx, KindRWLock, o)
	if err != nil {
		return nil, "", err
	}
	page := make([]*RWLock, len(groups))
	for i, g := range groups {
		page[i] = &RWLock{Name: g.name, Mode: g.holders[0].Mode, Holders: g.holders, Waiters: []Waiter{}}
	}
	return page, next, nil
}

// RenewRW extends the lease of the hold token of read/write lock name.
func (e *Engine) RenewRW(ctx context.Context, name string, token int64) (*Lock, error) {
	return e.renewSeat(ctx, KindRWLock, name, token)
}

// ReleaseRW ends the hold token of read/write lock name, handing the lock
// on in the same txn when it can (internal/core/handover.go).
func (e *Engine) ReleaseRW(ctx context.Context, name string, token int64) error {
	return e.endSeat(ctx, KindRWLock, name, token, EventReleased, "")
}

// RevokeRW forcibly ends the hold token of read/write lock name (an
// operator's action), recorded as revoked with reason.
func (e *Engine) RevokeRW(ctx context.Context, name string, token int64, reason string) error {
	return e.endSeat(ctx, KindRWLock, name, token, EventRevoked, reason)
}
