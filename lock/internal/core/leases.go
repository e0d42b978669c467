package core

import (
	"context"
	"sync"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// waiterLease is the one lease under which this node puts the queue
// entries of acquires without a session (a session's waits wait at its
// place, under its lease: place.go). Sharing it costs no lease grant per
// waiter; a waiter that leaves deletes its entry itself, and if the node
// dies etcd drops every entry with the lease after WaiterTTL, so a dead
// node never blocks a queue.
type waiterLease struct {
	mu     sync.Mutex
	id     clientv3.LeaseID
	lost   chan struct{} // closed when id stops being kept alive
	cancel context.CancelFunc

	// Queue entry names: see slot.
	slotMu sync.Mutex
	free   []uint64
	slots  uint64
}

// slot returns a number for a queue entry's key, unique among this node's
// waits in progress, and put gives it back once the entry is gone.
//
// Numbers are reused (last freed, first taken) so that the keys under a
// lock's queue prefix stay as few as the node's waits at once. A deleted
// key stays in etcd's key index until the next compaction, and every
// range over the prefix visits it: FIFO's compares and reads range over
// the queue on each acquire, release and wake-up, so a new key per wait
// would leave dead keys behind at a contended lock's handover rate, each
// visited by every range (docs/PERFORMANCE.md, "Contention and the
// queue"). A reused key gets a new generation instead, which etcd skips
// at no cost. A reused key is told apart from its earlier life by its
// CreateRevision, which every check of a queue entry compares.
func (w *waiterLease) slot() uint64 {
	w.slotMu.Lock()
	defer w.slotMu.Unlock()
	if n := len(w.free); n > 0 {
		s := w.free[n-1]
		w.free = w.free[:n-1]
		return s
	}
	w.slots++
	return w.slots
}

// putSlot gives s back. Only call it once the entry keyed by s is known to
// be gone: a put on a key that still exists keeps its CreateRevision, and
// the next waiter would take the old one's place in the queue.
func (w *waiterLease) putSlot(s uint64) {
	w.slotMu.Lock()
	w.free = append(w.free, s)
	w.slotMu.Unlock()
}

// get returns the live waiter lease, granting one if needed, and a channel
// closed when that lease is lost (its entries are then gone).
func (w *waiterLease) Get(ctx context.Context, e *Engine) (clientv3.LeaseID, <-chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.id != 0 {
		return w.id, w.lost, nil
	}
	if e.Stop.Err() != nil {
		return 0, nil, hold.ErrClosed
	}
	var resp *clientv3.LeaseGrantResponse
	err := e.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = e.Cli.Grant(octx, store.TTLSeconds(e.Cfg.WaiterTTL))
		return err
	})
	if err != nil {
		return 0, nil, e.Etcd.Err(ctx, "grant waiter lease", err)
	}
	kctx, cancel := context.WithCancel(e.Stop)
	ch, err := e.Cli.KeepAlive(kctx, resp.ID)
	if err != nil {
		cancel()
		return 0, nil, e.Etcd.Err(ctx, "keep waiter lease alive", err)
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

// forget drops id, a waiter lease etcd no longer has, so that the next
// get grants another; its keep-alives stop, and its lost channel closes.
func (w *waiterLease) forget(id clientv3.LeaseID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.id == id {
		w.id = 0
		w.cancel()
	}
}

func (w *waiterLease) Close(e *Engine) {
	w.mu.Lock()
	id, cancel := w.id, w.cancel
	w.id = 0
	w.mu.Unlock()
	if id == 0 {
		return
	}
	cancel()
	ctx, done := e.Etcd.CleanupCtx()
	defer done()
	if _, err := e.Cli.Revoke(ctx, id); err != nil && !store.IsLeaseNotFound(err) {
		e.Log.Warn("revoke waiter lease", "lease", store.LeaseHex(id), "err", err)
	}
}

// leasePool keeps the own leases of released locks, and of acquires that
// did not win, for the next acquire with the same TTL on this node. A
// lease grant is a raft entry (and an fsync) and so is its revoke; a
// keep-alive is neither. Reusing a lease makes an own-lease
// acquire+release cycle two raft entries (the acquire and release txns)
// instead of four.
//
// A pooled lease holds no key: release deletes the lock key in its txn,
// and nothing else is put under an own lease. take refreshes it to its full
// TTL with a keep-alive before handing it out, and a lease that expired in
// the pool is simply dropped (etcd already revoked it).
//
// One race is accepted: a holder's renew that read its lock just before
// its own release can keep the lease alive just after the next holder got
// it. That stretches the new hold, granted a moment before with the full
// TTL, by that moment; it can never make a stale token hold anything.
type leasePool struct {
	mu   sync.Mutex
	Free map[int64][]pooledLease // by granted TTL in seconds
}

type pooledLease struct {
	id clientv3.LeaseID
	at time.Time // when it entered the pool; it lives TTL after at the most
}

// maxPooledPerTTL bounds the pool: a burst of releases leaves at most this
// many idle leases per TTL, each expiring by itself within its TTL.
const maxPooledPerTTL = 256

// put offers an idle lease; false means the pool is full, and the caller
// should revoke it.
func (p *leasePool) put(id clientv3.LeaseID, ttl int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.Free[ttl]) >= maxPooledPerTTL {
		return false
	}
	if p.Free == nil {
		p.Free = map[int64][]pooledLease{}
	}
	p.Free[ttl] = append(p.Free[ttl], pooledLease{id: id, at: time.Now()})
	return true
}

