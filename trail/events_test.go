package trail_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

// drain reads s.C until it closes, failing after a deadline.
func drain(t *testing.T, s *trail.Subscription) []lock.Event {
	t.Helper()
	var evs []lock.Event
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-s.C:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-deadline:
			t.Fatal("subscription did not end")
		}
	}
}

func TestSubscribe_SlowReaderIsDroppedNotBuffered(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	sub, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Buffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Nobody reads while five events are recorded: the buffer holds two.
	for _, name := range []string{"s1", "s2", "s3", "s4", "s5"} {
		if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	evs := drain(t, sub)
	if len(evs) > 2 || !errors.Is(sub.Err(), trail.ErrSlowSubscriber) {
		t.Fatalf("got %d events and err %v; want at most 2 and ErrSlowSubscriber", len(evs), sub.Err())
	}
	// Resuming from the last event read misses nothing.
	since := int64(0)
	if len(evs) > 0 {
		since = evs[len(evs)-1].Revision
	}
	again, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Replay: true, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	names := map[string]bool{}
	for _, ev := range evs {
		names[ev.Lock] = true
	}
	for len(names) < 5 {
		select {
		case ev := <-again.C:
			if names[ev.Lock] {
				t.Fatalf("event of %s delivered twice", ev.Lock)
			}
			names[ev.Lock] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("resumed subscription delivered only %v", names)
		}
	}
}

func TestSubscribe_EndsWhenTheTrailStopsStreams(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	sub, err := holdtest.TrailOf(e).Subscribe(context.Background(), trail.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holdtest.TrailOf(e).StopStreams()
	drain(t, sub)
	if !errors.Is(sub.Err(), lock.ErrClosed) {
		t.Fatalf("err %v, want ErrClosed", sub.Err())
	}
	if _, err := holdtest.TrailOf(e).Subscribe(context.Background(), trail.SubscribeOptions{}); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("subscribe after StopStreams: %v, want ErrClosed", err)
	}
}

// An acquired event says when its acquirer began waiting, whether the
// release handed the lock over or the waiter took it itself, and says
// nothing of a wait when there was none.
func TestHistory_AcquiredEventCarriesWhenItsAcquirerQueued(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "q", Owner: "a", TTL: 30 * time.Second})
	type result struct {
		l   *lock.Lock
		err error
	}
	got := make(chan result, 1)
	joined := time.Now().UTC()
	go func() {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "q", Owner: "b", TTL: 30 * time.Second, Wait: 20 * time.Second})
		got <- result{l, err}
	}()
	poll.Until(t, 10*time.Second, "b queued", func() bool {
		ws, err := e.Waiters(ctx, "q")
		return err == nil && len(ws) == 1
	})
	if err := e.Release(ctx, "q", first.Token); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	var direct, waited *lock.Event
	for _, ev := range holdtest.EventsOf(holdtest.History(t, e, "q"), lock.EventAcquired) {
		switch ev.Owner {
		case "a":
			direct = &ev
		case "b":
			waited = &ev
		}
	}
	if direct == nil || waited == nil {
		t.Fatalf("acquired events of a and b: %v, %v", direct, waited)
	}
	if direct.QueuedAt != nil {
		t.Errorf("a's acquire did not wait, yet its event says it queued at %v", *direct.QueuedAt)
	}
	if waited.QueuedAt == nil {
		t.Fatal("b waited, yet its acquired event has no QueuedAt")
	}
	if q := *waited.QueuedAt; q.Before(joined.Add(-time.Second)) || q.After(waited.Time) {
		t.Errorf("b queued at %v: want between %v and its grant at %v", q, joined, waited.Time)
	}
}
