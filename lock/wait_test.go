package lock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// critical tracks holders of one lock: inside counts the goroutines in the
// critical section at once, which must never exceed 1.
type critical struct {
	inside   atomic.Int32
	overlaps atomic.Int32

	mu     sync.Mutex
	order  []int
	tokens []int64
}

// hold runs the critical section of contender i, holding token.
func (c *critical) hold(i int, token int64) {
	if c.inside.Add(1) != 1 {
		c.overlaps.Add(1)
	}
	c.mu.Lock()
	c.order = append(c.order, i)
	c.tokens = append(c.tokens, token)
	c.mu.Unlock()
	runtime.Gosched() // give an overlapping holder, if any, a chance to show
	if c.inside.Load() != 1 {
		c.overlaps.Add(1)
	}
	c.inside.Add(-1)
}

// waitAll waits for wg, failing the test at ctx's end.
func waitAll(t *testing.T, ctx context.Context, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("contenders did not finish: %v", ctx.Err())
	}
}

func checkNoQueueLeft(t *testing.T, e *lock.Engine, keys []string) {
	t.Helper()
	if len(keys) != 0 {
		t.Fatalf("queue keys left in etcd: %v", keys)
	}
	if st, err := e.Stats(context.Background()); err != nil || st.Waiters != 0 {
		t.Fatalf("stats after contention: %+v, %v", st, err)
	}
}

// TestAcquire_ContendersAreServedFIFOOneAtATime queues 32 waiters in a known
// order behind a holder: they must get the lock one at a time, in that
// order, with strictly increasing tokens.
func TestAcquire_ContendersAreServedFIFOOneAtATime(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const n = 32
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "hot", Owner: "first"})

	var c critical
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "hot", Owner: owner(i), Wait: 30 * time.Second})
			if err != nil || !fresh {
				errs <- fmt.Errorf("%s: acquire: %v (fresh=%v)", owner(i), err, fresh)
				return
			}
			c.hold(i, l.Token)
			if err := e.Release(context.Background(), "hot", l.Token); err != nil {
				errs <- fmt.Errorf("%s: release: %v", owner(i), err)
			}
		}()
		// Start the next waiter only once this one's queue entry is in
		// etcd, so the arrival order is known.
		poll.Until(t, 10*time.Second, fmt.Sprintf("%s is queued", owner(i)), func() bool {
			ws, err := e.Waiters(ctx, "hot")
			if err != nil {
				t.Fatalf("waiters: %v", err)
			}
			return len(ws) == i+1 && ws[i].Owner == owner(i)
		})
	}
	ws, err := e.Waiters(ctx, "hot")
	if err != nil {
		t.Fatal(err)
	}
	for j, w := range ws {
		if w.Owner != owner(j) || w.Position != j+1 {
			t.Fatalf("queue position %d: %+v, want %s at %d", j, w, owner(j), j+1)
		}
	}
	if err := e.Release(ctx, "hot", first.Token); err != nil {
		t.Fatalf("release first holder: %v", err)
	}
	waitAll(t, ctx, &wg)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	if n := c.overlaps.Load(); n != 0 {
		t.Fatalf("%d times two contenders were inside the critical section at once", n)
	}
	for k, i := range c.order {
		if i != k {
			t.Fatalf("grant order %v, want queue order 0..%d", c.order, n-1)
		}
	}
	prev := first.Token
	for k, tok := range c.tokens {
		if tok <= prev {
			t.Fatalf("grant %d got token %d after %d: tokens must strictly increase (%v)", k, tok, prev, c.tokens)
		}
		prev = tok
	}
	checkNoQueueLeft(t, e, holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"queue/"))
	if !isNotHeld(t, e, "hot") {
		t.Fatal("lock still held after every contender released it")
	}
	evs := holdtest.History(t, e, "hot")
	if a, r := len(holdtest.EventsOf(evs, lock.EventAcquired)), len(holdtest.EventsOf(evs, lock.EventReleased)); a != n+1 || r != n+1 {
		t.Fatalf("history has %d acquired and %d released events, want %d each", a, r, n+1)
	}
}

