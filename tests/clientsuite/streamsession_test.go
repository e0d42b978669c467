package clientsuite_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
)

// TestStreamSession_LivesWithItsStream: a stream-bound session outlives
// its lease's TTL while the client holds its stream, and Close ends it
// and its holds at once.
func TestStreamSession_LivesWithItsStream(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	ss, err := c.OpenStreamSession(ctx, "holder", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	info := ss.Info()
	if info.Bind != "stream" || info.Grace != time.Second {
		t.Fatalf("session %+v, want bound to a stream with a 1s grace", info)
	}
	name := lockName(t, "bound")
	if _, err := c.Acquire(ctx, name, client.AcquireOptions{Session: ss.ID()}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(info.TTL + time.Second)
	poll.Until(t, 3*info.TTL, "the session outlives its lease's TTL", func() bool {
		if _, err := c.GetSession(ctx, ss.ID()); err != nil {
			t.Fatalf("the session while its stream is held: %v", err)
		}
		return time.Now().After(past)
	})
	if err := ss.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, name); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("the lock after Close: %v, want ErrNotHeld", err)
	}
	if ss.Err() != nil {
		t.Fatalf("Err after Close: %v, want nil", ss.Err())
	}
}

// TestStreamSession_AHolderCutOffFailsOverWithinItsGrace: when the holder
// can no longer reach any node (a killed process, a cut network), its
// holds go to the next waiter about a grace later, not a TTL later.
func TestStreamSession_AHolderCutOffFailsOverWithinItsGrace(t *testing.T) {
	t.Parallel()
	fa, ca, ctx := setup(t)
	fb := newFront(t)
	cb := newClient(t, fb.URL)
	const grace = time.Second
	ss, err := ca.OpenStreamSession(ctx, "holder", grace)
	if err != nil {
		t.Fatal(err)
	}
	name := lockName(t, "failover")
	if _, err := ca.Acquire(ctx, name, client.AcquireOptions{Session: ss.ID()}); err != nil {
		t.Fatal(err)
	}
	granted := make(chan time.Time, 1)
	go func() {
		lk, err := cb.Acquire(ctx, name, client.AcquireOptions{Owner: "next", Wait: 30 * time.Second, TTL: longTTL})
		if err != nil {
			t.Errorf("waiter: %v", err)
			return
		}
		granted <- time.Now()
		_ = lk.Release(ctx)
	}()
	poll.Until(t, 10*time.Second, "the waiter is in line", func() bool {
		li, err := cb.Get(ctx, name)
		return err == nil && len(li.Waiters) == 1
	})
	fa.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		http.Error(w, "cut off", http.StatusServiceUnavailable)
		return true
	})
	fa.CloseClientConnections()
	cut := time.Now()
	select {
	case at := <-granted:
		t.Logf("failover: %s from the cut to the waiter's grant", at.Sub(cut))
		if took := at.Sub(cut); took < grace || took > grace+time.Second+500*time.Millisecond {
			t.Fatalf("the waiter was granted %s after the holder was cut off, want after its %s grace and within 1.5s more", took, grace)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not granted")
	}
	fa.setIntercept(nil)
	waitClosed(t, ss.Done(), 10*time.Second, "Done once the session ended")
	if !errors.Is(ss.Err(), client.ErrSessionNotFound) {
		t.Fatalf("Err = %v, want ErrSessionNotFound", ss.Err())
	}
}
