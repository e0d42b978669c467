package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/baton-dev/baton/internal/store"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// NoSpace reports whether etcd's NOSPACE alarm is raised: from the
// embedded member's own alarm store (Config.Embedded), else as
// this engine last saw it (a write refused for space, or the background
// check of the alarm list, every alarmPoll).
func (e *Engine) NoSpace() bool { return e.etcd.NoSpace() }

// alarmPoll is how often an engine over external etcd lists etcd's alarms.
// Listing is a raft round (etcd proposes alarm reads too), so it is not
// done per readiness probe.
const alarmPoll = 10 * time.Second

// space is the engine's bookkeeping for Config's storage caps: one tally
// per capped prefix, and the alarm as last seen.
type space struct {
	locks    *tally // MaxLocks, over locks/
	sessions *tally // MaxSessions, over sessions/
	fenced   *tally // MaxFencedValues, over fencemax/
}

// tally estimates how many keys are under prefix, in constant time per
// check, so that a cap costs no count per request.
//
// The estimate is base (a count-only read made in the background every
// Config.CountRefresh, or at once when a check would refuse and the count
// is older than recountAfter), plus pending (slots reserved by checks of
// this engine whose write has not finished), plus done (writes of this
// engine that created a key since that read began, or may have: a create
// whose outcome etcd left unknown counts). It never counts too few keys
// for this engine's own creates; keys others delete are seen at
// the next read, so a slot freed elsewhere, or by this engine, is offered
// again within CountRefresh. Keys other engines create are seen at the
// next read too: that is how far the cap can be overshot, at most what the
// other nodes create within one CountRefresh. With one node, never.
type tally struct {
	prefix string
	limit  int

	mu      sync.Mutex
	known   bool
	base    int64
	pending int64
	done    int64
	at      time.Time // when the read that set base began

	// countMu makes concurrent recounts one read.
	countMu sync.Mutex
}

// recountAfter is how old a count may be before a check that would
// refuse counts again: near the cap a node reads at most this often.
const recountAfter = 100 * time.Millisecond

// estimate is the tally's current estimate; the caller holds mu.
func (t *tally) estimate() int64 { return t.base + t.pending + t.done }

// reserve takes a slot for a key about to be created, or reports false
// when the cap is reached. A true reservation must be ended with finish.
func (e *Engine) reserve(ctx context.Context, t *tally) (bool, error) {
	return e.reserveN(ctx, t, 1)
}

// reserveN is reserve for n keys at once (a lock set's), ended with
// finishN.
func (e *Engine) reserveN(ctx context.Context, t *tally, n int) (bool, error) {
	if t == nil {
		return true, nil
	}
	for recounted := false; ; recounted = true {
		t.mu.Lock()
		if t.known && t.estimate()+int64(n) <= int64(t.limit) {
			t.pending += int64(n)
			t.mu.Unlock()
			return true, nil
		}
		fresh := t.known && time.Since(t.at) < recountAfter
		t.mu.Unlock()
		if fresh || recounted {
			return false, nil
		}
		if err := e.recount(ctx, t); err != nil {
			return false, err
		}
	}
}

// mayHaveCreated reports whether a create that failed with err may have
// happened anyway (etcd left its outcome unknown): a tally counts it, so
// that the cap errs on the side of refusing until the next count.
func mayHaveCreated(err error) bool { return errors.Is(err, ErrUnavailable) }

// finish ends a reservation: created says whether the write made the key.
func (t *tally) finish(created bool) { t.finishN(1, created) }

// finishN ends a reservation of n keys.
func (t *tally) finishN(n int, created bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.pending -= int64(n)
	if created {
		t.done += int64(n)
	}
	t.mu.Unlock()
}

// recount reads how many keys are under t's prefix and makes that the
// base. Count-only: etcd returns no keys or values, though it walks its
// in-memory index over the prefix, which the cap itself bounds.
func (e *Engine) recount(ctx context.Context, t *tally) error {
	t.countMu.Lock()
	defer t.countMu.Unlock()
	t.mu.Lock()
	if t.known && time.Since(t.at) < recountAfter {
		t.mu.Unlock()
		return nil // a concurrent recount just ran
	}
	done0, at := t.done, time.Now()
	t.mu.Unlock()
	if e.etcd.MemberStopped() {
		return fmt.Errorf("count %s: %w: this node's etcd member has stopped", t.prefix, ErrUnavailable)
	}
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}
	if e.etcd.OwnMember() {
		// The member has applied every write it answered, ours included.
		opts = append(opts, clientv3.WithSerializable())
	}
	octx, cancel := e.etcd.Op(ctx)
	resp, err := e.cli.Get(octx, t.prefix, opts...)
	cancel()
	if err != nil {
		return e.etcd.Err(ctx, "count "+t.prefix, err)
	}
	t.mu.Lock()
	// Creates that finished before the read began are in its count;
	// those that finished during it may be counted twice until the next
	// read, which errs on the side of refusing.
	t.base, t.done, t.at, t.known = resp.Count, t.done-done0, at, true
	t.mu.Unlock()
	return nil
}

