package txnbatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testetcd"
)

// call is a queued request that puts keys in its Then branch.
func call(keys ...string) *txnCall {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpPut(k, "v")
	}
	c := &txnCall{then: ops}
	c.shape()
	return c
}

// names renders batches by the first key each call writes.
func names(calls []*txnCall) string {
	var s []string
	for _, c := range calls {
		s = append(s, string(c.then[0].KeyBytes()))
	}
	return strings.Join(s, " ")
}

// drain takes batches off b until its queue is empty.
func drain(b *Batcher) []string {
	var out []string
	for len(b.queue) > 0 {
		out = append(out, names(b.next()))
	}
	return out
}

func TestBatcher_RequestsWritingOneKeyGoToLaterBatchesInOrder(t *testing.T) {
	b := &Batcher{}
	// b1 and b2 write k, as a does; c writes a key of its own; d
	// writes both b2's other key and a fresh one.
	b.queue = []*txnCall{call("a", "k"), call("b1", "k"), call("c"), call("b2", "k", "m"), call("d", "m")}
	got := drain(b)
	want := []string{"a c", "b1", "b2", "d"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches %q, want %q", got, want)
	}
}

func TestBatcher_DeletesConflictWithPutsAndThenElseMayShareAKey(t *testing.T) {
	b := &Batcher{}
	release := &txnCall{then: []clientv3.Op{clientv3.OpPut("rel", ""), clientv3.OpDelete("lock")}}
	release.shape()
	// Like an acquire: the lock key in Then, a queue key in Else, and
	// the same key in both branches (etcd allows that: one runs).
	acquire := &txnCall{
		then: []clientv3.Op{clientv3.OpPut("acq", ""), clientv3.OpPut("lock", ""), clientv3.OpPut("both", "")},
		els:  []clientv3.Op{clientv3.OpPut("q", ""), clientv3.OpPut("both", "")},
	}
	acquire.shape()
	b.queue = []*txnCall{release, acquire, call("other")}
	if got := drain(b); fmt.Sprint(got) != fmt.Sprint([]string{"rel other", "acq"}) {
		t.Fatalf("batches %q", got)
	}
}

func TestBatcher_BatchesStayWithinEtcdsOpBudgetAndSize(t *testing.T) {
	// 200 one-put requests: each needs 1 of the budget, so a batch holds
	// n with n+1 <= 128.
	b := &Batcher{}
	for i := range 200 {
		b.queue = append(b.queue, call(fmt.Sprintf("k%03d", i)))
	}
	first := b.next()
	if len(first) != etcdMaxTxnOps-1 || len(b.queue) != 200-len(first) {
		t.Fatalf("first batch of %d, %d left; want %d", len(first), len(b.queue), etcdMaxTxnOps-1)
	}
	// A nested txn counts its own ops too: 10 puts in a nested txn make
	// a cost of 1+10 for its request.
	b = &Batcher{}
	for i := range 200 {
		var nested []clientv3.Op
		for j := range 10 {
			nested = append(nested, clientv3.OpPut(fmt.Sprintf("n%03d-%d", i, j), ""))
		}
		c := &txnCall{then: []clientv3.Op{clientv3.OpPut(fmt.Sprintf("k%03d", i), ""), clientv3.OpTxn(nil, nested, nil)}}
		c.shape()
		b.queue = append(b.queue, c)
	}
	if c := b.queue[0].cost; c != 2+10 {
		t.Fatalf("cost %d, want 12", c)
	}
	if n := len(b.next()); n != etcdMaxTxnOps-12 {
		t.Fatalf("batch of %d, want %d", n, etcdMaxTxnOps-12)
	}
	// Large values: cut by size.
	b = &Batcher{}
	big := strings.Repeat("x", 100<<10)
	for i := range 20 {
		c := &txnCall{then: []clientv3.Op{clientv3.OpPut(fmt.Sprintf("k%03d", i), big)}}
		c.shape()
		b.queue = append(b.queue, c)
	}
	if n := len(b.next()); n != maxBatchBytes/(100<<10) {
		t.Fatalf("batch of %d 100 KiB requests, want %d", n, maxBatchBytes/(100<<10))
	}
}

