package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// The etcd-mutex peer is etcd's own Go lock recipe, clientv3/concurrency's
// Session and Mutex, over gRPC to the node's member: what a Go user with
// an etcd cluster would write instead of calling baton.
const (
	kindEtcdMutex           = "etcd-mutex"
	kindEtcdMutexContention = "etcd-mutex-contention"
)

// etcdMutexPrefix starts every etcd-mutex lock name: outside baton's
// prefix, so the engine never sees these keys.
const etcdMutexPrefix = "/bench-mutex/"

// runEtcdMutex runs the etcd-mutex peer's cycles at every client count,
// then its contention at ContentionClients.
func (b *bench) runEtcdMutex(ctx context.Context, res *Results) error {
	if !b.cfg.runs("etcd-mutex") {
		return nil
	}
	for _, c := range b.cfg.Clients {
		b.log.Info("running", "scenario", "etcd-mutex", "clients", c)
		spec := loadSpec{Kind: kindEtcdMutex, URL: b.etcdURL, Clients: c, Duration: b.cfg.Duration, Prefix: fmt.Sprintf("etcd-mutex-%d-", c)}
		var loop loopResult
		u, err := measuredLoad(ctx, spec, &loop)
		if err != nil {
			return fmt.Errorf("etcd-mutex, %d clients: %w", c, err)
		}
		res.EtcdMutex = append(res.EtcdMutex, newCycleResult(c, loop, u))
	}
	n := b.cfg.ContentionClients
	b.log.Info("running", "scenario", "etcd-mutex contention", "clients", n)
	spec := loadSpec{Kind: kindEtcdMutexContention, URL: b.etcdURL, Clients: n, Duration: b.cfg.Duration, Prefix: "etcd-mutex-contention-"}
	var rep contentionReport
	u, err := measuredLoad(ctx, spec, &rep)
	if err != nil {
		return fmt.Errorf("etcd-mutex contention: %w", err)
	}
	res.EtcdMutexContention = newContentionResult(n, rep, u)
	return nil
}

// measuredLoad runs a load generator for spec, decodes its report into
// report, and returns what the scenario consumed. It returns once the
// generator has exited, so whatever it cleans up is gone before the next
// scenario starts.
func measuredLoad(ctx context.Context, spec loadSpec, report any) (spent, error) {
	lg, err := startLoadgen(ctx, spec)
	if err != nil {
		return spent{}, err
	}
	defer lg.close()
	u, err := measured(func() (time.Duration, error) { return lg.run(report) })
	if err != nil {
		return spent{}, err
	}
	if err := lg.wait(); err != nil {
		return spent{}, fmt.Errorf("load generator: %w", err)
	}
	return u, nil
}

// mutexClients dials n clientv3 clients to endpoint and makes a Session
// (a lease kept alive by the client) on each, before the clock starts, as
// a client process keeps one. Each worker has a client of its own, so
// its own gRPC connection, as each HTTP worker has its own keep-alive
// connection. closeAll revokes the sessions and closes the clients; it
// may be called more than once.
func mutexClients(ctx context.Context, endpoint string, n int) (sessions []*concurrency.Session, closeAll func() error, err error) {
	var clients []*clientv3.Client
	closed := false
	closeAll = func() error {
		if closed {
			return nil
		}
		closed = true
		var errs []error
		for _, s := range sessions {
			errs = append(errs, s.Close())
		}
		for _, c := range clients {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	for range n {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("dial etcd %s: %w", endpoint, err)
		}
		clients = append(clients, c)
		s, err := concurrency.NewSession(c, concurrency.WithTTL(int(sessionTTL/time.Second)), concurrency.WithContext(ctx))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("etcd session: %w", err)
		}
		sessions = append(sessions, s)
	}
	return sessions, closeAll, nil
}

// genEtcdMutex is the load generator's side of the etcd-mutex cycles:
// Lock then Unlock of a Mutex on the worker's own name (workerLock), as
// the other cycle scenarios take theirs. Uncontended, Lock is
// one txn (put the session's key, read the oldest key of the prefix) and
// Unlock one delete.
func genEtcdMutex(ctx context.Context, spec loadSpec, p *parentConn) error {
	sessions, closeAll, err := mutexClients(ctx, spec.URL, spec.Clients)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := p.ready(); err != nil {
		return err
	}
	loop := closedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, _ int) error {
		name := workerLock(etcdMutexPrefix+spec.Prefix, w)
		m := concurrency.NewMutex(sessions[w], name)
		if err := m.Lock(ctx); err != nil {
			return fmt.Errorf("lock %s: %w", name, err)
		}
		if err := m.Unlock(ctx); err != nil {
			return fmt.Errorf("unlock %s: %w", name, err)
		}
		return nil
	})
	if err := p.report(loop); err != nil {
		return err
	}
	// Before exiting, since the parent waits for that: sessions left to
	// expire would be revoked by etcd in the middle of the next scenario.
	return closeAll()
}

