package lock

import (
	"context"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	"github.com/baton-dev/baton/tests/testetcd"
)

func newTestEngine(t *testing.T) *Engine {
	t.Helper()
	return newTestEngineAtFormat(t, 0)
}

// newTestEngineAtFormat is newTestEngine over a keyspace begun at storage
// format format by an older baton (0: a new keyspace).
func newTestEngineAtFormat(t *testing.T, format int) *Engine {
	t.Helper()
	m := testetcd.Start(t)
	if format > 0 {
		if _, err := m.Client().Put(context.Background(), DefaultConfig().Prefix+"meta/format", strconv.Itoa(format)); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(context.Background(), m.Client(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	StartTrail(t, e) // closed before e
	return e
}

// enqueued puts a queue entry for a, as its waiting acquire would, and
// returns its key.
func enqueued(t *testing.T, a *core.Acquirer) string {
	t.Helper()
	ctx := context.Background()
	e := a.E
	if err := a.EnsureLease(ctx); err != nil {
		t.Fatal(err)
	}
	wlease, _, err := e.Waiters.Get(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	qkey := e.Keys.Queue(a.Req.Name) + store.LeaseHex(wlease) + "-test"
	if _, err := e.Cli.Put(ctx, qkey, store.MustJSON(a.QueueEntryRecord(store.NowUTC())), clientv3.WithLease(wlease)); err != nil {
		t.Fatal(err)
	}
	return qkey
}

// heldWithWaiter has a holder take name, and queues a waiter as owner
// behind it, as its waiting acquire would.
func heldWithWaiter(t *testing.T, e *Engine, name, owner string) (holder *Lock, a *core.Acquirer, qkey string) {
	t.Helper()
	holder, _, err := e.Acquire(context.Background(), AcquireRequest{Name: name, Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	if a, err = e.core.NewAcquirer(context.Background(), AcquireRequest{Name: name, Owner: owner, Wait: time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	return holder, a, enqueued(t, a)
}

// TestLeave_AWaiterGrantedAsItLeavesGetsTheLockAndKeepsItsLease: a release
// may grant the lock to a waiter that is just giving up. Leaving the queue
// must find that out, so the acquire answers with the lock instead of
// leaving a hold nobody knows the token of, and the lease that holds it
// must never go back to the pool.
func TestLeave_AWaiterGrantedAsItLeavesGetsTheLockAndKeepsItsLease(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	holder, a, qkey := heldWithWaiter(t, e, "x", "leaver")
	if a.QueuedLease == 0 {
		t.Fatal("a waiter with its own lease did not name it for the grant")
	}
	if err := e.Release(ctx, "x", holder.Token); err != nil {
		t.Fatal(err)
	}
	l, err := a.Leave(qkey)
	if err != nil || l == nil {
		t.Fatalf("leave after the release granted the lock: %+v, %v; want the lock", l, err)
	}
	cur, err := e.Get(ctx, "x")
	if err != nil || cur.Token != l.Token || cur.Owner != "leaver" {
		t.Fatalf("lock after the handover: %+v, %v; leave said %+v", cur, err, l)
	}
	pooled := len(e.core.Leases.Free[store.TTLSeconds(a.Req.TTL)])
	a.DropLease()
	if n := len(e.core.Leases.Free[store.TTLSeconds(a.Req.TTL)]); n != pooled {
		t.Fatal("the lease holding the handed-over lock went to the pool")
	}
	if remaining, err := e.core.Cli.TimeToLive(ctx, a.Lease); err != nil || remaining.TTL <= 0 {
		t.Fatalf("the lease holding the handed-over lock: %+v, %v", remaining, err)
	}
}

// TestRelease_AHeadWhoseLeaseIsGoneIsNotGrantedAndTheReleaseStands: the
// head of the queue may name a lease that ended (its session expired a
// moment ago). A put under it fails the whole txn; the release must still
// end the hold, and leave the lock free.
func TestRelease_AHeadWhoseLeaseIsGoneIsNotGrantedAndTheReleaseStands(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	holder, a, qkey := heldWithWaiter(t, e, "y", "gone")
	if _, err := e.core.Cli.Revoke(ctx, a.Lease); err != nil {
		t.Fatal(err)
	}
	if err := e.Release(ctx, "y", holder.Token); err != nil {
		t.Fatalf("release with a dead head: %v", err)
	}
	if _, err := e.Get(ctx, "y"); err != ErrNotHeld {
		t.Fatalf("lock after releasing past a dead head: %v, want ErrNotHeld", err)
	}
	evs, err := HistoryOf(ctx, e, "y")
	if err != nil || len(evs) != 2 || evs[0].Type != EventReleased {
		t.Fatalf("history %+v, %v: want the release recorded once, and no grant", evs, err)
	}
	if l, err := a.Leave(qkey); err != nil || l != nil {
		t.Fatalf("leave: %+v, %v", l, err)
	}
}

// TestRelease_AHeadThatAsksForNoGrantTakesTheLockItself: queue entries
// written without a grant (by a node from before grants on release, or
// into a session with MaxLocksPerSession) are left to take the lock
// themselves: the release only frees it.
func TestRelease_AHeadThatAsksForNoGrantTakesTheLockItself(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	holder, _, err := e.Acquire(ctx, AcquireRequest{Name: "z", Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	wlease, _, err := e.core.Waiters.Get(ctx, e.core)
	if err != nil {
		t.Fatal(err)
	}
	old := hold.WaiterRecord{Owner: "old", Since: store.NowUTC()}
	if _, err := e.core.Cli.Put(ctx, e.core.Keys.Queue("z")+store.LeaseHex(wlease)+"-old", store.MustJSON(old), clientv3.WithLease(wlease)); err != nil {
		t.Fatal(err)
	}
	if err := e.Release(ctx, "z", holder.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(ctx, "z"); err != ErrNotHeld {
		t.Fatalf("lock after release: %v, want ErrNotHeld", err)
	}
}