func TestBatcher_ARangeDeleteGoesInATxnOfItsOwn(t *testing.T) {
	b := &Batcher{}
	ranged := &txnCall{then: []clientv3.Op{clientv3.OpDelete("r", clientv3.WithPrefix())}}
	ranged.shape()
	b.queue = []*txnCall{call("a"), ranged, call("b")}
	if got := drain(b); fmt.Sprint(got) != fmt.Sprint([]string{"a", "r", "b"}) {
		t.Fatalf("batches %q", got)
	}
}

// TestBatcher_EtcdAcceptsTheLargestBatchAndRefusesOneMore checks the op
// budget against a real member: etcd counts a nested txn's ops against
// what the outer txn left, not per level.
func TestBatcher_EtcdAcceptsTheLargestBatchAndRefusesOneMore(t *testing.T) {
	t.Parallel()
	cfg := testetcd.Config(t)
	cfg.MaxTxnOps = 128 // etcd's default, as an external cluster has it
	cli := testetcd.StartConfig(t, cfg).Client()
	ctx := context.Background()
	batch := func(n int) error {
		ops := make([]clientv3.Op, n)
		for i := range ops {
			k := fmt.Sprintf("k%03d", i)
			ops[i] = clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)},
				[]clientv3.Op{clientv3.OpPut(k, "v")}, []clientv3.Op{clientv3.OpGet(k)})
		}
		_, err := cli.Txn(ctx).Then(ops...).Commit()
		return err
	}
	c := &txnCall{cmps: []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("k"), "=", 0)},
		then: []clientv3.Op{clientv3.OpPut("k", "v")}, els: []clientv3.Op{clientv3.OpGet("k")}}
	c.shape()
	largest := etcdMaxTxnOps - c.cost
	if err := batch(largest); err != nil {
		t.Fatalf("batch of %d: %v", largest, err)
	}
	if err := batch(largest + 1); !refusedWhole(err) || rpctypes.ErrorDesc(err) != rpctypes.ErrTooManyOps.Error() {
		t.Fatalf("batch of %d: %v, want too many operations", largest+1, err)
	}
}

// TestBatcher_AnUrgentRequestGoesBesideTheTxnInFlightOneAtATime: with
// every slot busy, a TxnUrgent request commits at once instead of waiting
// for the next batch; a second one, while the first is out, queues as
// Txn does.
func TestBatcher_AnUrgentRequestGoesBesideTheTxnInFlightOneAtATime(t *testing.T) {
	t.Parallel()
	cli := testetcd.Start(t).Client()
	b := &Batcher{KV: cli, Term: context.Background, Op: func(ctx, _ context.Context) (context.Context, context.CancelFunc) {
		return context.WithCancel(ctx)
	}, Closed: func() error { return nil }}
	b.inFlight = b.slots() // a txn in flight that never completes here
	put := func(k string) ([]clientv3.Cmp, []clientv3.Op) {
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)}, []clientv3.Op{clientv3.OpPut(k, "v")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmps, then := put("first")
	resp, err := b.TxnUrgent(ctx, cmps, then, nil)
	if err != nil || !resp.Succeeded {
		t.Fatalf("urgent request with the slot busy: %v, %v; want it committed at once", resp, err)
	}

	b.mu.Lock()
	b.urgent = true // the first is still out
	b.mu.Unlock()
	qctx, leave := context.WithCancel(ctx)
	done := make(chan error, 1)
	cmps, then = put("second")
	go func() {
		_, err := b.TxnUrgent(qctx, cmps, then, nil)
		done <- err
	}()
	poll.Until(t, 5*time.Second, "the second urgent request queued", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == 1
	})
	leave()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued urgent request, withdrawn: %v, want context.Canceled", err)
	}
	if got, err := cli.Get(ctx, "second"); err != nil || got.Count != 0 {
		t.Fatalf("the withdrawn request was sent: %v, %v", got, err)
	}
}
