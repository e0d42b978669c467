package trail

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/watchfeed"
	"github.com/baton-dev/baton/lock"
	"github.com/prometheus/client_golang/prometheus"
)

// Trail is the audit trail: it reads etcd's revisions into the trail
// (derive.go, historyindex.go), keeps compaction behind its cursor
// (compactor.go), and serves history pages, event streams and election
// observations (history.go, events.go, observe.go). It runs beside a
// hold engine (lock.Engine) and reads the keys the engine writes; the
// engine knows nothing of it. It is safe for concurrent use.
type Trail struct {
	eng     *lock.Engine
	cli     *clientv3.Client
	etcd    *store.Etcd
	keys    store.Keys
	cfg     Config
	log     *slog.Logger
	metrics *trailMetrics
	// format is the storage format the cluster writes, as the engine
	// read it when it started (lock/format.go).
	format int
	// stop ends the trail's loops, and drain the event streams.
	stop, drain         context.Context
	stopFunc, drainFunc context.CancelFunc
	wg                  sync.WaitGroup
	closeOnce           sync.Once

	// hist keeps the indexed trail (historyindex.go), and streams feeds
	// event streams (streamhub.go).
	hist    *historyIndex
	streams *streamHub
	// subs counts the subscriptions in progress (MaxEventStreams).
	subs atomic.Int64
}

// DefaultConfig returns the defaults that docs/API.md documents.
func DefaultConfig() Config {
	return Config{
		HistoryRetention: 7 * 24 * time.Hour,
		// A node's 1,000 event streams buffer up to 1,024 events each.
		MaxEventStreams: 1000,
		// A trail held up for an hour is an outage worth a page, not
		// one worth the locks; under load a quarter of the quota beside
		// a full trail (half of it, historyMaxEventsFor) is reached
		// first.
		TrailHoldBack:      time.Hour,
		TrailHoldBackQuota: 0.75,
	}
}

// New starts the trail beside eng, which it reads the cluster through:
// its etcd calls, keys, watches and storage format. Close it before eng.
func New(ctx context.Context, eng *lock.Engine, cfg Config) (*Trail, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ec := eng.Config()
	if cfg.Logger == nil {
		cfg.Logger = cmp.Or(ec.Logger, slog.Default())
	}
	etcd := eng.Etcd()
	stop, stopFunc := context.WithCancel(context.Background())
	drain, drainFunc := context.WithCancel(stop)
	t := &Trail{eng: eng, cli: etcd.Cli, etcd: etcd, keys: eng.Keys(), cfg: cfg, log: cfg.Logger, format: eng.StorageFormat(),
		stop: stop, stopFunc: stopFunc, drain: drain, drainFunc: drainFunc}
	t.hist = newHistoryIndex(t)
	t.metrics = newTrailMetrics(eng.CountEvents, t.hist.events)
	var from int64
	err := etcd.WhileStarting(ctx, t.log, func() error {
		octx, done := etcd.Op(ctx)
		defer done()
		resp, err := t.cli.Get(octx, t.keys.Format(), clientv3.WithCountOnly())
		if err != nil {
			return etcd.Err(ctx, "read the current revision", err)
		}
		from = resp.Header.Revision + 1
		return nil
	})
	if err != nil {
		stopFunc()
		return nil, err
	}
	t.streams = t.newStreamHub(from)
	runs := []func(context.Context){t.streams.Feed.Run, t.hist.run}
	if ec.Embedded != nil && t.cfg.CompactionRetention > 0 {
		runs = append(runs, (&compactor{t: t}).run)
	}
	for _, run := range runs {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			run(stop)
		}()
	}
	octx, cancel := context.WithTimeout(ctx, ec.OpTimeout)
	defer cancel()
	select {
	case <-t.streams.Feed.Opened():
	case <-octx.Done():
		if ctx.Err() != nil {
			t.Close()
			return nil, fmt.Errorf("open the events watch: %w", ctx.Err())
		}
		t.log.Warn("etcd watch not open yet; the node is not ready until it is", "watch", t.streams.Feed.Name())
	}
	return t, nil
}

// feed is the trail's etcd watch named name of the range from key that
// opts give, from revision from, handing its responses to handle and its
// compactions to compacted (the engine's watches' settings and metrics).
func (t *Trail) feed(name, key string, from int64, handle func(context.Context, clientv3.WatchResponse) error,
	compacted func(context.Context, int64) (int64, error), opts ...clientv3.OpOption) *watchfeed.Feed {
	cfg := t.eng.WatchConfig(name, key, from, opts...)
	cfg.Handle, cfg.Compacted = handle, compacted
	return watchfeed.New(cfg)
}

// Config returns the trail's configuration.
func (t *Trail) Config() Config { return t.cfg }

// StopStreams ends every event stream (they return ErrClosed) and
// refuses new ones, so a shutdown can drain HTTP quickly.
func (t *Trail) StopStreams() { t.drainFunc() }

// Close stops the trail's loops and streams. Calling it again is a no-op.
func (t *Trail) Close() error {
	t.closeOnce.Do(func() {
		t.stopFunc()
		t.wg.Wait()
	})
	return nil
}

// Ready returns an ErrUnavailable while the trail's event watch is not
// hearing etcd: streams are not fed until it is open again.
func (t *Trail) Ready() error { return lock.Heard(t.streams.Feed) }

// Collector returns the trail's metrics for a Prometheus registry:
// baton_history_events, baton_history_dropped_events_total,
// baton_trail_gaps_total and baton_trail_hold_back_ratio. Register it
// once per registry, beside the engine's.
func (t *Trail) Collector() prometheus.Collector { return t.metrics }

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.HistoryRetention < time.Second:
		return errors.New("trail: HistoryRetention must be at least 1s")
	case c.HistoryMaxEvents < 0 || c.HistoryMaxEvents > 0 && c.HistoryMaxEvents < historyBuckets:
		return fmt.Errorf("trail: HistoryMaxEvents must be 0 (derived from the quota) or at least %d", historyBuckets)
	case c.MaxEventStreams < 0:
		return errors.New("trail: MaxEventStreams must not be negative (0 means no cap)")
	case c.BackendQuota < 0:
		return errors.New("trail: BackendQuota must not be negative (0 means etcd's default)")
	case c.CompactionRetention < 0:
		return errors.New("trail: CompactionRetention must not be negative (0 leaves compaction to etcd)")
	case c.CompactionRetention > 0 && c.TrailHoldBack <= 0:
		return errors.New("trail: TrailHoldBack (--trail-hold-back) must be positive")
	case c.CompactionRetention > 0 && !(c.TrailHoldBackQuota > 0 && c.TrailHoldBackQuota <= 1):
		return errors.New("trail: TrailHoldBackQuota (--trail-hold-back-quota) must be above 0 and at most 1")
	case int64(c.HistoryMaxEvents) > historyMaxEventsFor(c.BackendQuota):
		return fmt.Errorf("trail: HistoryMaxEvents (--history-max-events) of %d could fill half of etcd's quota of %d bytes (--etcd-quota-bytes) by itself: at most %d",
			c.HistoryMaxEvents, cmp.Or(c.BackendQuota, store.DefaultBackendQuota), historyMaxEventsFor(c.BackendQuota))
	}
	return nil
}

// backendQuota is etcd's backend quota in bytes.
func (c Config) backendQuota() int64 { return cmp.Or(c.BackendQuota, store.DefaultBackendQuota) }
