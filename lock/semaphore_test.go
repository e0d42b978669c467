package lock_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

type permitted struct {
	l   *lock.Lock
	err error
}

func permitAsync(ctx context.Context, e *lock.Engine, req lock.PermitRequest) <-chan permitted {
	ch := make(chan permitted, 1)
	go func() {
		l, err := e.AcquirePermit(ctx, req)
		ch <- permitted{l, err}
	}()
	return ch
}

func mustPermit(t *testing.T, e *lock.Engine, req lock.PermitRequest) *lock.Lock {
	t.Helper()
	l, err := e.AcquirePermit(context.Background(), req)
	if err != nil {
		t.Fatalf("acquire permit %+v: %v", req, err)
	}
	return l
}

// semWaiters waits until n acquires wait in line for semaphore name.
func semWaiters(t *testing.T, e *lock.Engine, name string, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the acquires wait in line", func() bool {
		s, err := e.Semaphore(context.Background(), name)
		return err == nil && len(s.Waiters) == n
	})
}

// TestSemaphore_LimitHoldersEachWithItsOwnToken: a semaphore of 3 grants
// three permits with rising tokens of their own, refuses a fourth with
// the holders, and a release lets the next one in.
func TestSemaphore_LimitHoldersEachWithItsOwnToken(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	var held []*lock.Lock
	for i := range 3 {
		l := mustPermit(t, e, lock.PermitRequest{Name: "jobs", Owner: owner(i), Limit: 3})
		if l.Name != "jobs" || l.Limit != 3 || l.Owner != owner(i) {
			t.Fatalf("permit %d: %+v", i, l)
		}
		if len(held) > 0 && l.Token <= held[len(held)-1].Token {
			t.Fatalf("permit %d token %d not above %d", i, l.Token, held[len(held)-1].Token)
		}
		held = append(held, l)
	}
	_, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "jobs", Owner: "late", Limit: 3})
	var he *lock.HeldError
	if !errors.Is(err, lock.ErrSemaphoreFull) || !errors.As(err, &he) || len(he.Holders) != 3 {
		t.Fatalf("fourth permit: %v (%+v); want semaphore full with 3 holders", err, he)
	}
	s, err := e.Semaphore(ctx, "jobs")
	if err != nil || s.Limit != 3 || len(s.Holders) != 3 || s.Holders[0].Token != held[0].Token {
		t.Fatalf("semaphore: %+v, %v", s, err)
	}
	if err := e.ReleasePermit(ctx, "jobs", held[1].Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := e.ReleasePermit(ctx, "jobs", held[1].Token); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release: %v; want not held", err)
	}
	l := mustPermit(t, e, lock.PermitRequest{Name: "jobs", Owner: "late", Limit: 3})
	if l.Token <= held[2].Token {
		t.Fatalf("token %d after release not above %d", l.Token, held[2].Token)
	}
	if _, err := e.RenewPermit(ctx, "jobs", l.Token); err != nil {
		t.Fatalf("renew: %v", err)
	}
	for _, tok := range []int64{held[0].Token, held[2].Token, l.Token} {
		if err := e.ReleasePermit(ctx, "jobs", tok); err != nil {
			t.Fatalf("release %d: %v", tok, err)
		}
	}
	if _, err := e.Semaphore(ctx, "jobs"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("idle semaphore: %v; want not held", err)
	}
}

// TestSemaphore_AnotherLimitIsRefusedWhileHeldAndTakenWhenIdle.
func TestSemaphore_AnotherLimitIsRefusedWhileHeldAndTakenWhenIdle(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := mustPermit(t, e, lock.PermitRequest{Name: "api", Owner: "a", Limit: 2})
	_, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "api", Owner: "b", Limit: 5})
	var me *lock.LimitMismatchError
	if !errors.As(err, &me) || me.Limit != 2 || me.Asked != 5 {
		t.Fatalf("other limit: %v; want a mismatch with limit 2", err)
	}
	_, err = e.AcquirePermit(ctx, lock.PermitRequest{Name: "api", Owner: "b", Limit: 5, Wait: 5 * time.Second})
	if !errors.As(err, &me) {
		t.Fatalf("other limit with wait: %v; want a mismatch", err)
	}
	if err := e.ReleasePermit(ctx, "api", l.Token); err != nil {
		t.Fatal(err)
	}
	l = mustPermit(t, e, lock.PermitRequest{Name: "api", Owner: "b", Limit: 5})
	if l.Limit != 5 {
		t.Fatalf("permit under the new limit: %+v", l)
	}
	s, err := e.Semaphore(ctx, "api")
	if err != nil || len(s.Waiters) != 0 {
		t.Fatalf("waiters after refusals: %+v, %v", s, err)
	}
}

