package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// waiterLease is the one lease under which this node puts its queue
// entries. Sharing it costs no lease grant per waiter; a waiter that leaves
// deletes its entry itself, and if the node dies etcd drops every entry
// with the lease after WaiterTTL, so a dead node never blocks a queue.
type waiterLease struct {
	mu     sync.Mutex
	id     clientv3.LeaseID
	lost   chan struct{} // closed when id stops being kept alive
	cancel context.CancelFunc
	seq    atomic.Uint64
}

// get returns the live waiter lease, granting one if needed, and a channel
// closed when that lease is lost (its entries are then gone).
func (w *waiterLease) get(ctx context.Context, e *Engine) (clientv3.LeaseID, <-chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.id != 0 {
		return w.id, w.lost, nil
	}
	if e.stop.Err() != nil {
		return 0, nil, ErrClosed
	}
	octx, done := e.op(ctx)
	resp, err := e.cli.Grant(octx, ttlSeconds(e.cfg.WaiterTTL))
	done()
	if err != nil {
		return 0, nil, e.etcdErr(ctx, "grant waiter lease", err)
	}
	kctx, cancel := context.WithCancel(e.stop)
	ch, err := e.cli.KeepAlive(kctx, resp.ID)
	if err != nil {
		cancel()
		return 0, nil, e.etcdErr(ctx, "keep waiter lease alive", err)
	}
	id, lost := resp.ID, make(chan struct{})
	w.id, w.lost, w.cancel = id, lost, cancel
	go func() {
		for range ch {
		}
		w.mu.Lock()
		if w.id == id {
			w.id = 0
			w.cancel()
		}
		w.mu.Unlock()
		close(lost)
	}()
	return id, lost, nil
}

func (w *waiterLease) close(e *Engine) {
	w.mu.Lock()
	id, cancel := w.id, w.cancel
	w.id = 0
	w.mu.Unlock()
	if id == 0 {
		return
	}
	cancel()
	ctx, done := e.cleanupCtx()
	defer done()
	if _, err := e.cli.Revoke(ctx, id); err != nil && !isLeaseNotFound(err) {
		e.log.Warn("revoke waiter lease", "lease", leaseHex(id), "err", err)
	}
}

// bucketLease hands out the lease that audit events are written under.
// A new bucket starts every width; each bucket's lease outlives its last
// event by HistoryRetention, then etcd deletes the whole bucket at once.
type bucketLease struct {
	mu    sync.Mutex
	id    clientv3.LeaseID
	until time.Time
}

func (e *Engine) bucketWidth() time.Duration {
	return min(max(e.cfg.HistoryRetention/24, time.Second), time.Hour)
}

func (b *bucketLease) get(ctx context.Context, e *Engine) (clientv3.LeaseID, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.id != 0 && now.Before(b.until) {
		return b.id, nil
	}
	width := e.bucketWidth()
	octx, done := e.op(ctx)
	defer done()
	resp, err := e.cli.Grant(octx, ttlSeconds(e.cfg.HistoryRetention+width))
	if err != nil {
		return 0, e.etcdErr(ctx, "grant history bucket lease", err)
	}
	b.id, b.until = resp.ID, now.Add(width)
	return b.id, nil
}

// forget drops id after etcd said it no longer exists (the node was
// paused for longer than the retention, say), so the next get grants anew.
func (b *bucketLease) forget(id clientv3.LeaseID) {
	b.mu.Lock()
	if b.id == id {
		b.id = 0
	}
	b.mu.Unlock()
}

// withBucket runs f with the current bucket lease, once more with a fresh
// one if etcd reports the lease gone.
func (e *Engine) withBucket(ctx context.Context, f func(bucket clientv3.LeaseID) error) error {
	for attempt := 0; ; attempt++ {
		id, err := e.buckets.get(ctx, e)
		if err != nil {
			return err
		}
		err = f(id)
		if err != nil && isLeaseNotFound(err) && attempt == 0 {
			e.buckets.forget(id)
			continue
		}
		return err
	}
}
