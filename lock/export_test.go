package lock

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Hooks into the txn batcher (internal/txnbatch) for the tests of package
// lock_test: they take its slots as txns in flight would, so that a test
// decides what queues and when it goes out, instead of racing for it.

// SetTxnSlots sets how many txns e keeps in flight before requests queue.
func SetTxnSlots(e *Engine, n int) { e.batch.SetLimit(n) }

// HoldTxnSlots takes every txn slot of e (txnbatch.Batcher.Hold), so the
// requests that follow queue; release sends what queued as batches.
func HoldTxnSlots(e *Engine) (release func()) { return e.batch.Hold() }

// QueuedTxns is how many requests of e wait for a batch.
func QueuedTxns(e *Engine) int { return e.batch.Queued() }

// Txn is the engine's batched txn, as the acquire and end-hold txns call it.
func Txn(ctx context.Context, e *Engine, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	return e.batch.Txn(ctx, cmps, then, els)
}

// HubRegistrations counts the waiters' registrations with e's hub
// (hub.go): what waiters hold while they wait.
func HubRegistrations(e *Engine) (keys int) {
	e.waits.Lock()
	for _, set := range e.waits.keys {
		keys += len(set)
	}
	e.waits.Unlock()
	return keys
}

// StallWatch makes e's watch named name ("recorder", "waiters" or
// "events") deaf: it drops every response from now on until the watch is
// opened again, as a wedged stream would. It returns how many times that
// watch has been opened so far.
func StallWatch(e *Engine, name string) (opened int) {
	for _, f := range e.watches() {
		if f.Name() == name {
			return int(f.Deafen())
		}
	}
	panic("lock: no watch " + name)
}

// WatchGeneration is how many times e's watch named name has been opened.
func WatchGeneration(e *Engine, name string) int {
	for _, f := range e.watches() {
		if f.Name() == name {
			return int(f.Generation())
		}
	}
	panic("lock: no watch " + name)
}

// KeptBehind is the keys of the queue entries that e's hold cache keeps
// behind the hold token of name (Engine.keepHandedOver), oldest first.
func KeptBehind(e *Engine, name string, token int64) []string {
	c := &e.holds
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.cur[holdCacheKey(name, token)]
	if !ok {
		h = c.prev[holdCacheKey(name, token)]
	}
	if h.next == nil {
		return nil
	}
	keys := []string{h.next.key}
	for _, kv := range h.next.behind {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

// Looks is how many reads e's waiters have made when woken in the queue
// (acquirer.look).
func Looks(e *Engine) int64 { return e.looks.Load() }

// StartTrail starts the audit trail beside e, and HistoryOf reads lock
// name's history from it, for the internal tests, which cannot import
// package trail (it imports lock): the external tests' helpers set both.
var (
	StartTrail func(t testing.TB, e *Engine)
	HistoryOf  func(ctx context.Context, e *Engine, name string) ([]Event, error)
)
