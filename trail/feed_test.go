package trail_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// stallTimeout is the engine's watch stall timeout in these tests.
const stallTimeout = 2 * time.Second

func stallEngine(t *testing.T) *lock.Engine {
	t.Helper()
	cfg := lock.DefaultConfig()
	cfg.WatchStallTimeout = stallTimeout
	return holdtest.StartEngine(t, testetcd.Start(t), cfg)
}

// stallTrail deafens tr's events watch and waits for the watchdog to
// notice: Ready fails while it is deaf, and passes again once the watch
// is reopened.
func stallTrail(t *testing.T, tr *trail.Trail, during func()) {
	t.Helper()
	gen := trail.StallEvents(tr)
	during()
	poll.Until(t, 3*stallTimeout, "Ready failing while the events watch is deaf", func() bool {
		return errors.Is(tr.Ready(), lock.ErrUnavailable)
	})
	poll.Until(t, 3*stallTimeout, "the events watch reopened", func() bool {
		return trail.EventsGeneration(tr) > gen && tr.Ready() == nil
	})
}

func TestWatch_AStalledEventWatchIsReopenedWithNoGapNorDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a stalled watch: not in the fast tier")
	}
	e := stallEngine(t)
	tr := holdtest.TrailOf(e)
	ctx := holdtest.Ctx(t)
	sub, err := tr.Subscribe(ctx, trail.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var tokens []int64
	stallTrail(t, tr, func() {
		for _, n := range []string{"e1", "e2", "e3"} {
			tokens = append(tokens, holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: "w"}).Token)
		}
	})
	tokens = append(tokens, holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "e4", Owner: "w"}).Token)
	for i, want := range tokens {
		select {
		case ev := <-sub.C:
			if ev.Type != lock.EventAcquired || ev.Token != want {
				t.Fatalf("event %d is %s of token %d, want acquired with token %d", i, ev.Type, ev.Token, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the stream delivered %d of %d events: %v", i, len(tokens), sub.Err())
		}
	}
	select {
	case ev, ok := <-sub.C:
		if ok {
			t.Fatalf("an event after the last one: %+v", ev)
		}
	default:
	}
}
