// Package txnbatch sends concurrent etcd txns as one: group commit. It
// knows nothing of what the txns mean; lock's acquire and end-hold txns
// go through it, and each caller gets the answer etcd would have given
// its txn alone.
//
//	b := &txnbatch.Batcher{KV: cli, Term: term, Op: op, Closed: closed}
//	resp, err := b.Txn(ctx, cmps, then, els)
package txnbatch
