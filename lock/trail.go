package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/prometheus/client_golang/prometheus"
)

// trail is the audit trail: it reads etcd's revisions into the trail
// (derive.go, historyindex.go), keeps compaction behind its cursor
// (compactor.go), and serves history pages and event streams
// (history.go, events.go). It shares with the hold engine only what
// this struct holds, and the engine reaches it only through Engine's
// History, Subscribe and EventStreams: the trail reads the keys the
// engine writes, and the engine knows nothing of how it does.
type trail struct {
	cli     *clientv3.Client
	etcd    *store.Etcd
	keys    store.Keys
	cfg     Config
	log     *slog.Logger
	metrics *trailMetrics
	feeds   feeds
	// format is the storage format the cluster writes, as the engine
	// read it when it started (format.go).
	format int
	// stop ends the trail's loops, and drain the event streams.
	stop, drain context.Context

	// hist keeps the indexed trail (historyindex.go), and streams feeds
	// event streams (streamhub.go).
	hist    *historyIndex
	streams *streamHub
	// subs counts the subscriptions in progress (MaxEventStreams).
	subs atomic.Int64
}

// newTrail is the trail over the engine's etcd calls, keys, config, logs
// and watches; events is the engine's count of the audit events the node
// writes, which the trail adds to. stop ends its loops and drain its
// event streams.
func newTrail(etcd *store.Etcd, keys store.Keys, cfg Config, log *slog.Logger, fs feeds, events *prometheus.CounterVec, stop, drain context.Context) *trail {
	t := &trail{cli: etcd.Cli, etcd: etcd, keys: keys, cfg: cfg, log: log, feeds: fs, stop: stop, drain: drain}
	t.hist = newHistoryIndex(t)
	t.metrics = newTrailMetrics(events, t.hist.events)
	return t
}

// start readies the trail for the cluster's storage format, with its
// event streams fed from revision from on, and returns its loops, for
// the engine to run until stop ends.
func (t *trail) start(format int, from int64) []func(context.Context) {
	t.format = format
	t.streams = t.newStreamHub(from)
	runs := []func(context.Context){t.streams.Feed.Run, t.hist.run}
	if t.cfg.Embedded != nil && t.cfg.CompactionRetention > 0 {
		runs = append(runs, (&compactor{t: t}).run)
	}
	return runs
}

// History returns a page of the audit trail: see trail.History.
func (e *Engine) History(ctx context.Context, o HistoryOptions) ([]Event, int64, error) {
	return e.trail.History(ctx, o)
}

// Subscribe streams the audit trail's events: see trail.Subscribe.
func (e *Engine) Subscribe(ctx context.Context, o SubscribeOptions) (*Subscription, error) {
	return e.trail.Subscribe(ctx, o)
}

// EventStreams is how many event streams this engine serves.
func (e *Engine) EventStreams() int { return e.trail.EventStreams() }

// validateTrail reports the first of the trail's settings that cannot
// work.
func (c Config) validateTrail() error {
	switch {
	case c.HistoryRetention < time.Second:
		return errors.New("lock: HistoryRetention must be at least 1s")
	case c.HistoryMaxEvents < 0 || c.HistoryMaxEvents > 0 && c.HistoryMaxEvents < historyBuckets:
		return fmt.Errorf("lock: HistoryMaxEvents must be 0 (derived from the quota) or at least %d", historyBuckets)
	case c.CompactionRetention < 0:
		return errors.New("lock: CompactionRetention must not be negative (0 leaves compaction to etcd)")
	case c.CompactionRetention > 0 && c.TrailHoldBack <= 0:
		return errors.New("lock: TrailHoldBack (--trail-hold-back) must be positive")
	case c.CompactionRetention > 0 && !(c.TrailHoldBackQuota > 0 && c.TrailHoldBackQuota <= 1):
		return errors.New("lock: TrailHoldBackQuota (--trail-hold-back-quota) must be above 0 and at most 1")
	case int64(c.HistoryMaxEvents) > historyMaxEventsFor(c.BackendQuota):
		return fmt.Errorf("lock: HistoryMaxEvents (--history-max-events) of %d could fill half of etcd's quota of %d bytes (--etcd-quota-bytes) by itself: at most %d",
			c.HistoryMaxEvents, cmp.Or(c.BackendQuota, defaultBackendQuota), historyMaxEventsFor(c.BackendQuota))
	}
	return nil
}
