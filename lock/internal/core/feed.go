package core

import (
	"context"
	"log/slog"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/watchfeed"
	"github.com/baton-dev/baton/lock/internal/hold"
)

// The engine runs its etcd watches as feeds (internal/watchfeed), one per
// purpose: the expiry recorder's and the one that wakes waiters. While
// one is not hearing etcd the engine is not ready (lock.Engine.Ready). The
// audit trail beside it (package trail) makes its own, the events' and
// the history index's, through WatchConfig: with the same settings and
// metrics.

// feeds makes the etcd watches of the engine and of the audit trail,
// with their metrics.
type Feeds struct {
	Cli     *clientv3.Client
	Cfg     Config
	Log     *slog.Logger
	Metrics *hold.Metrics
}

// config is the feed named name ("recorder", "waiters", "events" or
// "history": logs, metrics, the watch's metadata) of the range from key
// that opts give, from revision from. Over a remote etcd its watch ends
// when its member loses the leader.
func (fs Feeds) Config(name, key string, from int64, opts ...clientv3.OpOption) watchfeed.Config {
	return watchfeed.Config{
		Client: fs.Cli, Name: name, Key: key, Opts: opts, From: from,
		RequireLeader: fs.Cfg.Embedded == nil, StallTimeout: fs.Cfg.WatchStallTimeout, Log: fs.Log,
		OnHearing: func(hearing bool) {
			v := 0.0
			if hearing {
				v = 1
			}
			fs.Metrics.WatchHearing.WithLabelValues(name).Set(v)
		},
		OnRestart: func(reason string) { fs.Metrics.WatchRestarts.WithLabelValues(name, reason).Inc() },
	}
}

// feed is the feed that config describes, handing its responses to
// handle and its compactions to compacted.
func (fs Feeds) Feed(name, key string, from int64, handle func(context.Context, clientv3.WatchResponse) error,
	compacted func(context.Context, int64) (int64, error), opts ...clientv3.OpOption) *watchfeed.Feed {
	cfg := fs.Config(name, key, from, opts...)
	cfg.Handle, cfg.Compacted = handle, compacted
	return watchfeed.New(cfg)
}
