package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/txnbatch"
	"github.com/baton-dev/baton/internal/watchfeed"
	"github.com/baton-dev/baton/lock/internal/fence"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Engine serves locks, sessions, fenced values and history from etcd. It is
// safe for concurrent use. Several engines, on several nodes, may share
// one etcd cluster: every guarantee holds across them.
type Engine struct {
	*Core

	stopFunc  context.CancelFunc
	drainFunc context.CancelFunc
	wg        sync.WaitGroup
	closeMu   sync.Once

	// rec records expiries from a watch of its own.
	rec *recorder
	// space holds the storage caps' tallies and the alarm (space.go).
	space space
	// fenced are the fenced values (fenced.go).
	fenced *fence.Registers
}

// New starts an engine over cli. It does not own cli: closing the engine
// leaves the client open. The expiry recorder starts at once, so every
// lease expiry from now on is recorded in the audit trail.
func New(ctx context.Context, cli *clientv3.Client, cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	stop, stopFunc := context.WithCancel(context.Background())
	e := &Engine{Core: &Core{cli: cli, cfg: cfg, keys: store.Keys{Prefix: cfg.Prefix}, log: cfg.Logger, stop: stop}, stopFunc: stopFunc}
	e.drain, e.drainFunc = context.WithCancel(stop)
	e.etcd = store.NewEtcd(cli, cfg.Embedded, cfg.OpTimeout, stop, func() { e.metrics.LeaderChanges.Inc() })
	e.batch = txnbatch.Batcher{
		KV: cli, Term: e.etcd.Term, Op: e.etcd.OpIn, Closed: e.stop.Err,
		Observe: func(n int) { e.metrics.TxnBatchSize.Observe(float64(n)) },
		Split:   func() { e.metrics.TxnBatchSplits.Inc() },
	}
	e.metrics = hold.NewMetrics(e.etcd.HasLeader)
	e.feeds = feeds{cli: cli, cfg: cfg, log: e.log, metrics: e.metrics}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.etcd.FollowLeader(e.keys.Recorder())
	}()
	e.newSpace()
	e.fenced = fence.New(fence.Config{
		Client: cli, Etcd: e.etcd, Keys: e.keys, MaxValueBytes: cfg.MaxFencedValueBytes,
		Reserve: e.reserveFenced, Recorded: e.metrics.Recorded,
	})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.runSpace()
	}()
	if err := e.etcd.WhileStarting(ctx, e.log, func() error { return e.loadFormat(ctx) }); err != nil {
		stopFunc()
		e.wg.Wait()
		return nil, err
	}
	rec, err := e.newRecorder(ctx)
	if err != nil {
		stopFunc()
		return nil, err
	}
	e.rec = rec
	// The hubs start at the revision the recorder's cursor was read at:
	// nobody waits on anything older.
	e.waits = e.newWaiterHub(rec.head + 1)
	runs := []func(context.Context){rec.run, e.waits.Feed.Run}
	for _, run := range runs {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			run(stop)
		}()
	}
	// The engine is ready once its watches hear etcd; one that has not
	// opened within OpTimeout keeps trying, and Ready says so meanwhile.
	octx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	defer cancel()
	for _, f := range e.watches() {
		select {
		case <-f.Opened():
		case <-octx.Done():
			if ctx.Err() != nil {
				e.Close()
				return nil, fmt.Errorf("open etcd watches: %w", ctx.Err())
			}
			e.log.Warn("etcd watch not open yet; the node is not ready until it is", "watch", f.Name())
		}
	}
	return e, nil
}

// feeds are the engine's etcd watches.
func (e *Engine) watches() []*watchfeed.Feed {
	return []*watchfeed.Feed{e.rec.feed, e.waits.Feed}
}

// errDeaf is wrapped in the ErrUnavailable that Ready returns while one of
// the engine's watches is not hearing etcd.
var errDeaf = errors.New("this node is not hearing etcd's watch")

// hearing returns an ErrUnavailable when one of the engine's watches has
// not heard from etcd within Config.WatchStallTimeout, and nil otherwise.
// Waiters are then not woken, or expiries not recorded,
// until the watch is open again.
func (e *Engine) hearing() error {
	for _, f := range e.watches() {
		if err := Heard(f); err != nil {
			return err
		}
	}
	return nil
}

// StopWaiting ends every acquire that is waiting in a queue (they return
// ErrClosed) and refuses new waits, so a shutdown can drain HTTP quickly.
// Everything else keeps working until Close.
func (e *Engine) StopWaiting() { e.drainFunc() }

// Close stops waits in progress (they return ErrClosed) and the background
// loops, then revokes this node's waiter lease. Calling it again is a no-op.
func (e *Engine) Close() error {
	e.closeMu.Do(func() {
		e.stopFunc()
		e.wg.Wait()
		e.waiters.close(e.Core)
	})
	return nil
}

// Client returns the etcd client the engine uses.
func (e *Engine) Client() *clientv3.Client { return e.cli }

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// CheckLeader returns an ErrUnavailable at once when the embedded member
// knows no leader (EmbeddedMember.HasLeader), and nil otherwise.
func (e *Engine) CheckLeader() error { return e.etcd.CheckLeader() }
