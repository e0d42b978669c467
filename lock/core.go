package lock

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/txnbatch"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Core is the hold engine: what every kind's acquire, wait and end share
// (acquire.go, queue.go, end.go), over one etcd client.
type Core struct {
	cli  *clientv3.Client
	cfg  Config
	keys store.Keys
	log  *slog.Logger
	// format is the storage format this node writes (format.go), set
	// before anything is written.
	format int

	// stop ends waits and background loops when the engine closes.
	stop context.Context
	// drain ends waiting acquires only, so an HTTP drain is not held up
	// by them while the recorder keeps running.
	drain context.Context

	waiters waiterLease
	leases  leasePool
	// looks counts the reads of waiters woken in the queue (look).
	looks atomic.Int64

	// etcd is how the engine calls etcd (store.Etcd): every call bounded
	// by OpTimeout and the leader's term, every failure one of ours.
	etcd *store.Etcd

	// metrics are this engine's Prometheus series (see Collector).
	metrics *hold.Metrics

	// batch groups concurrent acquire and end-hold txns (group commit).
	batch txnbatch.Batcher

	// feeds makes the engine's etcd watches (feed.go).
	feeds feeds
	// waits wakes waiters: one etcd watch fanned out in process (hub.go).
	waits *waiterHub
	// holds keeps the records of the holds this node granted, so their
	// releases need not read them (holdcache.go).
	holds holdCache
	// leaseClock knows how long the leases this node saw lately live, so
	// that an answer's expiry needs no round trip (hold/leaseclock.go).
	leaseClock hold.LeaseClock
}