// TestAcquire_SimultaneousContendersNeverOverlap lets 32 goroutines race
// for one lock at once, with no known order.
func TestAcquire_SimultaneousContendersNeverOverlap(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const n = 32
	var c critical
	errs := make(chan error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "race", Owner: owner(i), Wait: 30 * time.Second})
			if err != nil {
				errs <- fmt.Errorf("%s: acquire: %v", owner(i), err)
				return
			}
			c.hold(i, l.Token)
			if err := e.Release(context.Background(), "race", l.Token); err != nil {
				errs <- fmt.Errorf("%s: release: %v", owner(i), err)
			}
		}()
	}
	close(start)
	waitAll(t, ctx, &wg)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if n := c.overlaps.Load(); n != 0 {
		t.Fatalf("%d times two contenders were inside the critical section at once", n)
	}
	if len(c.order) != n {
		t.Fatalf("%d grants, want %d", len(c.order), n)
	}
	for k := 1; k < len(c.tokens); k++ {
		if c.tokens[k] <= c.tokens[k-1] {
			t.Fatalf("tokens not strictly increasing in grant order: %v", c.tokens)
		}
	}
	checkNoQueueLeft(t, e, holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"queue/"))
}

// A direct acquire never overtakes a queued waiter, even in the instant
// between a release and the waiter's grant.
func TestAcquire_DirectAcquireDoesNotOvertakeQueuedWaiter(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "q", Owner: "holder"})
	got := make(chan *lock.Lock, 1)
	go func() {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "q", Owner: "waiter", Wait: 30 * time.Second})
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- l
	}()
	poll.Until(t, 10*time.Second, "the waiter is queued", func() bool {
		ws, err := e.Waiters(ctx, "q")
		return err == nil && len(ws) == 1
	})
	if err := e.Release(ctx, "q", h.Token); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "q", Owner: "jumper"})
	if he := asHeld(t, err); he.Holder != nil && he.Holder.Owner != "waiter" {
		t.Fatalf("direct acquire refused naming %q, want the waiter or nobody", he.Holder.Owner)
	}
	var w *lock.Lock
	select {
	case w = <-got:
	case <-ctx.Done():
		t.Fatal("waiter never got the lock")
	}
	if w == nil || w.Owner != "waiter" || w.Token <= h.Token {
		t.Fatalf("waiter got %+v", w)
	}
}

// A waiter's hold starts with its whole TTL, however long it waited: the
// lease its queue entry named ran down while it waited, and is topped up
// at the grant. Its expires_at says so.
func TestAcquire_AWaiterIsGrantedItsWholeTTL(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const ttl = 3 * time.Second
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "q", Owner: "holder"})
	got := make(chan *lock.Lock, 1)
	go func() {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "q", Owner: "waiter", TTL: ttl, Wait: 30 * time.Second})
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- l
	}()
	var since time.Time
	poll.Until(t, 10*time.Second, "the waiter is queued", func() bool {
		ws, err := e.Waiters(ctx, "q")
		if err == nil && len(ws) == 1 {
			since = ws[0].Since
		}
		return !since.IsZero()
	})
	// The wait is the scenario: long enough for its lease to run down by
	// a fifth, short of the first keep-alive of the wait (a third of ttl).
	poll.Until(t, 10*time.Second, "a fifth of the TTL waited", func() bool { return time.Since(since) >= ttl/5 })
	if err := e.Release(ctx, "q", h.Token); err != nil {
		t.Fatal(err)
	}
	var w *lock.Lock
	select {
	case w = <-got:
	case <-ctx.Done():
		t.Fatal("waiter never got the lock")
	}
	if w == nil {
		t.Fatal("waiter got no lock")
	}
	if left := w.ExpiresAt.Sub(w.AcquiredAt); left < ttl-ttl/10-time.Millisecond {
		t.Errorf("granted after a wait with %s of its %s TTL left (expires_at %s, acquired_at %s); want the whole TTL",
			left, ttl, w.ExpiresAt, w.AcquiredAt)
	}
}