// newSpace makes a tally for each cap that is on.
func (e *Engine) newSpace() {
	mk := func(prefix string, limit int) *tally {
		if limit <= 0 {
			return nil
		}
		return &tally{prefix: prefix, limit: limit}
	}
	e.space.locks = mk(e.keys.Locks(), e.cfg.MaxLocks)
	e.space.sessions = mk(e.keys.Sessions(), e.cfg.MaxSessions)
	e.space.fenced = mk(e.cfg.Prefix+"fencemax/", e.cfg.MaxFencedValues)
}

// runSpace keeps the tallies fresh and, over external etcd, the alarm as
// etcd lists it, until the engine closes. A failed read leaves the old
// figures and is tried again at the next tick.
func (e *Engine) runSpace() {
	tick := time.NewTicker(e.cfg.CountRefresh)
	defer tick.Stop()
	var lastAlarm time.Time
	for {
		select {
		case <-e.stop.Done():
			return
		case <-tick.C:
		}
		for _, t := range []*tally{e.space.locks, e.space.sessions, e.space.fenced} {
			if t != nil {
				_ = e.recount(e.stop, t)
			}
		}
		if e.cfg.Embedded == nil && time.Since(lastAlarm) >= alarmPoll {
			lastAlarm = time.Now()
			e.pollAlarm()
		}
	}
}

// pollAlarm reads etcd's alarm list into the NOSPACE alarm as last seen
// (store.Etcd.NoSpace).
func (e *Engine) pollAlarm() {
	octx, cancel := e.etcd.Op(e.stop)
	defer cancel()
	resp, err := e.cli.AlarmList(octx)
	if err != nil {
		return
	}
	e.etcd.SetNoSpace(hasNoSpace(resp))
}

func hasNoSpace(resp *clientv3.AlarmResponse) bool {
	for _, a := range resp.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// Limit errors of the storage caps.

func (e *Engine) tooManyLocks() error {
	return &LimitError{
		// A slot freed anywhere is seen within CountRefresh.
		Err: ErrTooManyHeldLocks, Limit: e.cfg.MaxLocks, RetryAfter: max(time.Second, e.cfg.CountRefresh),
		Reason: fmt.Sprintf("the cluster holds the maximum of %d locks; release locks that are no longer needed, or try later", e.cfg.MaxLocks),
	}
}

func (e *Engine) tooManyFenced() error {
	return &LimitError{
		Err: ErrTooManyFencedValues, Limit: e.cfg.MaxFencedValues,
		Reason: fmt.Sprintf("the cluster holds the maximum of %d fenced values; write to an existing resource, or ask an operator to raise the cap", e.cfg.MaxFencedValues),
	}
}

// reserveLock takes a slot under MaxLocks for an acquire; the returned
// function ends it, given whether the acquire created a lock. At the cap,
// an acquire in a session that holds the lock already passes without a
// slot: it creates nothing (the idempotent 200).
func (e *Engine) reserveLock(ctx context.Context, req AcquireRequest) (func(created bool), error) {
	n := max(len(req.members), 1) // a lock set creates every member
	ok, err := e.reserveN(ctx, e.space.locks, n)
	if err != nil {
		return nil, err
	}
	if ok {
		return func(created bool) { e.space.locks.finishN(n, created) }, nil
	}
	if lid, isLease := store.ParseLeaseHex(req.Session); isLease && req.members == nil {
		// Not keys-only: etcd 3.7 answers a keys-only range from its
		// index, without the keys' leases.
		octx, done := e.etcd.Op(ctx)
		resp, err := e.cli.Get(octx, e.keys.Lock(req.Name))
		done()
		if err != nil {
			return nil, e.etcd.Err(ctx, "read lock", err)
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
	ok, err := e.reserve(ctx, e.space.fenced)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, e.tooManyFenced()
	}
	return e.space.fenced.finish, nil
}
