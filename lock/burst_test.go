package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

// burstSize is how many waiters time out, or streams close, together: the
// per-lock waiter cap and the per-node stream cap of DefaultConfig.
const burstSize = 1000

// TestBurst_WaitersTimingOutTogetherLeaveTheNodeHearing queues a thousand
// waiters behind one holder with one wait, so that they give up together,
// and then checks that the node still hears etcd: a release hands the lock
// to a waiter at once, an expiry is recorded, and a stream delivers.
func TestBurst_WaitersTimingOutTogetherLeaveTheNodeHearing(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand waiters")
	}
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "hot", Owner: "holder"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, burstSize)
	for i := 0; i < burstSize; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "hot", Owner: "waiter", Wait: 3 * time.Second})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	// On a machine stalled by a neighbour, etcd itself may time a burst's
	// txn out; that waiter is then told etcd is unavailable, as a client
	// would be (503), which is not what this test is about. Anything else,
	// or no waiter timing out at all, is.
	held, unavailable := 0, 0
	for err := range errs {
		switch {
		case errors.Is(err, lock.ErrHeld):
			held++
		case errors.Is(err, lock.ErrUnavailable):
			unavailable++
		default:
			t.Fatalf("a waiter of the burst ended with %v, want ErrHeld", err)
		}
	}
	if held == 0 {
		t.Fatalf("no waiter of the burst timed out waiting: %d found etcd unavailable", unavailable)
	}
	if unavailable > 0 {
		t.Logf("%d of %d waiters found etcd unavailable (it timed their txn out)", unavailable, burstSize)
	}
	checkNodeHears(t, e)
}

// TestBurst_StreamsClosingTogetherLeaveTheNodeHearing opens a thousand
// event streams and closes them all at once.
func TestBurst_StreamsClosingTogetherLeaveTheNodeHearing(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand streams")
	}
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	sctx, cancel := context.WithCancel(ctx)
	subs := make([]*trail.Subscription, 0, burstSize)
	for i := 0; i < burstSize; i++ {
		s, err := holdtest.TrailOf(e).Subscribe(sctx, trail.SubscribeOptions{})
		if err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
		subs = append(subs, s)
	}
	// Every stream has something on the way when it is dropped.
	l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "busy", Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Release(ctx, "busy", l.Token); err != nil {
		t.Fatal(err)
	}
	cancel()
	closed := time.After(10 * time.Second)
	for i, s := range subs {
	drain:
		for {
			select {
			case _, ok := <-s.C:
				if !ok {
					break drain
				}
			case <-closed:
				t.Fatalf("subscription %d of %d did not end", i, len(subs))
			}
		}
	}
	poll.Until(t, 10*time.Second, "every subscription counted out", func() bool { return holdtest.TrailOf(e).EventStreams() == 0 })
	checkNodeHears(t, e)
}

// checkNodeHears asserts the three things a node that hears etcd does: a
// release wakes the waiter it hands the lock to within 100 ms, a lock's
// expiry is recorded within its TTL and 2 s, and a stream delivers a new
// event.
func checkNodeHears(t *testing.T, e *lock.Engine) {
	t.Helper()
	ctx := holdtest.Ctx(t)

	// A stream opened now delivers the events below.
	sub, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	held, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "after", Owner: "first"})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *lock.Lock
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "after", Owner: "second", Wait: 20 * time.Second})
		got <- result{l, time.Now(), err}
	}()
	poll.Until(t, 10*time.Second, "the second acquire queued", func() bool {
		w, err := e.Waiters(ctx, "after")
		return err == nil && len(w) == 1
	})
	if err := e.Release(ctx, "after", held.Token); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter was not served: %v", r.err)
	}
	if d := r.at.Sub(released); d > 100*time.Millisecond {
		t.Errorf("the waiter learnt of its grant %s after the release; want within 100ms", d)
	}
	if err := e.Release(ctx, "after", r.l.Token); err != nil {
		t.Fatal(err)
	}

	const ttl = 2 * time.Second
	brief, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "brief", Owner: "lapses", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, ttl+2*time.Second+time.Until(brief.ExpiresAt.Add(-ttl)), "the expiry of brief recorded", func() bool {
		evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: "brief", Types: []lock.EventType{lock.EventExpired}})
		return err == nil && len(evs) == 1
	})

	// The stream saw all of it, in order.
	want := []lock.EventType{lock.EventAcquired, lock.EventReleased, lock.EventAcquired, lock.EventReleased, lock.EventAcquired, lock.EventExpired}
	timeout := time.After(5 * time.Second)
	for i, typ := range want {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatalf("the stream ended after %d events: %v", i, sub.Err())
			}
			if ev.Type != typ {
				t.Fatalf("stream event %d is %s %s, want %s", i, ev.Type, ev.Lock, typ)
			}
		case <-timeout:
			t.Fatalf("the stream delivered %d of %d events", i, len(want))
		}
	}
}
