package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
	"github.com/prometheus/client_golang/prometheus"
)

// stallTimeout is the watchdog's bound in these tests.
const stallTimeout = 2 * time.Second

func stallEngine(t *testing.T) *lock.Engine {
	t.Helper()
	cfg := lock.DefaultConfig()
	cfg.WatchStallTimeout = stallTimeout
	return holdtest.StartEngine(t, testetcd.Start(t), cfg)
}

// stall deafens e's watch name and waits for the watchdog to notice: Ready
// fails while it is deaf, and passes again once the watch is reopened.
func stall(t *testing.T, e *lock.Engine, name string, during func()) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	gen := lock.StallWatch(e, name)
	during()
	poll.Until(t, 3*stallTimeout, "Ready failing while the "+name+" watch is deaf", func() bool {
		err := e.Ready(ctx)
		return errors.Is(err, lock.ErrUnavailable)
	})
	poll.Until(t, 3*stallTimeout, "the "+name+" watch reopened", func() bool {
		return lock.WatchGeneration(e, name) > gen && e.Ready(ctx) == nil
	})
}

func TestWatch_AStalledWaiterWatchIsReopenedAndTheGrantArrives(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a stalled watch: not in the fast tier")
	}
	e := stallEngine(t)
	ctx := holdtest.Ctx(t)
	held := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "w", Owner: "first"})
	got := make(chan *lock.Lock, 1)
	go func() {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "w", Owner: "second", Wait: 30 * time.Second})
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- l
	}()
	poll.Until(t, 10*time.Second, "the waiter queued", func() bool {
		w, err := e.Waiters(ctx, "w")
		return err == nil && len(w) == 1
	})
	stall(t, e, "waiters", func() {
		if err := e.Release(ctx, "w", held.Token); err != nil {
			t.Fatal(err)
		}
	})
	select {
	case l := <-got:
		if l == nil || l.Token <= held.Token {
			t.Fatalf("waiter got %+v, want a grant after token %d", l, held.Token)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the grant made while the watch was deaf never reached the waiter")
	}
}

func TestWatch_AStalledRecorderWatchIsReopenedAndRecordsTheExpiryOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a stalled watch and a TTL: not in the fast tier")
	}
	e := stallEngine(t)
	ctx := holdtest.Ctx(t)
	stall(t, e, "recorder", func() {
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "lapse", Owner: "w", TTL: 2 * time.Second})
	})
	expired := func() int {
		evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: "lapse", Types: []lock.EventType{lock.EventExpired}})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	poll.Until(t, 10*time.Second, "the expiry recorded", func() bool { return expired() > 0 })
	if n := expired(); n != 1 {
		t.Fatalf("expiry recorded %d times, want once", n)
	}
}

// TestWatch_WaitersAndStreamsOpenNoEtcdWatch: every waiter and stream of
// a node shares the engine's watches, so none of them can wedge etcd's
// watch stream by leaving.
func TestWatch_WaitersAndStreamsOpenNoEtcdWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out its waiters' waits: not in the fast tier")
	}
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	before := -1.0
	poll.Until(t, 10*time.Second, "etcd's count of watchers steady", func() bool {
		v := etcdWatchers(t)
		steady := v >= 3 && v == before
		before = v
		return steady
	})
	held := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "q", Owner: "first"})
	done := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func() {
			_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "q", Owner: "waiter", Wait: 2 * time.Second})
			done <- err
		}()
	}
	var subs []*trail.Subscription
	for i := 0; i < 20; i++ {
		s, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	poll.Until(t, 10*time.Second, "20 waiters queued", func() bool {
		w, err := e.Waiters(ctx, "q")
		return err == nil && len(w) == 20
	})
	if v := etcdWatchers(t); v != before {
		t.Fatalf("etcd counts %v watchers with 20 waiters and 20 streams, want %v as before", v, before)
	}
	for i := 0; i < 20; i++ {
		if err := <-done; !errors.Is(err, lock.ErrHeld) {
			t.Fatalf("waiter: %v", err)
		}
	}
	for _, s := range subs {
		s.Close()
	}
	poll.Until(t, 10*time.Second, "every registration gone", func() bool {
		return lock.HubRegistrations(e) == 0 && holdtest.TrailOf(e).EventStreams() == 0
	})
	_ = held
}

// etcdWatchers reads etcd's gauge of the watchers its store serves, for
// every member of this process: tests that use it must not run in
// parallel with others.
func etcdWatchers(t *testing.T) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "etcd_debugging_mvcc_watcher_total" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("etcd_debugging_mvcc_watcher_total not found")
	return 0
}
