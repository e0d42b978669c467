package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/caps"
	"github.com/baton-dev/baton/lock/internal/core"
)

// NoSpace reports whether etcd's NOSPACE alarm is raised: from the
// embedded member's own alarm store (Config.Embedded), else as
// this engine last saw it (a write refused for space, or the background
// check of the alarm list, caps.Keep).
func (e *Engine) NoSpace() bool { return e.core.Etcd.NoSpace() }

// space is the engine's bookkeeping for Config's storage caps: one tally
// per capped prefix (package caps; nil where the cap is off).
type space struct {
	locks    *caps.Tally // MaxLocks, over locks/
	sessions *caps.Tally // MaxSessions, over sessions/
	fenced   *caps.Tally // MaxFencedValues, over fencemax/
}

// mayHaveCreated reports whether a create that failed with err may have
// happened anyway: a tally counts it (caps.MayHaveCreated).
func mayHaveCreated(err error) bool { return caps.MayHaveCreated(err) }

// newSpace makes a tally for each cap that is on.
func (e *Engine) newSpace() {
	e.space.locks = caps.New(e.core.Cli, e.core.Etcd, e.core.Keys.Locks(), e.core.Cfg.MaxLocks)
	e.space.sessions = caps.New(e.core.Cli, e.core.Etcd, e.core.Keys.Sessions(), e.core.Cfg.MaxSessions)
	e.space.fenced = caps.New(e.core.Cli, e.core.Etcd, e.core.Cfg.Prefix+"fencemax/", e.core.Cfg.MaxFencedValues)
}

// runSpace keeps the tallies fresh and, over external etcd, the alarm as
// etcd lists it, until the engine closes.
func (e *Engine) runSpace() {
	caps.Keep(e.core.Stop, e.core.Cli, e.core.Etcd, e.core.Cfg.CountRefresh, []*caps.Tally{e.space.locks, e.space.sessions, e.space.fenced}, e.core.Cfg.Embedded == nil)
}

// Limit errors of the storage caps.

func (e *Engine) tooManyLocks() error {
	return &LimitError{
		// A slot freed anywhere is seen within CountRefresh.
		Err: ErrTooManyHeldLocks, Limit: e.core.Cfg.MaxLocks, RetryAfter: max(time.Second, e.core.Cfg.CountRefresh),
		Reason: fmt.Sprintf("the cluster holds the maximum of %d locks; release locks that are no longer needed, or try later", e.core.Cfg.MaxLocks),
	}
}

func (e *Engine) tooManyFenced() error {
	return &LimitError{
		Err: ErrTooManyFencedValues, Limit: e.core.Cfg.MaxFencedValues,
		Reason: fmt.Sprintf("the cluster holds the maximum of %d fenced values; write to an existing resource, or ask an operator to raise the cap", e.core.Cfg.MaxFencedValues),
	}
}

// reserveLock takes a slot under MaxLocks for an acquire (of a lock set
// with members, a slot for each); the returned
// function ends it, given whether the acquire created a lock. At the cap,
// an acquire in a session that holds the lock already passes without a
// slot: it creates nothing (the idempotent 200).
func (e *Engine) reserveLock(ctx context.Context, req core.AcquireRequest, members []string) (func(created bool), error) {
	n := max(len(members), 1) // a lock set creates every member
	ok, err := e.space.locks.Reserve(ctx, n)
	if err != nil {
		return nil, err
	}
	if ok {
		return func(created bool) { e.space.locks.Finish(n, created) }, nil
	}
	if lid, isLease := store.ParseLeaseHex(req.Session); isLease && members == nil {
		// Not keys-only: etcd 3.7 answers a keys-only range from its
		// index, without the keys' leases.
		octx, done := e.core.Etcd.Op(ctx)
		resp, err := e.core.Cli.Get(octx, e.core.Keys.Lock(req.Name))
		done()
		if err != nil {
			return nil, e.core.Etcd.Err(ctx, "read lock", err)
		}
		if len(resp.Kvs) == 1 && resp.Kvs[0].Lease == int64(lid) {
			return func(bool) {}, nil
		}
	}
	return nil, e.tooManyLocks()
}

// reserveFenced takes a slot under MaxFencedValues for a write that would
// make a new resource; the returned function ends it.
func (e *Engine) reserveFenced(ctx context.Context) (func(created bool), error) {
	ok, err := e.space.fenced.Reserve(ctx, 1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, e.tooManyFenced()
	}
	return func(created bool) { e.space.fenced.Finish(1, created) }, nil
}
