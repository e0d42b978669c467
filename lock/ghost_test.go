package lock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// commitThenFail is a KV whose next txn that writes a lock key, once
// armed, commits and then reports a timeout: the ambiguous outcome of a
// leader change or of OpTimeout running out while etcd applied the txn.
// Txns that write no lock key (the history index's, the recorder's) pass,
// whenever they run.
type commitThenFail struct {
	clientv3.KV
	armed atomic.Bool
}

func (k *commitThenFail) Txn(ctx context.Context) clientv3.Txn {
	return &doubtfulTxn{Txn: k.KV.Txn(ctx), kv: k}
}

type doubtfulTxn struct {
	clientv3.Txn
	kv     *commitThenFail
	writes bool // it writes a lock key (writesLock)
}

func (t *doubtfulTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *doubtfulTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.writes = t.writes || writesLock(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *doubtfulTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.writes = t.writes || writesLock(ops)
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *doubtfulTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err == nil && t.writes && t.kv.armed.CompareAndSwap(true, false) {
		return nil, context.DeadlineExceeded
	}
	return resp, err
}

// TestAcquire_ATxnOfDoubtfulOutcomeLeavesNoGhostLock: an acquire whose txn
// committed but answered a timeout returns 503, and its lease is revoked,
// so the lock it may have taken, whose token nobody knows, ends at once
// instead of living on in the lease pool.
func TestAcquire_ATxnOfDoubtfulOutcomeLeavesNoGhostLock(t *testing.T) {
	m := testetcd.Start(t)
	base := m.Client()
	kv := &commitThenFail{KV: base.KV}
	cli := clientv3.NewCtxClient(context.Background())
	cli.KV, cli.Lease, cli.Watcher, cli.Cluster, cli.Maintenance = kv, base.Lease, base.Watcher, base.Cluster, base.Maintenance
	e := holdtest.StartEngineOn(t, cli, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)

	// A released lock's lease goes to the pool, and the next acquire of the
	// same TTL takes it from there.
	warm := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "warm", Owner: "w"})
	if err := e.Release(ctx, "warm", warm.Token); err != nil {
		t.Fatal(err)
	}
	kv.armed.Store(true)
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "ghost", Owner: "w"})
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("acquire whose txn timed out after committing: %v, want ErrUnavailable", err)
	}
	// The txn did commit: the lock was taken, by nobody who knows it.
	poll.Until(t, 3*time.Second, "the ghost lock ended well before its 30s TTL", func() bool {
		_, err := e.Get(ctx, "ghost")
		return errors.Is(err, lock.ErrNotHeld)
	})
	// The pool hands out no lease that carries it.
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "next", Owner: "w"})
	if _, err := e.Get(ctx, "ghost"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("ghost held again after the next acquire (%d): %v", l.Token, err)
	}
}
