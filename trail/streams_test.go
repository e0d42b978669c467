package trail_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// Event streams' caps and slow readers: a stream holds a buffer and a
// registration with the trail's hub, and neither may outlive it.

func TestSubscribe_BeyondTheCapIsRefusedUntilOneEnds(t *testing.T) {
	tc := trail.DefaultConfig()
	tc.MaxEventStreams = 2
	e := holdtest.StartWithTrail(t, testetcd.Start(t).Client(), lock.DefaultConfig(), tc)
	ctx := holdtest.Ctx(t)
	a, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{})
	if le := holdtest.AsLimit(t, err, lock.ErrTooManyStreams); le.Limit != 2 || le.RetryAfter <= 0 {
		t.Fatalf("limit error %+v, want limit 2 and a retry hint", le)
	}
	if n := holdtest.TrailOf(e).EventStreams(); n != 2 {
		t.Fatalf("%d subscriptions counted, want 2", n)
	}
	a.Close()
	drain(t, a)
	poll.Until(t, 10*time.Second, "the closed subscription uncounted", func() bool { return holdtest.TrailOf(e).EventStreams() == 1 })
	c, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{})
	if err != nil {
		t.Fatalf("subscribe after one ended: %v", err)
	}
	c.Close()
}

func TestSubscribe_DroppedReaderHoldsNoRegistrationEvenUnclosed(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	// Nobody reads, and nobody calls Close: a handler stuck writing to a
	// client that does not read is in just this state.
	sub, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Buffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	poll.Until(t, 10*time.Second, "the subscription registered with the event hub", func() bool {
		streams := trail.StreamRegistrations(holdtest.TrailOf(e))
		return streams == 1
	})
	for i := 0; sub.Err() == nil; i++ {
		if i == 100 {
			t.Fatal("100 events did not overflow a buffer of 2")
		}
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: fmt.Sprintf("e%d", i), Owner: "w"})
	}
	if !errors.Is(sub.Err(), trail.ErrSlowSubscriber) {
		t.Fatalf("subscription ended with %v, want ErrSlowSubscriber", sub.Err())
	}
	// A registration that lived on would collect every later event.
	poll.Until(t, 10*time.Second, "the dropped subscription's registration gone", func() bool {
		streams := trail.StreamRegistrations(holdtest.TrailOf(e))
		return streams == 0
	})
	if n := holdtest.TrailOf(e).EventStreams(); n != 0 {
		t.Fatalf("%d subscriptions counted after the drop, want 0", n)
	}
	if n := len(sub.C); n > 2 {
		t.Fatalf("%d events buffered, want at most the buffer's 2", n)
	}
}

func TestSubscribe_SlowReaderIsDroppedBetweenRevisionsNotInside(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"s1", "s2", "s3"} {
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: "w", Session: s.ID})
	}
	sub, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Buffer: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	solo := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "solo", Owner: "w"})
	// The stream ends at the first revision it cannot take, and what it
	// has not yet put in the channel by then goes with it: wait for solo's
	// event to be there, unread, as a stalled reader would leave it.
	poll.Until(t, 10*time.Second, "solo's event in the subscription's channel", func() bool { return len(sub.C) == 1 })
	// Deleting the session releases its three locks in one transaction:
	// three events of one revision, with room for two in the buffer.
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	evs := drain(t, sub)
	if len(evs) != 1 || evs[0].Lock != "solo" || !errors.Is(sub.Err(), trail.ErrSlowSubscriber) {
		t.Fatalf("got %+v and %v; want solo's event alone, then ErrSlowSubscriber", evs, sub.Err())
	}
	// Resuming from the last revision read gets the whole revision, once.
	again, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Replay: true, Since: solo.Token})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got := map[string]int{}
	for len(got) < 3 {
		select {
		case ev := <-again.C:
			if ev.Type != lock.EventReleased {
				t.Fatalf("resumed with %+v, want the session's releases", ev)
			}
			got[ev.Lock]++
		case <-time.After(20 * time.Second):
			t.Fatalf("resumed subscription delivered only %v", got)
		}
	}
	if fmt.Sprint(got) != "map[s1:1 s2:1 s3:1]" {
		t.Fatalf("resumed with %v, want s1, s2 and s3 once each", got)
	}
}
