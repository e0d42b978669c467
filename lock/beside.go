package lock

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/watchfeed"
)

// What parts of baton built beside the engine (the audit trail, package
// trail) read the cluster through: the engine's etcd calls, its keys,
// its watches' settings and metrics, and the storage format it writes.
// They read what the engine writes; the engine knows nothing of them.

// Etcd is how the engine calls etcd (store.Etcd), for the parts beside
// it to call etcd the same way and end with it.
func (e *Engine) Etcd() *store.Etcd { return e.core.Etcd }

// Keys is the engine's key schema under Config.Prefix.
func (e *Engine) Keys() store.Keys { return e.core.Keys }

// StorageFormat is the storage format this node writes (format.go).
func (e *Engine) StorageFormat() int { return e.core.Format }

// WatchConfig is an etcd watch named name (its logs, metrics and the
// watch's metadata) of the range from key that opts give, from revision
// from, with the engine's stall timeout and metrics. Its owner sets its
// Handle and Compacted.
func (e *Engine) WatchConfig(name, key string, from int64, opts ...clientv3.OpOption) watchfeed.Config {
	return e.core.Feeds.Config(name, key, from, opts...)
}
