package core

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/txnbatch"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Engine is the hold engine: what every kind's acquire, wait and end share
// (acquire.go, queue.go, end.go), over one etcd client.
type Engine struct {
	Cli  *clientv3.Client
	Cfg  Config
	Keys store.Keys
	Log  *slog.Logger
	// Format is the storage format this node writes (lock/format.go), set
	// before anything is written.
	Format int

	// Stop ends waits and background loops when the engine closes.
	Stop context.Context
	// drain ends waiting acquires only (StopWaiting), so an HTTP drain is
	// not held up by them while the recorder keeps running.
	drain     context.Context
	drainFunc context.CancelFunc

	Waiters waiterLease
	Leases  leasePool
	// Looks counts the reads of waiters woken in the queue (look).
	Looks atomic.Int64

	// Etcd is how the engine calls etcd (store.Etcd): every call bounded
	// by OpTimeout and the leader's term, every failure one of ours.
	Etcd *store.Etcd

	// Metrics are this engine's Prometheus series (lock.Engine.Collector).
	Metrics *hold.Metrics

	// Batch groups concurrent acquire and end-hold txns (group commit).
	Batch txnbatch.Batcher

	// Feeds makes the engine's etcd watches (feed.go).
	Feeds Feeds
	// Waits wakes waiters: one etcd watch fanned out in process (hub.go).
	Waits *waiterHub
	// Holds keeps the records of the holds this node granted, so their
	// releases need not read them (holdcache.go).
	Holds holdCache
	// LeaseClock knows how long the leases this node saw lately live, so
	// that an answer's expiry needs no round trip (hold/leaseclock.go).
	LeaseClock hold.LeaseClock
	// owners remembers who created the sessions checked lately
	// (sessionowners.go).
	owners sessionOwners
}

// New makes the hold engine over cli with cfg, which the caller has
// checked (Config.Validate); its waits end with stop. Its waiters' hub
// (Waits) is the caller's to set, from NewWaiterHub, at the revision the
// expiry recorder resumes from.
func New(cli *clientv3.Client, cfg Config, stop context.Context) *Engine {
	e := &Engine{Cli: cli, Cfg: cfg, Keys: store.Keys{Prefix: cfg.Prefix}, Log: cfg.Logger, Stop: stop}
	e.drain, e.drainFunc = context.WithCancel(stop)
	e.Etcd = store.NewEtcd(cli, cfg.Embedded, cfg.OpTimeout, stop, func() { e.Metrics.LeaderChanges.Inc() })
	e.Metrics = hold.NewMetrics(e.Etcd.HasLeader)
	e.Batch = txnbatch.Batcher{
		KV: cli, Term: e.Etcd.Term, Op: e.Etcd.OpIn, Closed: stop.Err,
		Observe: func(n int) { e.Metrics.TxnBatchSize.Observe(float64(n)) },
		Split:   func() { e.Metrics.TxnBatchSplits.Inc() },
	}
	e.Feeds = Feeds{Cli: cli, Cfg: cfg, Log: e.Log, Metrics: e.Metrics}
	return e
}

// StopWaiting ends every acquire waiting in a queue (they return
// ErrClosed) and refuses new waits.
func (e *Engine) StopWaiting() { e.drainFunc() }
