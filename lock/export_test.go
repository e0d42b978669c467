package lock

import (
	"context"
	"testing"

	"github.com/baton-dev/baton/lock/internal/core"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Hooks into the txn batcher (internal/txnbatch) for the tests of package
// lock_test: they take its slots as txns in flight would, so that a test
// decides what queues and when it goes out, instead of racing for it.

// SetTxnSlots sets how many txns e keeps in flight before requests queue.
func SetTxnSlots(e *Engine, n int) { e.core.Batch.SetLimit(n) }

// HoldTxnSlots takes every txn slot of e (txnbatch.Batcher.Hold), so the
// requests that follow queue; release sends what queued as batches.
func HoldTxnSlots(e *Engine) (release func()) { return e.core.Batch.Hold() }

// QueuedTxns is how many requests of e wait for a batch.
func QueuedTxns(e *Engine) int { return e.core.Batch.Queued() }

// Txn is the engine's batched txn, as the acquire and end-hold txns call it.
func Txn(ctx context.Context, e *Engine, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	return e.core.Batch.Txn(ctx, cmps, then, els)
}

// HubRegistrations counts the waiters' registrations with e's hub
// (internal/core/hub.go): what waiters hold while they wait.
func HubRegistrations(e *Engine) (keys int) {
	e.core.Waits.Lock()
	for _, set := range e.core.Waits.Keys {
		keys += len(set)
	}
	e.core.Waits.Unlock()
	return keys
}

// StallWatch makes e's watch named name ("recorder", "waiters" or
// "events") deaf: it drops every response from now on until the watch is
// opened again, as a wedged stream would. It returns how many times that
// watch has been opened so far.
func StallWatch(e *Engine, name string) (opened int) {
	for _, f := range e.feeds {
		if f.Name() == name {
			return int(f.Deafen())
		}
	}
	panic("lock: no watch " + name)
}

// WatchGeneration is how many times e's watch named name has been opened.
func WatchGeneration(e *Engine, name string) int {
	for _, f := range e.feeds {
		if f.Name() == name {
			return int(f.Generation())
		}
	}
	panic("lock: no watch " + name)
}

// KeptBehind is the keys of the queue entries that e's hold cache keeps
// behind the hold token of name (Engine.keepHandedOver), oldest first.
func KeptBehind(e *Engine, name string, token int64) []string {
	c := &e.core.Holds
	c.Mu.Lock()
	defer c.Mu.Unlock()
	h, ok := c.Cur[core.HoldCacheKey(name, token)]
	if !ok {
		h = c.Prev[core.HoldCacheKey(name, token)]
	}
	if h.Next == nil {
		return nil
	}
	keys := []string{h.Next.Key}
	for _, kv := range h.Next.Behind {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

// Looks is how many reads e's waiters have made when woken in the queue
// (Acquirer.look).
func Looks(e *Engine) int64 { return e.core.Looks.Load() }

// StartTrail starts the audit trail beside e, and HistoryOf reads lock
// name's history from it, for the internal tests, which cannot import
// package trail (it imports lock): the external tests' helpers set both.
var (
	StartTrail func(t testing.TB, e *Engine)
	HistoryOf  func(ctx context.Context, e *Engine, name string) ([]Event, error)
)
