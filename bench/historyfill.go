package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// The shape of the history scenario's fill.
const (
	// historyNames locks, peer-0 … peer-999, each cycled by one worker
	// only, so no acquire ever finds its lock held.
	historyNames = 1000
	// historyOwners owners, w0 … w63, shared by the workers.
	historyOwners = 64
	// historyWorkers concurrent callers, each in a session of its own.
	// More callers let the engine batch more acquires and releases per
	// etcd txn: on 2 cores 100,000 events took 5.9 s with 64, 5.1 s with
	// 128 and 4.7 s with 256.
	historyWorkers = 256
	// Every revokeEvery-th cycle ends in a revoke instead of a release,
	// so ?type=revoked has something rare to find.
	revokeEvery = 500
	// historyExpiries locks are left to expire, for ?type=expired.
	historyExpiries = 8
	// expiryWait bounds the wait for the expiries to be recorded, after
	// their MinTTL has passed.
	expiryWait = 30 * time.Second
)

// historyFill is what the fill made.
type historyFill struct {
	// events counts the audit events the fill made: two per cycle and
	// two per expiry.
	events           int64
	cycles, revoked  int64
	expired          int
	elapsed          time.Duration
	first, last      int64 // revision range of the fill's acquires
	workers, clients int
}

// fillHistory makes about events audit events through the node's engine,
// in this process: acquire+release cycles in sessions, every
// revokeEvery-th one revoked, and historyExpiries locks left to expire.
// It calls the engine rather than HTTP because that fills about twice as
// fast (no JSON, no HTTP, no second process: on 2 cores some 20,000
// events/s, where the session scenario's HTTP cycles make 9,600 at 64
// clients and 7,000 at 128), and the scenario measures the reads, not the
// writes; the events are the same. elapsed runs until
// the last cycle ends; the expiries, started first, may be recorded later,
// and fillHistory returns once they are.
func (b *bench) fillHistory(ctx context.Context, events int) (historyFill, error) {
	eng := b.node.Engine()
	start := time.Now()
	// Sessions first, so that the revisions of their creation do not lie
	// inside the fill's range.
	ids, err := fillSessions(ctx, eng)
	if err != nil {
		return historyFill{}, err
	}
	expiries, err := startExpiries(ctx, eng, b.node.Trail())
	if err != nil {
		return historyFill{}, err
	}
	defer expiries.close()
	renewCtx, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan error, 1)
	go func() {
		renewed <- keepRenewing(renewCtx, ids, func(ctx context.Context, id string) error {
			_, err := eng.RenewSession(ctx, id)
			return err
		})
	}()

	cycles := max(int64(events-2*historyExpiries), 0) / 2
	ranges := make([]revRange, historyWorkers)
	var next atomic.Int64
	err = parallelWorkers(ctx, historyWorkers, func(ctx context.Context, w int) error {
		return fillWorker(ctx, eng, w, ids[w], &next, cycles, &ranges[w])
	})
	elapsed := time.Since(start)
	stopRenewing()
	if rerr := <-renewed; err == nil {
		err = rerr
	}
	if err != nil {
		return historyFill{}, fmt.Errorf("fill: %w", err)
	}
	for _, id := range ids {
		if err := eng.DeleteSession(ctx, id); err != nil {
			return historyFill{}, fmt.Errorf("delete fill session: %w", err)
		}
	}
	f := historyFill{
		events: 2*cycles + 2*historyExpiries, cycles: cycles, revoked: cycles / revokeEvery, elapsed: elapsed,
		workers: historyWorkers, clients: historyOwners, first: expiries.first, last: expiries.first,
	}
	for _, r := range ranges {
		f.first, f.last = min(f.first, r.first), max(f.last, r.last)
	}
	if f.expired, err = expiries.wait(ctx); err != nil {
		return historyFill{}, err
	}
	return f, nil
}

// revRange is the range of tokens one worker was granted.
type revRange struct{ first, last int64 }

func (r *revRange) see(token int64) {
	if r.first == 0 || token < r.first {
		r.first = token
	}
	r.last = max(r.last, token)
}

// fillWorker runs cycles, taken from next until cycles are done, on the
// locks that are worker w's: peer-i for i ≡ w (mod historyWorkers).
func fillWorker(ctx context.Context, eng *lock.Engine, w int, session string, next *atomic.Int64, cycles int64, r *revRange) error {
	var names []string
	for i := w; i < historyNames; i += historyWorkers {
		names = append(names, "peer-"+strconv.Itoa(i))
	}
	owner := fillOwner(w)
	for j := 0; ; j++ {
		k := next.Add(1) - 1
		if k >= cycles {
			return nil
		}
		name := names[j%len(names)]
		l, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: owner, Session: session})
		if err != nil {
			return err
		}
		r.see(l.Token)
		if k%revokeEvery == revokeEvery-1 {
			_, err = eng.Revoke(ctx, name, "bench")
		} else {
			err = eng.Release(ctx, name, l.Token)
		}
		if err != nil {
			return err
		}
	}
}

func fillOwner(w int) string { return "w" + strconv.Itoa(w%historyOwners) }

// fillSessions makes one session per worker, owned by the worker's owner.
func fillSessions(ctx context.Context, eng *lock.Engine) ([]string, error) {
	ids := make([]string, historyWorkers)
	err := load.Parallel(ctx, setupClients, historyWorkers, func(ctx context.Context, w int) error {
		s, err := eng.CreateSession(ctx, fillOwner(w), load.SessionTTL)
		if err == nil {
			ids[w] = s.ID
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create fill sessions: %w", err)
	}
	return ids, nil
}

// parallelWorkers runs f(ctx, w) for w in [0, n) at once and returns the
// first error; ctx ends for every worker once one fails.
func parallelWorkers(ctx context.Context, n int, f func(ctx context.Context, w int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			if err := f(ctx, w); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// expiries are locks taken with the engine's MinTTL and never renewed.
type expiries struct {
	subs  []*trail.Subscription
	first int64 // the first one's token
}

// startExpiries subscribes to each expiring lock's live events, then
// takes it, so its expiry cannot come before the subscription.
func startExpiries(ctx context.Context, eng *lock.Engine, tr *trail.Trail) (*expiries, error) {
	x := &expiries{}
	ttl := eng.Config().MinTTL
	for i := range historyExpiries {
		name := "expiring-" + strconv.Itoa(i)
		sub, err := tr.Subscribe(ctx, trail.SubscribeOptions{Lock: name})
		if err != nil {
			x.close()
			return nil, fmt.Errorf("watch %s: %w", name, err)
		}
		x.subs = append(x.subs, sub)
		l, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: "expirer", TTL: ttl})
		if err != nil {
			x.close()
			return nil, err
		}
		if x.first == 0 {
			x.first = l.Token
		}
	}
	return x, nil
}

// wait returns once every expiring lock's expiry is recorded, and how
// many were.
func (x *expiries) wait(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, expiryWait)
	defer cancel()
	for i, sub := range x.subs {
		for expired := false; !expired; {
			select {
			case ev, ok := <-sub.C:
				if !ok {
					return i, fmt.Errorf("watch expiring-%d: %w", i, sub.Err())
				}
				expired = ev.Type == lock.EventExpired
			case <-ctx.Done():
				return i, fmt.Errorf("expiring-%d: no expiry recorded within %s: %w", i, expiryWait, ctx.Err())
			}
		}
	}
	return len(x.subs), nil
}

func (x *expiries) close() {
	for _, s := range x.subs {
		s.Close()
	}
}
