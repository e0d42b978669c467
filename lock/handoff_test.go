package lock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
)

// queued waits until name has n waiters.
func queued(t *testing.T, e *lock.Engine, name string, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the waiters are queued", func() bool {
		ws, err := e.Waiters(context.Background(), name)
		return err == nil && len(ws) == n
	})
}

type acquired struct {
	l   *lock.Lock
	err error
}

func acquireAsync(ctx context.Context, e *lock.Engine, req lock.AcquireRequest) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, _, err := e.Acquire(ctx, req)
		ch <- acquired{l, err}
	}()
	return ch
}

// TestRelease_HandsTheLockToTheOldestWaiterInTheSameTxn: a release grants
// the lock to the head of the queue in its own txn, so the waiter's token
// is the release's revision, and the audit trail shows the one hold end
// and the next begin at that revision, newest first.
func TestRelease_HandsTheLockToTheOldestWaiterInTheSameTxn(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "h", Owner: "first", TTL: 10 * time.Second})
	next := acquireAsync(ctx, e, lock.AcquireRequest{
		Name: "h", Owner: "next", TTL: 20 * time.Second, Wait: 30 * time.Second,
		Metadata: map[string]string{"job": "nightly"}, LockDelay: time.Second,
	})
	queued(t, e, "h", 1)
	released := time.Now()
	if err := e.Release(ctx, "h", first.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	got := <-next
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	l := got.l
	evs := holdtest.History(t, e, "h")
	if len(evs) != 3 || evs[0].Type != lock.EventAcquired || evs[1].Type != lock.EventReleased || evs[2].Type != lock.EventAcquired {
		t.Fatalf("history, newest first: %+v; want acquired, released, acquired", evs)
	}
	if evs[1].Token != first.Token || evs[0].Owner != "next" || evs[0].Token != l.Token {
		t.Fatalf("history %+v does not match the holds %d and %d", evs, first.Token, l.Token)
	}
	if l.Token != evs[1].Revision || evs[0].Revision != evs[1].Revision {
		t.Fatalf("the waiter's token %d and acquired event (revision %d) are not the release's revision %d: the lock was not handed over in the release txn",
			l.Token, evs[0].Revision, evs[1].Revision)
	}
	// A replayed stream, like the live one, has the end before the begin.
	sub, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Lock: "h", Replay: true, Since: evs[2].Revision})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, want := range []lock.EventType{lock.EventReleased, lock.EventAcquired} {
		select {
		case ev := <-sub.C:
			if ev.Type != want || ev.Revision != l.Token {
				t.Fatalf("replayed %+v, want %s at revision %d", ev, want, l.Token)
			}
		case <-ctx.Done():
			t.Fatal("replay did not deliver the handover")
		}
	}
	if l.Owner != "next" || l.Metadata["job"] != "nightly" || l.LockDelay != time.Second || l.TTL != 20*time.Second {
		t.Fatalf("handed-over lock %+v lost what the waiter asked for", l)
	}
	if l.ExpiresAt.Before(released.Add(15 * time.Second)) {
		t.Fatalf("handed-over lock expires at %v, less than most of its 20s TTL after the release at %v", l.ExpiresAt, released)
	}
	cur, err := e.Get(ctx, "h")
	if err != nil || cur.Token != l.Token || cur.Owner != "next" {
		t.Fatalf("get after the handover: %+v, %v", cur, err)
	}
	if _, err := e.Renew(ctx, "h", l.Token); err != nil {
		t.Fatalf("renew the handed-over lock: %v", err)
	}
	if err := e.Release(ctx, "h", first.Token); err == nil {
		t.Fatal("the old token released the new hold")
	}
	if err := e.Release(ctx, "h", l.Token); err != nil {
		t.Fatalf("release the handed-over lock: %v", err)
	}
	if !isNotHeld(t, e, "h") {
		t.Fatal("the lock is still held after its last release")
	}
	checkNoQueueLeft(t, e, nil)
}