// take returns a pooled lease of ttl seconds, refreshed to its full TTL,
// and when the refresh was sent; id 0 means none: grant one.
func (p *leasePool) take(ctx context.Context, e *Engine, ttl int64) (clientv3.LeaseID, time.Time) {
	for {
		p.mu.Lock()
		free := p.Free[ttl]
		if len(free) == 0 {
			p.mu.Unlock()
			return 0, time.Time{}
		}
		// The newest first: it is the least likely to have run out.
		pl := free[len(free)-1]
		p.Free[ttl] = free[:len(free)-1]
		p.mu.Unlock()
		if time.Since(pl.at) >= time.Duration(ttl)*time.Second {
			continue // surely expired: nobody kept it alive in the pool
		}
		start := time.Now()
		octx, done := e.Etcd.Op(ctx)
		ka, err := e.Cli.KeepAliveOnce(octx, pl.id)
		done()
		if err == nil && ka.TTL == ttl {
			return pl.id, start
		}
		if err != nil && !store.IsLeaseNotFound(err) {
			// etcd is in trouble: the grant that follows will say so; the
			// lease, if alive, expires by itself.
			return 0, time.Time{}
		}
	}
}

// EnsureLease grants the lock's own lease. A lease granted long ago may
// have run down while we waited; it is replaced once half its TTL passed,
// so a granted lock always starts with most of its TTL.
func (a *Acquirer) EnsureLease(ctx context.Context) error {
	if a.Session != 0 {
		// A session lock's TTL is its session's: readers take it from the
		// lease (leaseExpiry), so acquire reads nothing more here.
		return nil
	}
	if a.Lease != 0 && time.Since(a.grantedAt) < time.Duration(a.LeaseTTL)*time.Second/2 {
		return nil
	}
	if a.Lease != 0 && a.Lease == a.QueuedLease {
		// A release may grant the lock under this lease: refresh it.
		if err := a.keepQueuedLease(ctx); err != nil || a.Lease != 0 {
			return err
		}
	}
	a.DropLease()
	// etcd raises a TTL below its floor: pooled leases carry the granted
	// TTL, so only one asked for with the same TTL is taken.
	want := store.TTLSeconds(a.Req.TTL)
	if id, at := a.E.Leases.take(ctx, a.E, want); id != 0 {
		a.Lease, a.LeaseTTL, a.grantedAt = id, want, at
		return nil
	}
	var (
		start time.Time
		resp  *clientv3.LeaseGrantResponse
	)
	err := a.E.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		start = time.Now()
		resp, err = a.E.Cli.Grant(octx, want)
		return err
	})
	if err != nil {
		return a.E.Etcd.Err(ctx, "grant lease", err)
	}
	a.Lease, a.LeaseTTL, a.grantedAt = resp.ID, resp.TTL, start
	return nil
}