// genEtcdMutexContention is the load generator's side of the etcd-mutex
// contention: every session loops on one Mutex, Lock (which waits) then
// Unlock at once, reported as the contention scenario reports baton's.
func genEtcdMutexContention(ctx context.Context, spec loadSpec, p *parentConn) error {
	sessions, closeAll, err := mutexClients(ctx, spec.URL, spec.Clients)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := p.ready(); err != nil {
		return err
	}
	holds, errs, elapsed := contendMutex(ctx, sessions, etcdMutexPrefix+spec.Prefix+"one", spec.Duration)
	if err := checkExclusive(holds); err != nil {
		errs.add(err)
	}
	grants := make([]grant, len(holds))
	for i, h := range holds {
		grants[i] = h.grant
	}
	if err := p.report(grantReport(elapsed, errs, grants)); err != nil {
		return err
	}
	return closeAll()
}

// mutexHold is one Lock+Unlock of the contended Mutex. Its token is the
// revision of the answer that granted it (Mutex.Header), which grows
// with every grant: each holder's answer comes after the previous
// holder's delete.
type mutexHold struct {
	grant
	releasing time.Duration // Unlock about to be sent
}

// contendMutex runs one worker per session on the Mutex name, as
// genContention runs baton's contenders: no Lock starts after d, every
// Lock started is seen through, and each worker has at least two turns.
// The returned errorCount is complete: every worker has ended.
func contendMutex(ctx context.Context, sessions []*concurrency.Session, name string, d time.Duration) ([]mutexHold, *errorCount, time.Duration) {
	errs := &errorCount{}
	start := time.Now()
	deadline := start.Add(d)
	perClient := make([][]mutexHold, len(sessions))
	var wg sync.WaitGroup
	for w, s := range sessions {
		wg.Go(func() {
			for turn := 0; ctx.Err() == nil && (turn < 2 || time.Now().Before(deadline)); turn++ {
				h, err := holdMutex(ctx, s, name, start)
				if err != nil {
					errs.add(err)
					continue
				}
				perClient[w] = append(perClient[w], h)
			}
		})
	}
	wg.Wait()
	return slices.Concat(perClient...), errs, time.Since(start)
}

// holdMutex takes the Mutex name in session s, waiting up to
// contentionWait as baton's contenders do, and releases it at once; its
// times are from start.
func holdMutex(ctx context.Context, s *concurrency.Session, name string, start time.Time) (mutexHold, error) {
	m := concurrency.NewMutex(s, name)
	var h mutexHold
	h.sent = time.Since(start)
	lockCtx, cancel := context.WithTimeout(ctx, contentionWait)
	err := m.Lock(lockCtx)
	cancel()
	h.granted = time.Since(start)
	if err != nil {
		return h, fmt.Errorf("lock %s: %w", name, err)
	}
	h.token = m.Header().Revision
	h.releasing = time.Since(start)
	err = m.Unlock(ctx)
	h.released = time.Since(start)
	if err != nil {
		return h, fmt.Errorf("unlock %s: %w", name, err)
	}
	return h, nil
}

// checkExclusive fails if two holds of one lock overlapped, or if a
// later grant has a token no greater than an earlier one's. The times
// are on one clock, and a hold's releasing is taken before its Unlock is
// sent, so under a lock that works every grant comes after the releasing
// of every hold granted before it.
func checkExclusive(holds []mutexHold) error {
	byGrant := slices.SortedFunc(slices.Values(holds), func(x, y mutexHold) int { return cmp.Compare(x.granted, y.granted) })
	overlaps, misordered := 0, 0
	var held time.Duration // the latest releasing of the holds so far
	for i, h := range byGrant {
		if i > 0 && h.granted < held {
			overlaps++
		}
		if i > 0 && h.token <= byGrant[i-1].token {
			misordered++
		}
		held = max(held, h.releasing)
	}
	if overlaps > 0 || misordered > 0 {
		return fmt.Errorf("of %d holds, %d were granted while an earlier one was held, %d had a token no greater than the hold granted before them", len(holds), overlaps, misordered)
	}
	return nil
}
