package lock

import (
	"context"
	"log/slog"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
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
	metrics *metrics
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
