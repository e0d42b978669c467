package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/caps"
	"github.com/baton-dev/baton/lock/internal/core"
)

// space is the engine's bookkeeping for Config's storage caps: one tally
// per capped prefix (package caps; nil where the cap is off).
type space struct {
	core     *core.Engine
	locks    *caps.Tally // MaxLocks, over locks/
	sessions *caps.Tally // MaxSessions, over sessions/
	fenced   *caps.Tally // MaxFencedValues, over fencemax/
	keys     *caps.Tally // MaxKeys, over kv/
}

// mayHaveCreated reports whether a create that failed with err may have
// happened anyway: a tally counts it (caps.MayHaveCreated).
func mayHaveCreated(err error) bool { return caps.MayHaveCreated(err) }

// newSpace makes a tally for each cap of c's config that is on.
func newSpace(c *core.Engine) *space {
	return &space{
		core:     c,
		locks:    caps.New(c.Cli, c.Etcd, c.Keys.Locks(), c.Cfg.MaxLocks),
		sessions: caps.New(c.Cli, c.Etcd, c.Keys.Sessions(), c.Cfg.MaxSessions),
		fenced:   caps.New(c.Cli, c.Etcd, c.Cfg.Prefix+"fencemax/", c.Cfg.MaxFencedValues),
		keys:     caps.New(c.Cli, c.Etcd, c.Keys.KVs(), c.Cfg.MaxKeys),
	}
}

// run keeps the tallies fresh and, over external etcd, the alarm as
// etcd lists it, until the engine closes.
func (s *space) run() {
	c := s.core
	caps.Keep(c.Stop, c.Cli, c.Etcd, c.Cfg.CountRefresh, []*caps.Tally{s.locks, s.sessions, s.fenced, s.keys}, c.Cfg.Embedded == nil)
}

// Limit errors of the storage caps.

func (s *space) tooManyLocks() error {
	return &LimitError{
		// A slot freed anywhere is seen within CountRefresh.
		Err: ErrTooManyHeldLocks, Limit: s.core.Cfg.MaxLocks, RetryAfter: max(time.Second, s.core.Cfg.CountRefresh),
		Reason: fmt.Sprintf("the cluster holds the maximum of %d locks; release locks that are no longer needed, or try later", s.core.Cfg.MaxLocks),
	}
}

func (s *space) tooManyFenced() error {
	return &LimitError{
		Err: ErrTooManyFencedValues, Limit: s.core.Cfg.MaxFencedValues,
		Reason: fmt.Sprintf("the cluster holds the maximum of %d fenced values; write to an existing resource, or ask an operator to raise the cap", s.core.Cfg.MaxFencedValues),
	}
}

// reserveLock takes a slot under MaxLocks for an acquire (of a lock set
// with members, a slot for each); the returned
// function ends it, given whether the acquire created a lock. At the cap,
// an acquire in a session that holds the lock already passes without a
// slot: it creates nothing (the idempotent 200).
func (s *space) reserveLock(ctx context.Context, req AcquireRequest, members []string) (func(created bool), error) {
	n := max(len(members), 1) // a lock set creates every member
	ok, err := s.locks.Reserve(ctx, n)
	if err != nil {
		return nil, err
	}
	if ok {
		return func(created bool) { s.locks.Finish(n, created) }, nil
	}
	if lid, isLease := store.ParseLeaseHex(req.Session); isLease && members == nil {
		// Not keys-only: etcd 3.7 answers a keys-only range from its
		// index, without the keys' leases.
		octx, done := s.core.Etcd.Op(ctx)
		resp, err := s.core.Cli.Get(octx, s.core.Keys.Lock(req.Name))
		done()
		if err != nil {
			return nil, s.core.Etcd.Err(ctx, "read lock", err)
		}
		if len(resp.Kvs) == 1 && resp.Kvs[0].Lease == int64(lid) {
			return func(bool) {}, nil
		}
	}
	return nil, s.tooManyLocks()
}

// reserveFenced takes a slot under MaxFencedValues for a write that would
// make a new resource; the returned function ends it.
func (s *space) reserveFenced(ctx context.Context) (func(created bool), error) {
	ok, err := s.fenced.Reserve(ctx, 1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, s.tooManyFenced()
	}
	return func(created bool) { s.fenced.Finish(1, created) }, nil
}