// TestRelease_HandsTheLockIntoTheWaitersSession: a waiter in a session is
// granted the lock in its session, so ending the session ends the hold.
func TestRelease_HandsTheLockIntoTheWaitersSession(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "s", Owner: "first"})
	s, err := e.CreateSession(ctx, "worker", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	next := acquireAsync(ctx, e, lock.AcquireRequest{Name: "s", Owner: "worker", Session: s.ID, Wait: 30 * time.Second})
	queued(t, e, "s", 1)
	if err := e.Release(ctx, "s", first.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	got := <-next
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	if got.l.Session != s.ID || got.l.TTL != 10*time.Second || got.l.ExpiresAt.IsZero() {
		t.Fatalf("handed-over lock %+v is not in session %s with its TTL", got.l, s.ID)
	}
	if evs := holdtest.History(t, e, "s"); evs[0].Type != lock.EventAcquired || evs[0].Revision != got.l.Token {
		t.Fatalf("history %+v: the grant is not the release's", evs)
	}
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if !isNotHeld(t, e, "s") {
		t.Fatal("the handed-over lock outlived its session")
	}
}

// TestAcquire_QueuedLeaseIsKeptAliveUntilTheHandover: a waiter's own lease
// outlives a wait longer than its TTL, so the release can still grant the
// lock under it, and the holder gets all of its TTL.
func TestAcquire_QueuedLeaseIsKeptAliveUntilTheHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "k", Owner: "first", TTL: 30 * time.Second})
	next := acquireAsync(ctx, e, lock.AcquireRequest{Name: "k", Owner: "next", TTL: 2 * time.Second, Wait: 30 * time.Second})
	queued(t, e, "k", 1)
	// Two TTLs of the waiter's lease: without keep-alives it would be gone.
	poll.Consistently(t, 4*time.Second, "the waiter stays queued", func() bool {
		ws, err := e.Waiters(ctx, "k")
		return err == nil && len(ws) == 1
	})
	if err := e.Release(ctx, "k", first.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	got := <-next
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	evs := holdtest.History(t, e, "k")
	if evs[1].Type != lock.EventReleased || got.l.Token != evs[1].Revision {
		t.Fatalf("token %d, history %+v: the release did not hand the lock over under the waiter's lease", got.l.Token, evs)
	}
	if _, err := e.Renew(ctx, "k", got.l.Token); err != nil {
		t.Fatalf("renew the handed-over lock: %v", err)
	}
}

// TestAcquire_WaitsReuseTheirQueueKeys: a lock with steady contention
// must not pile up a new queue key per wait. A deleted key stays in etcd's
// index until compaction, and every acquire, release and wake-up ranges
// over the queue, so the keys one lock's queue ever had must stay as few
// as the waits in progress at once.
func TestAcquire_WaitsReuseTheirQueueKeys(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	// Every queue key put, until the sentinel put after the contenders
	// are done shows the watch has seen all of theirs.
	sentinel := holdtest.Prefix + "queue/q/~end"
	keys := map[string]bool{}
	seen := make(chan struct{})
	wch := m.Client().Watch(ctx, holdtest.Prefix+"queue/q/", clientv3.WithPrefix(), clientv3.WithFilterDelete())
	go func() {
		defer close(seen)
		for wr := range wch {
			for _, ev := range wr.Events {
				if string(ev.Kv.Key) == sentinel {
					return
				}
				keys[string(ev.Kv.Key)] = true
			}
		}
	}()
	const workers, rounds = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "q", Owner: owner(i), Wait: 30 * time.Second})
				if err != nil {
					errs <- err
					return
				}
				if err := e.Release(ctx, "q", l.Token); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	waitAll(t, ctx, &wg)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := m.Client().Put(ctx, sentinel, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-ctx.Done():
		t.Fatal("the watch never saw the sentinel")
	}
	if len(keys) == 0 || len(keys) > workers {
		t.Fatalf("%d rounds of %d contenders used %d queue keys: %v; want at most one per contender", rounds, workers, len(keys), keys)
	}
}