func TestAcquire_CancelledWaiterLeavesNoTrace(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "busy", Owner: "holder"})
	// A first waiter makes the node's shared waiter lease, which by design
	// outlives single waiters; the baseline includes it.
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "busy", Owner: "warmup", Wait: 50 * time.Millisecond}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("warm-up waiter: %v, want ErrHeld", err)
	}
	// So is the history index's bucket lease, once it holds the events.
	holdtest.History(t, e, "busy")
	baseline := leaseCount(t, cli)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := e.Acquire(wctx, lock.AcquireRequest{Name: "busy", Owner: "quitter", Wait: 30 * time.Second})
		done <- err
	}()
	poll.Until(t, 10*time.Second, "the waiter is queued", func() bool {
		ws, err := e.Waiters(ctx, "busy")
		return err == nil && len(ws) == 1 && ws[0].Owner == "quitter"
	})
	// The warm-up's unused lease went to the pool (leasePool) and the
	// quitter took it: no lease was granted for it.
	if n := leaseCount(t, cli); n != baseline {
		t.Fatalf("%d leases while waiting, want the baseline %d", n, baseline)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter returned %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("cancelled waiter did not return")
	}
	if ws, err := e.Waiters(ctx, "busy"); err != nil || len(ws) != 0 {
		t.Fatalf("waiters after cancel: %+v, %v", ws, err)
	}
	if keys := holdtest.KeysUnder(t, cli, holdtest.Prefix+"queue/"); len(keys) != 0 {
		t.Fatalf("queue keys after cancel: %v", keys)
	}
	// Its unused lease went back to the pool, not leaked: the next acquire
	// with the same TTL takes it instead of a grant.
	if n := leaseCount(t, cli); n != baseline {
		t.Fatalf("%d leases after cancel, want the baseline %d", n, baseline)
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "elsewhere", Owner: "next"})
	if n := leaseCount(t, cli); n != baseline {
		t.Fatalf("%d leases after the next acquire, want the baseline %d: the quitter's lease was not reused", n, baseline)
	}
	if got, err := e.Get(ctx, "busy"); err != nil || got.Token != h.Token {
		t.Fatalf("holder after cancel: %+v, %v", got, err)
	}
	// Once the holder leaves, nobody has the lock: the quitter took nothing.
	if err := e.Release(ctx, "busy", h.Token); err != nil {
		t.Fatal(err)
	}
	if !isNotHeld(t, e, "busy") {
		t.Fatal("lock taken after release although its only waiter left")
	}
	for _, ev := range holdtest.History(t, e, "busy") {
		if ev.Owner != "holder" {
			t.Fatalf("event of a waiter that never held the lock: %+v", ev)
		}
	}
}

func TestAcquire_WaitTimeoutNamesTheHolder(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "slow", Owner: "holder"})
	const wait = 300 * time.Millisecond
	start := time.Now()
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "slow", Owner: "impatient", Wait: wait})
	if took := time.Since(start); took < wait {
		t.Fatalf("gave up after %s, before the %s wait ran out", took, wait)
	}
	he := asHeld(t, err)
	if he.Holder == nil || he.Holder.Owner != "holder" || he.Holder.Token != h.Token || he.Holder.Name != "slow" {
		t.Fatalf("held error names %+v, want the holder with token %d", he.Holder, h.Token)
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"queue/"); len(keys) != 0 {
		t.Fatalf("queue keys after timeout: %v", keys)
	}
	// The leases are the holder's own, the audit bucket's, and two with
	// no key: the node's waiter lease (kept for the next waiter) and the
	// impatient one's unused lease, in the pool for the next acquire.
	if n, idle := leaseCount(t, m.Client()), keylessLeases(t, m.Client()); n != 4 || idle != 2 {
		t.Fatalf("%d leases (%d without keys) after the wait timed out, want 4 (2)", n, idle)
	}
}

func TestAcquire_WaiterGetsLockWhenHolderExpires(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "dead", Owner: "crashed", TTL: 2 * time.Second})
	l, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "dead", Owner: "next", Wait: 20 * time.Second})
	if err != nil || !fresh || l.Token <= h.Token {
		t.Fatalf("waiter: %+v fresh=%v %v", l, fresh, err)
	}
	if l.ExpiresAt.Before(time.Now().Add(20 * time.Second)) {
		t.Fatalf("waiter's lock expires at %v: a granted lock must start with (most of) its 30s TTL", l.ExpiresAt)
	}
	poll.Until(t, 10*time.Second, "the crashed holder's expiry is recorded", func() bool {
		return len(holdtest.EventsOf(holdtest.History(t, e, "dead"), lock.EventExpired)) == 1
	})
}

