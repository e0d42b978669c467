package lock

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Hooks into the txn batcher (batch.go) for the tests of package
// lock_test: they take its slots as txns in flight would, so that a test
// decides what queues and when it goes out, instead of racing for it.

// SetTxnSlots sets how many txns e keeps in flight before requests queue.
func SetTxnSlots(e *Engine, n int) {
	e.batch.mu.Lock()
	defer e.batch.mu.Unlock()
	e.batch.limit = n
}

// HoldTxnSlots takes every free txn slot of e, so the requests that follow
// queue. release gives them back, which sends what queued as batches.
func HoldTxnSlots(e *Engine) (release func()) {
	b := &e.batch
	b.mu.Lock()
	n := b.slots() - b.inFlight
	b.inFlight += n
	b.mu.Unlock()
	return func() {
		for range n {
			e.txnDone()
		}
	}
}

// QueuedTxns is how many requests of e wait for a batch.
func QueuedTxns(e *Engine) int {
	e.batch.mu.Lock()
	defer e.batch.mu.Unlock()
	return len(e.batch.queue)
}

// Txn is the engine's batched txn, as the acquire and end-hold txns call it.
func Txn(ctx context.Context, e *Engine, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	return e.txn(ctx, cmps, then, els)
}
