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
	// format is the storage format this node writes (lock/format.go), set
	// before anything is written.
	Format int

	// stop ends waits and background loops when the engine closes.
	Stop context.Context
	// drain ends waiting acquires only, so an HTTP drain is not held up
	// by them while the recorder keeps running.
	Drain context.Context

	Waiters waiterLease
	Leases  leasePool
	// looks counts the reads of waiters woken in the queue (look).
	Looks atomic.Int64

	// etcd is how the engine calls etcd (store.Etcd): every call bounded
	// by OpTimeout and the leader's term, every failure one of ours.
	Etcd *store.Etcd

	// metrics are this engine's Prometheus series (see Collector).
	Metrics *hold.Metrics

	// batch groups concurrent acquire and end-hold txns (group commit).
	Batch txnbatch.Batcher

	// feeds makes the engine's etcd watches (feed.go).
	Feeds Feeds
	// waits wakes waiters: one etcd watch fanned out in process (hub.go).
	Waits *waiterHub
	// holds keeps the records of the holds this node granted, so their
	// releases need not read them (holdcache.go).
	Holds holdCache
	// LeaseClock knows how long the leases this node saw lately live, so
	// that an answer's expiry needs no round trip (hold/leaseclock.go).
	LeaseClock hold.LeaseClock
}
