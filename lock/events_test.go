package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
)

// drain reads s.C until it closes, failing after a deadline.
func drain(t *testing.T, s *lock.Subscription) []lock.Event {
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
	e, _ := newEngine(t)
	ctx := ctxT(t)
	sub, err := e.Subscribe(ctx, lock.SubscribeOptions{Buffer: 2})
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
	if len(evs) > 2 || !errors.Is(sub.Err(), lock.ErrSlowSubscriber) {
		t.Fatalf("got %d events and err %v; want at most 2 and ErrSlowSubscriber", len(evs), sub.Err())
	}
	// Resuming from the last event read misses nothing.
	since := int64(0)
	if len(evs) > 0 {
		since = evs[len(evs)-1].Revision
	}
	again, err := e.Subscribe(ctx, lock.SubscribeOptions{Replay: true, Since: since})
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

func TestSubscribe_EndsWhenTheEngineStopsWaiting(t *testing.T) {
	e, _ := newEngine(t)
	sub, err := e.Subscribe(context.Background(), lock.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.StopWaiting()
	drain(t, sub)
	if !errors.Is(sub.Err(), lock.ErrClosed) {
		t.Fatalf("err %v, want ErrClosed", sub.Err())
	}
	if _, err := e.Subscribe(context.Background(), lock.SubscribeOptions{}); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("subscribe after StopWaiting: %v, want ErrClosed", err)
	}
}