func TestClose_EndsWaitsWithErrClosed(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "c", Owner: "holder"})
	done := make(chan error, 1)
	go func() {
		_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "c", Owner: "waiter", Wait: 30 * time.Second})
		done <- err
	}()
	poll.Until(t, 10*time.Second, "the waiter is queued", func() bool {
		ws, err := e.Waiters(ctx, "c")
		return err == nil && len(ws) == 1
	})
	if err := e.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, lock.ErrClosed) {
			t.Fatalf("waiter on a closing engine: %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("waiter did not return when the engine closed")
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"queue/"); len(keys) != 0 {
		t.Fatalf("queue keys after close: %v", keys)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "c2", Owner: "w"}); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("acquire on a closed engine: %v, want ErrClosed", err)
	}
}

func TestAcquire_WaiterWhoseSessionExpiresStopsWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "busy", Owner: "holder", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	s, err := e.CreateSession(ctx, "waiter", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "busy", Owner: "waiter", Session: s.ID, Wait: 40 * time.Second})
	if !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("waiting in a session that expires: got %v, want ErrSessionNotFound", err)
	}
	// The session's TTL, plus the lessor's expiry check, is far below the wait.
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the wait noticed the session's end only after %s", d)
	}
	checkNoQueueLeft(t, e, nil)
}

// TestAcquire_QueuesAgainWhenEtcdEndedTheNodesWaiterLease: etcd ending
// the node's waiter lease behind its back (a partition or a pause longer
// than WaiterTTL) costs the next waiting acquire nothing: it queues under
// a new lease and is served.
func TestAcquire_QueuesAgainWhenEtcdEndedTheNodesWaiterLease(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "wl", Owner: "holder"})
	wctx, cancel := context.WithCancel(ctx)
	gone := acquireAsync(wctx, e, lock.AcquireRequest{Name: "wl", Owner: "first", Wait: time.Minute})
	queued(t, e, "wl", 1)
	keys := holdtest.KeysUnder(t, cli, holdtest.Prefix+"queue/wl/")
	if len(keys) != 1 {
		t.Fatalf("queue keys %v", keys)
	}
	hexID, _, _ := strings.Cut(keys[0], "-")
	id, err := strconv.ParseInt(hexID, 16, 64)
	if err != nil {
		t.Fatalf("queue key %q names no lease: %v", keys[0], err)
	}
	cancel()
	<-gone
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	next := acquireAsync(ctx, e, lock.AcquireRequest{Name: "wl", Owner: "next", Wait: time.Minute})
	queued(t, e, "wl", 1)
	if err := e.Release(ctx, "wl", h.Token); err != nil {
		t.Fatal(err)
	}
	if got := <-next; got.err != nil || got.l.Owner != "next" {
		t.Fatalf("the waiter after the waiter lease ended: %+v, %v", got.l, got.err)
	}
}

// TestAcquire_AWaitWhoseEntryVanishedIsNoRefusal: a wait that runs out to
// find its queue entry gone already (a release may have granted it a hold
// that ended before the waiter heard) does not answer "held": whether the
// acquire took effect is unknown.
func TestAcquire_AWaitWhoseEntryVanishedIsNoRefusal(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "vanish", Owner: "holder"})
	w := acquireAsync(ctx, e, lock.AcquireRequest{Name: "vanish", Owner: "waiter", Wait: 2 * time.Second})
	queued(t, e, "vanish", 1)
	if _, err := cli.Delete(ctx, holdtest.Prefix+"queue/vanish/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	got := <-w
	if !errors.Is(got.err, lock.ErrUnavailable) || errors.Is(got.err, lock.ErrHeld) {
		t.Fatalf("a wait whose entry vanished answered %v; want ErrUnavailable", got.err)
	}
}