// TestSemaphore_NeverMoreThanTheLimitAndServedInLine: 32 goroutines on
// two nodes take permits of a semaphore of 4 with wait, count themselves
// inside, and never count more than 4; every permit's token is its own,
// and every grant is in the trail.
func TestSemaphore_NeverMoreThanTheLimitAndServedInLine(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	const limit, workers, rounds = 4, 32, 3
	var inside, most atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	tokens := map[int64]string{}
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := a
			if w%2 == 1 {
				e = b
			}
			for range rounds {
				l, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "heavy", Owner: owner(w), Limit: limit, Wait: time.Minute})
				if err != nil {
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
				mu.Lock()
				if other, dup := tokens[l.Token]; dup {
					errs <- fmt.Errorf("workers %s and %d got token %d", other, w, l.Token)
				}
				tokens[l.Token] = owner(w)
				mu.Unlock()
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				inside.Add(-1)
				if err := e.ReleasePermit(ctx, "heavy", l.Token); err != nil {
					errs <- fmt.Errorf("worker %d release: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if most.Load() > limit {
		t.Fatalf("%d holders at once; the limit is %d", most.Load(), limit)
	}
	evs, _, err := holdtest.TrailOf(a).History(ctx, trail.HistoryOptions{Kind: lock.KindSemaphore, Name: "heavy", Limit: lock.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(holdtest.EventsOf(evs, lock.EventAcquired)); got != workers*rounds {
		t.Fatalf("%d acquired events; want %d", got, workers*rounds)
	}
}

// TestSemaphore_ReleaseHandsTheSeatToTheOldestWaiter: waiters queued
// through two nodes get permits in the order they came, each from a
// release's own txn (its token is the release's revision).
func TestSemaphore_ReleaseHandsTheSeatToTheOldestWaiter(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	p1 := mustPermit(t, a, lock.PermitRequest{Name: "s", Owner: "h1", Limit: 2})
	p2 := mustPermit(t, a, lock.PermitRequest{Name: "s", Owner: "h2", Limit: 2})
	w1 := permitAsync(ctx, b, lock.PermitRequest{Name: "s", Owner: "w1", Limit: 2, Wait: 30 * time.Second})
	semWaiters(t, a, "s", 1)
	w2 := permitAsync(ctx, a, lock.PermitRequest{Name: "s", Owner: "w2", Limit: 2, Wait: 30 * time.Second})
	semWaiters(t, a, "s", 2)
	if err := a.ReleasePermit(ctx, "s", p2.Token); err != nil {
		t.Fatal(err)
	}
	got := <-w1
	if got.err != nil || got.l.Owner != "w1" {
		t.Fatalf("first waiter: %+v", got)
	}
	evs := holdtest.EventsOf(semHistory(t, a, "s"), lock.EventReleased)
	if len(evs) != 1 || evs[0].Revision != got.l.Token {
		t.Fatalf("w1's token %d is not the release's revision (%+v)", got.l.Token, evs)
	}
	if err := b.ReleasePermit(ctx, "s", p1.Token); err != nil {
		t.Fatal(err)
	}
	if got := <-w2; got.err != nil || got.l.Owner != "w2" {
		t.Fatalf("second waiter: %+v", got)
	}
}

// TestSemaphore_AnExpiredPermitFreesItsSeat: a permit whose holder dies
// (its lease runs out) leaves no permit behind, and a waiter takes it.
func TestSemaphore_AnExpiredPermitFreesItsSeat(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	mustPermit(t, e, lock.PermitRequest{Name: "x", Owner: "dies", Limit: 1, TTL: 2 * time.Second})
	w := permitAsync(ctx, e, lock.PermitRequest{Name: "x", Owner: "next", Limit: 1, Wait: time.Minute})
	got := <-w
	if got.err != nil || got.l.Owner != "next" {
		t.Fatalf("waiter after expiry: %+v", got)
	}
	poll.Until(t, 10*time.Second, "the expiry is recorded", func() bool {
		return len(holdtest.EventsOf(semHistory(t, e, "x"), lock.EventExpired)) == 1
	})
}

// TestSemaphore_ASessionReleasesItsPermitsAtOnce: deleting a session
// that holds two permits of one semaphore releases both in one txn,
// the first handed to the waiter.
func TestSemaphore_ASessionReleasesItsPermitsAtOnce(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "pool", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mustPermit(t, e, lock.PermitRequest{Name: "pool", Owner: "a", Limit: 2, Session: s.ID})
	mustPermit(t, e, lock.PermitRequest{Name: "pool", Owner: "b", Limit: 2, Session: s.ID})
	got, err := e.GetSession(ctx, s.ID)
	if err != nil || len(got.Semaphores) != 1 || got.Semaphores[0] != "pool" {
		t.Fatalf("session: %+v, %v", got, err)
	}
	w := permitAsync(ctx, e, lock.PermitRequest{Name: "pool", Owner: "w", Limit: 2, Wait: 30 * time.Second})
	semWaiters(t, e, "pool", 1)
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatalf("delete session: %v", err)
	}
	if got := <-w; got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	sem, err := e.Semaphore(ctx, "pool")
	if err != nil || len(sem.Holders) != 1 || sem.Holders[0].Owner != "w" {
		t.Fatalf("semaphore after the session: %+v, %v", sem, err)
	}
}

func semHistory(t *testing.T, e *lock.Engine, name string) []lock.Event {
	t.Helper()
	evs, _, err := holdtest.TrailOf(e).History(context.Background(), trail.HistoryOptions{Kind: lock.KindSemaphore, Name: name, Limit: lock.MaxListLimit})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	return evs
}

// TestSemaphore_WaitersAreServedInTheOrderTheyQueued: eight waiters queue
// one after another through two nodes behind a full semaphore of 2; each
// gives its permit back as soon as it has it, so releases race each
// other through both nodes. The grants, in token order, follow the queue.
func TestSemaphore_WaitersAreServedInTheOrderTheyQueued(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	h1 := mustPermit(t, a, lock.PermitRequest{Name: "fifo", Owner: "h1", Limit: 2})
	h2 := mustPermit(t, b, lock.PermitRequest{Name: "fifo", Owner: "h2", Limit: 2})
	type grant struct {
		owner string
		token int64
	}
	grants := make(chan grant, 8)
	errs := make(chan error, 8)
	for i := range 8 {
		e := []*lock.Engine{a, b}[i%2]
		go func() {
			l, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "fifo", Owner: owner(i), Limit: 2, Wait: time.Minute})
			if err != nil {
				errs <- err
				return
			}
			grants <- grant{l.Owner, l.Token}
			if err := e.ReleasePermit(ctx, "fifo", l.Token); err != nil {
				errs <- err
			}
		}()
		semWaiters(t, a, "fifo", i+1)
	}
	if err := a.ReleasePermit(ctx, "fifo", h1.Token); err != nil {
		t.Fatal(err)
	}
	if err := b.ReleasePermit(ctx, "fifo", h2.Token); err != nil {
		t.Fatal(err)
	}
	var got []grant
	for range 8 {
		select {
		case g := <-grants:
			got = append(got, g)
		case err := <-errs:
			t.Fatal(err)
		}
	}
	slices.SortFunc(got, func(x, y grant) int { return cmp.Compare(x.token, y.token) })
	for i, g := range got {
		if g.owner != owner(i) {
			t.Fatalf("grants in token order %+v; want w00, w01, … as they queued", got)
		}
	}
}