// keepQueuedLease refreshes the own lease that our queue entry names to
// its full TTL with a keep-alive (no raft entry). If the lease is gone,
// the entry can no longer be granted (the release falls back to a plain
// one), and the next attempt takes a new lease.
//
// A keep-alive that fails for etcd's own reasons (store.IsUnavailable: a leader
// change, not primary, no leader) is sent again until the lease would run
// out: etcd keeps a lease whose keep-alives fail until its TTL has passed
// (and a new leader renews every lease in full as it takes over), so the
// wait goes on.
// Only once the lease may have expired unrenewed does the wait fail with
// ErrUnavailable, since no grant can then be promised under it.
func (a *Acquirer) keepQueuedLease(ctx context.Context) error {
	e := a.E
	runsOut := a.grantedAt.Add(time.Duration(a.LeaseTTL) * time.Second)
	// No try outlives the lease: past runsOut it may be gone.
	tctx, cancel := context.WithDeadline(ctx, runsOut)
	defer cancel()
	pause := store.NotAppliedPause
	for {
		start := time.Now()
		octx, done := e.Etcd.Op(tctx)
		ka, err := e.Cli.KeepAliveOnce(octx, a.Lease)
		done()
		switch {
		case err == nil:
			a.LeaseTTL, a.grantedAt = ka.TTL, start
			return nil
		case store.IsLeaseNotFound(err):
			a.Lease, a.QueuedLease = 0, 0
			return nil
		case !store.IsUnavailable(err) || ctx.Err() != nil || e.Stop.Err() != nil:
			return e.Etcd.Err(ctx, "keep the queued lease alive", err)
		}
		left := time.Until(runsOut)
		if left <= 0 {
			return e.Etcd.Err(ctx, "keep the queued lease alive", err)
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-e.drain.Done():
		}
		t.Stop()
		if e.drain.Err() != nil {
			return hold.ErrClosed
		}
		pause = min(2*pause, time.Second)
	}
}

// topUpLease gives a waiter's hold its full TTL, as a direct acquire's
// hold starts with: users size a TTL for their work, not for their wait.
// While it waited, the lease its queue entry named was kept alive only
// every third of its TTL (awaitChange), so by the grant it may have run
// down by a third. A keep-alive (no raft entry) tops it up, unless it was
// refreshed within the last tenth of its TTL: a lock handed from waiter
// to waiter within moments pays no round trip. If etcd does not answer
// within the op timeout, the hold keeps what is left, and its expiry
// says so.
func (a *Acquirer) topUpLease(ctx context.Context) {
	ttl := time.Duration(a.LeaseTTL) * time.Second
	if a.Lease == 0 || time.Since(a.grantedAt) < ttl/10 {
		return
	}
	start := time.Now()
	octx, done := a.E.Etcd.Op(ctx)
	ka, err := a.E.Cli.KeepAliveOnce(octx, a.Lease)
	done()
	if err == nil {
		a.LeaseTTL, a.grantedAt = ka.TTL, start
	}
}

// DropLease gives the own lease back to the pool, or revokes it, if no
// lock was granted with it.
func (a *Acquirer) DropLease() {
	if a.Lease == 0 || a.used {
		return
	}
	id := a.Lease
	a.Lease = 0
	// A lease in the pool must hold no key, now or later, or the pool's
	// keep-alives would keep the key for good.
	if a.unsure || id == a.QueuedLease {
		// An acquire txn of unknown outcome may have put the lock under
		// it, or our queue entry may still name it (leaving the queue
		// failed) for a release to grant. The revoke is not in the
		// answer's way: with etcd in trouble it may take its whole
		// bound, and if it fails the lease, kept alive by nobody, ends
		// by itself.
		go a.E.RevokeLease(store.LeaseHex(id))
		return
	}
	if a.E.Leases.put(id, a.LeaseTTL) {
		return
	}
	ctx, done := a.E.Etcd.CleanupCtx()
	defer done()
	err := a.E.Etcd.RetryCleanup(ctx, func(ctx context.Context) error {
		_, err := a.E.Cli.Revoke(ctx, id)
		return err
	})
	if err != nil && !store.IsLeaseNotFound(err) {
		a.E.Log.Warn("revoke unused lease", "lease", store.LeaseHex(id), "err", err)
	}
}

// LeaseMarkOp puts lease id's marker unless it is there: a txn's compare
// and no write but the first time a lease holds a lock (a pooled lease
// keeps its marker from one hold to the next).
func (e *Engine) LeaseMarkOp(id clientv3.LeaseID) clientv3.Op {
	key := e.Keys.LeaseMark(id)
	return clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(key, "", clientv3.WithLease(id))}, nil)
}
