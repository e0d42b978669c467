package lock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// TestSeats_HoldsOutliveTheEngineThatGrantedThem: a permit and a read
// hold granted through one engine are held after it closes, and another
// engine renews and releases them by their tokens.
func TestSeats_HoldsOutliveTheEngineThatGrantedThem(t *testing.T) {
	t.Parallel()
	first, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	p := mustPermit(t, first, lock.PermitRequest{Name: "s", Owner: "a", Limit: 2})
	r := mustRW(t, first, lock.RWRequest{Name: "rw", Mode: lock.ModeRead, Owner: "a"})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := holdtest.StartEngine(t, m, lock.DefaultConfig())
	if s, err := second.Semaphore(ctx, "s"); err != nil || len(s.Holders) != 1 || s.Holders[0].Token != p.Token || s.Limit != 2 {
		t.Fatalf("semaphore after the restart: %+v, %v", s, err)
	}
	if _, err := second.RenewPermit(ctx, "s", p.Token); err != nil {
		t.Fatalf("renew the permit: %v", err)
	}
	if _, err := second.RenewRW(ctx, "rw", r.Token); err != nil {
		t.Fatalf("renew the read hold: %v", err)
	}
	if err := second.ReleasePermit(ctx, "s", p.Token); err != nil {
		t.Fatalf("release the permit: %v", err)
	}
	if err := second.ReleaseRW(ctx, "rw", r.Token); err != nil {
		t.Fatalf("release the read hold: %v", err)
	}
	if err := second.ReleaseRW(ctx, "rw", p.Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release with a token of another thing: %v; want not held", err)
	}
}

// TestRWLock_TheLastReadersExpiryLetsTheWriterIn: a writer waits behind
// a reader that dies; the reader's lease runs out (no release to hand
// over), and the writer is granted once it sees the seat go.
func TestRWLock_TheLastReadersExpiryLetsTheWriterIn(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	keep := mustRW(t, e, lock.RWRequest{Name: "d", Mode: lock.ModeRead, Owner: "keeps"})
	mustRW(t, e, lock.RWRequest{Name: "d", Mode: lock.ModeRead, Owner: "dies", TTL: 2 * time.Second})
	w := rwAsync(ctx, e, lock.RWRequest{Name: "d", Mode: lock.ModeWrite, Owner: "w", Wait: time.Minute})
	rwWaiters(t, e, "d", 1)
	if err := e.ReleaseRW(ctx, "d", keep.Token); err != nil {
		t.Fatal(err)
	}
	got := <-w
	if got.err != nil || got.l.Mode != lock.ModeWrite {
		t.Fatalf("writer after the last reader died: %+v", got)
	}
}

// TestSeats_AWaiterThatGivesUpLeavesNoEntry: a waiting permit and a
// waiting writer whose callers leave take nothing and leave no queue
// entry; a session that ends while its acquire waits ends the wait.
func TestSeats_AWaiterThatGivesUpLeavesNoEntry(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	mustPermit(t, e, lock.PermitRequest{Name: "g", Owner: "h", Limit: 1})
	mustRW(t, e, lock.RWRequest{Name: "g", Mode: lock.ModeRead, Owner: "h"})
	wctx, cancel := context.WithCancel(ctx)
	p := permitAsync(wctx, e, lock.PermitRequest{Name: "g", Owner: "w", Limit: 1, Wait: time.Minute})
	w := rwAsync(wctx, e, lock.RWRequest{Name: "g", Mode: lock.ModeWrite, Owner: "w", Wait: time.Minute})
	semWaiters(t, e, "g", 1)
	rwWaiters(t, e, "g", 1)
	cancel()
	if got := <-p; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("permit after leaving: %+v", got)
	}
	if got := <-w; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("writer after leaving: %+v", got)
	}
	if q := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"queue/"); len(q) != 0 {
		t.Fatalf("queue entries left: %v", q)
	}
	s, err := e.CreateSession(ctx, "sess", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ws := rwAsync(ctx, e, lock.RWRequest{Name: "g", Mode: lock.ModeWrite, Owner: "w", Session: s.ID, Wait: time.Minute})
	rwWaiters(t, e, "g", 1)
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if got := <-ws; !errors.Is(got.err, lock.ErrSessionNotFound) {
		t.Fatalf("writer whose session ended: %+v; want session not found", got)
	}
}

// TestSeats_AWaiterHearsAReleaseBatchedWithItsAttempt: four workers take
// and give back holds of one read/write lock (one turn in ten a write)
// and permits of one semaphore of 2, without pause, for a few seconds:
// no acquire may wait out its wait. A waiter's attempt and a release of
// another seat go to etcd in one batch when they write no common key, and
// the attempt's reads may come before the release's delete at the same
// revision: a wait that started after that revision would never hear the
// delete (SeenBefore).
func TestSeats_AWaiterHearsAReleaseBatchedWithItsAttempt(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	deadline := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 20))
			for time.Now().Before(deadline) {
				mode := lock.ModeRead
				if r.IntN(10) == 0 {
					mode = lock.ModeWrite
				}
				if l, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "one", Mode: mode, Owner: owner(w), Wait: 3 * time.Second}); err != nil {
					t.Errorf("worker %d %s: %v", w, mode, err)
					return
				} else if err := e.ReleaseRW(ctx, "one", l.Token); err != nil {
					t.Errorf("worker %d release: %v", w, err)
					return
				}
				if p, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "two", Owner: owner(w), Limit: 2, Wait: 3 * time.Second}); err != nil {
					t.Errorf("worker %d permit: %v", w, err)
					return
				} else if err := e.ReleasePermit(ctx, "two", p.Token); err != nil {
					t.Errorf("worker %d give back: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
