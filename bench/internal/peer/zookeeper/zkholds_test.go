package zookeeper

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/internal/poll"
)

// zkCounted runs turns holds of every contender (each a worker with a
// session of its own), one goroutine a contender, each counted by counter
// as the scenario counts them, with a round trip to the server inside
// every critical section so that an overlap has the time to show, and
// fails the test on any breach the counter sees. It returns the most
// held.
func zkCounted(t *testing.T, ctx context.Context, counter *contend.HoldCounter, cs []contend.Contender, turns int, roundTrip func() error) int64 {
	t.Helper()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for w, c := range cs {
		c := c.Counted(counter, 0)
		wg.Go(func() {
			for range turns {
				token, err := c.Take(ctx, c.Mode())
				if err != nil {
					errs[w] = err
					return
				}
				if err = errors.Join(roundTrip(), c.Give(ctx, token)); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	rep, err := counter.Report(0, &measure.ErrorCount{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep.(contend.HoldsReport).MostHeld
}

// TestZkHoldRecipes checks Curator's semaphore and read/write lock
// recipes as zkholds.go runs them, on one server.
func TestZkHoldRecipes(t *testing.T) {
	s := startTestZooKeeper(t)
	t.Run("semaphore never more than the limit", func(t *testing.T) { testZkSemaphoreLimit(t, s) })
	t.Run("rwlock a writer alone, readers share", func(t *testing.T) { testZkRWLockAlone(t, s) })
	t.Run("rwlock first come first served", func(t *testing.T) { testZkRWLockFIFO(t, s) })
}

func testZkSemaphoreLimit(t *testing.T, s *Server) {
	const workers, turns, limit = 6, 20, 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns, closeAll, err := zkSessions(ctx, s.Addr, workers)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	sem := zkSemaphore{conn: conns[0], path: zkLocksRoot + "/sem-limit", limit: limit}
	if err := sem.ensure(); err != nil {
		t.Fatal(err)
	}
	counter := contend.NewHoldCounter(limit)
	cs := make([]contend.Contender, workers)
	for w, conn := range conns {
		cs[w] = zkSemaphoreContender(zkSemaphore{conn: conn, path: sem.path, limit: limit})
	}
	most := zkCounted(t, ctx, counter, cs, turns, func() error { _, _, err := conns[0].Exists(sem.leases()); return err })
	t.Logf("at most %d permits held at once", most)
	if most > limit {
		t.Errorf("%d permits held at once, limit %d", most, limit)
	}
	for _, dir := range []string{sem.leases(), sem.mutex().dir} {
		if children, _, err := conns[0].Children(dir); err != nil || len(children) != 0 {
			t.Errorf("children of %s after every release: %v (%v)", dir, children, err)
		}
	}
}

func testZkRWLockAlone(t *testing.T, s *Server) {
	const workers, turns = 6, 20
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns, closeAll, err := zkSessions(ctx, s.Addr, workers)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	dir := zkLocksRoot + "/rw-alone"
	if err := zkEnsure(conns[0], dir); err != nil {
		t.Fatal(err)
	}
	counter := contend.NewHoldCounter(0)
	cs := make([]contend.Contender, workers)
	for w, conn := range conns {
		cs[w] = zkRWContender(conn, dir, w)
	}
	most := zkCounted(t, ctx, counter, cs, turns, func() error { _, _, err := conns[0].Exists(dir); return err })
	t.Logf("at most %d holds at once", most)
	if children, _, err := conns[0].Children(dir); err != nil || len(children) != 0 {
		t.Errorf("children of %s after every release: %v (%v)", dir, children, err)
	}
}

// testZkRWLockFIFO checks the recipe's queue: a reader joins a reader at
// once, a writer waits for both, and a reader that comes after the
// waiting writer waits behind it.
func testZkRWLockFIFO(t *testing.T, s *Server) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns, closeAll, err := zkSessions(ctx, s.Addr, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	dir := zkLocksRoot + "/rw-fifo"
	if err := zkEnsure(conns[0], dir); err != nil {
		t.Fatal(err)
	}
	r1, r2 := zkRWLock(conns[0], dir, contend.HoldRead), zkRWLock(conns[1], dir, contend.HoldRead)
	h1, err1 := r1.lock(ctx)
	h2, err2 := r2.lock(ctx)
	if err := errors.Join(err1, err2); err != nil || h1.waits+h2.waits != 0 {
		t.Fatalf("two readers: %+v %+v, %v; want both at once", h1, h2, err)
	}
	w := zkRWLock(conns[2], dir, contend.HoldWrite)
	written := make(chan error, 1)
	go func() {
		h, err := w.lock(ctx)
		if err == nil && h.waits == 0 {
			err = errors.New("the writer held beside the readers")
		}
		written <- errors.Join(err, w.unlock(h))
	}()
	poll.Until(t, 10*time.Second, "the writer queues", func() bool {
		children, _, err := conns[3].Children(dir)
		return err == nil && len(children) == 3
	})
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer rcancel()
	if _, err := zkRWLock(conns[3], dir, contend.HoldRead).lock(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a reader behind a waiting writer: %v, want it to wait (%v)", err, context.DeadlineExceeded)
	}
	if err := errors.Join(r1.unlock(h1), r2.unlock(h2)); err != nil {
		t.Fatal(err)
	}
	if err := <-written; err != nil {
		t.Error(err)
	}
}
