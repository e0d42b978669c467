package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// holdOpen keeps st open as its server does, renewing the lease every
// SessionKeepAliveEvery, until the returned stop is called; stop then
// closes it, which starts the grace, and returns when it was closed.
func holdOpen(t *testing.T, st *lock.SessionStream) (stop func() time.Time) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan time.Time, 1)
	go func() {
		tick := time.NewTicker(lock.SessionKeepAliveEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if err := st.KeepAlive(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("keep alive: %v", err)
				}
			case <-ctx.Done():
				st.Close()
				closed <- time.Now()
				return
			}
		}
	}()
	return func() time.Time { cancel(); return <-closed }
}

// sessionGone reports whether session id has ended.
func sessionGone(t *testing.T, e *lock.Engine, id string) bool {
	_, err := e.GetSession(holdtest.Ctx(t), id)
	if err != nil && !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("get session: %v", err)
	}
	return err != nil
}

// A stream-bound session lives while its stream is open, beyond its
// lease's TTL, and ends with its holds once the stream has been closed
// for the grace: not before, and not much after.
func TestStreamSession_LivesWhileItsStreamIsOpen(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const grace = time.Second
	s, err := e.CreateStreamSession(ctx, "w1", grace)
	if err != nil {
		t.Fatal(err)
	}
	if s.Bind != lock.BindStream || s.Grace != grace || s.TTL < grace+lock.SessionKeepAliveEvery {
		t.Fatalf("session %+v: want bound to a stream, grace %s, a lease outliving it", s, grace)
	}
	st, err := e.AttachSessionStream(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w1", Session: s.ID})
	stop := holdOpen(t, st)
	outlived := time.Now().Add(s.TTL + time.Second)
	poll.Until(t, 3*s.TTL, "the session outlives its lease's TTL", func() bool {
		if sessionGone(t, e, s.ID) {
			t.Fatal("the session ended while its stream was open")
		}
		return time.Now().After(outlived)
	})
	closedAt := stop()
	poll.Until(t, 10*time.Second, "the session ends after its grace", func() bool { return sessionGone(t, e, s.ID) })
	ended := time.Since(closedAt)
	if ended < grace {
		t.Fatalf("the session ended %s after its stream closed, inside its %s grace", ended, grace)
	}
	if ended > grace+time.Second {
		t.Fatalf("the session ended %s after its stream closed: want within its %s grace and a second", ended, grace)
	}
	poll.Until(t, 10*time.Second, "the hold's end is recorded", func() bool {
		return len(holdtest.EventsOf(holdtest.History(t, e, "job"), lock.EventSessionExpired)) == 1
	})
}

// A stream reopened on another node within the grace takes the session
// over: the node where it closed does not end it.
func TestStreamSession_ReopenedElsewhereWithinTheGrace(t *testing.T) {
	t.Parallel()
	a, m := holdtest.NewEngine(t)
	b := holdtest.StartEngineOn(t, m.Client(), lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	const grace = 700 * time.Millisecond
	s, err := a.CreateStreamSession(ctx, "w1", grace)
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.AttachSessionStream(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	closedAt := holdOpen(t, st)()
	st2, err := b.AttachSessionStream(ctx, s.ID)
	if err != nil {
		t.Fatalf("reopen on another node within the grace: %v", err)
	}
	stop := holdOpen(t, st2)
	past := closedAt.Add(grace + time.Second)
	poll.Until(t, 10*time.Second, "the first node's grace passes", func() bool {
		if sessionGone(t, a, s.ID) {
			t.Fatal("the node where the stream closed ended the session another node holds open")
		}
		return time.Now().After(past)
	})
	stop()
	poll.Until(t, 10*time.Second, "the session ends after the second stream's grace", func() bool { return sessionGone(t, a, s.ID) })
	if _, err := b.AttachSessionStream(ctx, s.ID); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("attach after the end: %v, want ErrSessionNotFound", err)
	}
}

// A session whose first stream never opens ends after its grace.
func TestStreamSession_NeverAttachedEndsAfterItsGrace(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateStreamSession(ctx, "w1", lock.MinStreamGrace)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the session ends", func() bool { return sessionGone(t, e, s.ID) })
}

func TestStreamSession_BadRequests(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	for _, g := range []time.Duration{100 * time.Millisecond, 2 * time.Minute} {
		var ie *lock.InvalidError
		if _, err := e.CreateStreamSession(ctx, "w1", g); !errors.As(err, &ie) || ie.Field != "grace" {
			t.Fatalf("grace %s: %v, want an invalid grace", g, err)
		}
	}
	s, err := e.CreateSession(ctx, "w1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var ie *lock.InvalidError
	if _, err := e.AttachSessionStream(ctx, s.ID); !errors.As(err, &ie) || ie.Field != "session" {
		t.Fatalf("a stream of a ttl session: %v, want an invalid session", err)
	}
}
