package etcdrecipe

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

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// etcdMutexPrefix starts every etcd-mutex lock name: outside baton's
// prefix, so the engine never sees these keys.
const etcdMutexPrefix = "/bench-mutex/"

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
		s, err := concurrency.NewSession(c, concurrency.WithTTL(int(load.SessionTTL/time.Second)), concurrency.WithContext(ctx))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("etcd session: %w", err)
		}
		sessions = append(sessions, s)
	}
	return sessions, closeAll, nil
}

// GenCycles is the load generator's side of the etcd-mutex cycles:
// Lock then Unlock of a Mutex on the worker's own name (load.WorkerLock), as
// the other cycle scenarios take theirs. Uncontended, Lock is
// one txn (put the session's key, read the oldest key of the prefix) and
// Unlock one delete.
func GenCycles(ctx context.Context, spec load.Spec, p *load.Parent) error {
	sessions, closeAll, err := mutexClients(ctx, spec.URL, spec.Clients)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := p.Ready(); err != nil {
		return err
	}
	loop := load.ClosedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, _ int) error {
		name := load.WorkerLock(etcdMutexPrefix+spec.Prefix, w)
		m := concurrency.NewMutex(sessions[w], name)
		if err := m.Lock(ctx); err != nil {
			return fmt.Errorf("lock %s: %w", name, err)
		}
		if err := m.Unlock(ctx); err != nil {
			return fmt.Errorf("unlock %s: %w", name, err)
		}
		return nil
	})
	if err := p.Report(loop); err != nil {
		return err
	}
	// Before exiting, since the parent waits for that: sessions left to
	// expire would be revoked by etcd in the middle of the next scenario.
	return closeAll()
}

// GenContention is the load generator's side of the etcd-mutex
// contention: every session loops on one Mutex, Lock (which waits) then
// Unlock at once, reported as the contention scenario reports baton's.
func GenContention(ctx context.Context, spec load.Spec, p *load.Parent) error {
	sessions, closeAll, err := mutexClients(ctx, spec.URL, spec.Clients)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := p.Ready(); err != nil {
		return err
	}
	holds, errs, elapsed := contendMutex(ctx, sessions, etcdMutexPrefix+spec.Prefix+"one", spec.Duration)
	if err := checkExclusive(holds); err != nil {
		errs.Add(err)
	}
	grants := make([]contend.Grant, len(holds))
	for i, h := range holds {
		grants[i] = h.Grant
	}
	if err := p.Report(contend.GrantReport(elapsed, errs, grants)); err != nil {
		return err
	}
	return closeAll()
}

// mutexHold is one Lock+Unlock of the contended Mutex. Its token is the
// revision of the answer that granted it (Mutex.Header), which grows
// with every grant: each holder's answer comes after the previous
// holder's delete.
type mutexHold struct {
	contend.Grant
	releasing time.Duration // Unlock about to be sent
}

// contendMutex runs one worker per session on the Mutex name, as
// contend.Turns runs baton's contenders: no Lock starts after d, every
// Lock started is seen through, and each worker has at least two turns.
// The returned ErrorCount is complete: every worker has ended.
func contendMutex(ctx context.Context, sessions []*concurrency.Session, name string, d time.Duration) ([]mutexHold, *measure.ErrorCount, time.Duration) {
	errs := &measure.ErrorCount{}
	start := time.Now()
	deadline := start.Add(d)
	perClient := make([][]mutexHold, len(sessions))
	var wg sync.WaitGroup
	for w, s := range sessions {
		wg.Go(func() {
			for turn := 0; ctx.Err() == nil && (turn < 2 || time.Now().Before(deadline)); turn++ {
				h, err := holdMutex(ctx, s, name, start)
				if err != nil {
					errs.Add(err)
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
// contend.Wait as baton's contenders do, and releases it at once; its
// times are from start.
func holdMutex(ctx context.Context, s *concurrency.Session, name string, start time.Time) (mutexHold, error) {
	m := concurrency.NewMutex(s, name)
	var h mutexHold
	h.Sent = time.Since(start)
	lockCtx, cancel := context.WithTimeout(ctx, contend.Wait)
	err := m.Lock(lockCtx)
	cancel()
	h.Granted = time.Since(start)
	if err != nil {
		return h, fmt.Errorf("lock %s: %w", name, err)
	}
	h.Token = m.Header().Revision
	h.releasing = time.Since(start)
	err = m.Unlock(ctx)
	h.Released = time.Since(start)
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
	byGrant := slices.SortedFunc(slices.Values(holds), func(x, y mutexHold) int { return cmp.Compare(x.Granted, y.Granted) })
	overlaps, misordered := 0, 0
	var held time.Duration // the latest releasing of the holds so far
	for i, h := range byGrant {
		if i > 0 && h.Granted < held {
			overlaps++
		}
		if i > 0 && h.Token <= byGrant[i-1].Token {
			misordered++
		}
		held = max(held, h.releasing)
	}
	if overlaps > 0 || misordered > 0 {
		return fmt.Errorf("of %d holds, %d were granted while an earlier one was held, %d had a token no greater than the hold granted before them", len(holds), overlaps, misordered)
	}
	return nil
}
