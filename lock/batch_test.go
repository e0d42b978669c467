package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// batchSizes reads baton_etcd_txn_batch_size from e's Collector: how many
// txns the batcher sent, and how many requests they carried in all.
func batchSizes(t *testing.T, e *lock.Engine) (txns uint64, requests float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.Collector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() == "baton_etcd_txn_batch_size" {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatal("no series baton_etcd_txn_batch_size")
	return 0, 0
}

// overBoth runs f on an engine over the member's in-process client and on
// one over a gRPC client of the same kind of member, as with
// --etcd-endpoints.
func overBoth(t *testing.T, f func(t *testing.T, e *lock.Engine, cli *clientv3.Client)) {
	for _, remote := range []bool{false, true} {
		t.Run(fmt.Sprintf("remote=%v", remote), func(t *testing.T) {
			t.Parallel()
			m := testetcd.Start(t)
			cli := m.Client()
			if remote {
				var err error
				cli, err = clientv3.New(clientv3.Config{
					Endpoints: []string{m.Etcd().Config().AdvertiseClientUrls[0].String()}, DialTimeout: 5 * time.Second,
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cli.Close() })
			}
			f(t, holdtest.StartEngineOn(t, cli, lock.DefaultConfig()), cli)
		})
	}
}

// waitQueued waits until n requests of e wait for a batch.
func waitQueued(t *testing.T, e *lock.Engine, n int) {
	t.Helper()
	poll.Until(t, 20*time.Second, fmt.Sprintf("%d requests queued for a batch", n), func() bool {
		return lock.QueuedTxns(e) >= n
	})
	if got := lock.QueuedTxns(e); got != n {
		t.Fatalf("%d requests queued, want %d", got, n)
	}
}

func TestBatch_ALoneRequestGoesOutAtOnceAndAlone(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w1", 0)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "lone", Owner: "w1", Session: s.ID})
	if err := e.Release(ctx, "lone", l.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Nothing else was in flight: each txn went out by itself, none waited.
	if txns, reqs := batchSizes(t, e); txns != 2 || reqs != 2 {
		t.Fatalf("%d txns carried %v requests, want 2 txns of one request each", txns, reqs)
	}
	if n := lock.QueuedTxns(e); n != 0 {
		t.Fatalf("%d requests left queued", n)
	}
}

// TestBatch_RequestsWritingOneKeyNeverShareABatch queues two acquires of
// one lock and one of another while a txn is in flight. The acquires of
// "x" write the same keys, so the first goes with "y" and the second in a
// txn of its own; whichever etcd applies first wins "x".
func TestBatch_RequestsWritingOneKeyNeverShareABatch(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	lock.SetTxnSlots(e, 1)
	s, err := e.CreateSession(ctx, "w", 0)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	release := lock.HoldTxnSlots(e)
	type result struct {
		owner string
		l     *lock.Lock
		err   error
	}
	results := make(chan result, 3)
	// a and b in locks of their own: in one session the second would be
	// idempotent, not refused.
	for _, r := range []struct{ name, owner, session string }{{"x", "a", ""}, {"x", "b", ""}, {"y", "c", s.ID}} {
		go func() {
			l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: r.name, Owner: r.owner, Session: r.session})
			results <- result{r.owner, l, err}
		}()
	}
	waitQueued(t, e, 3)
	release()
	got := map[string]result{}
	for range 3 {
		r := <-results
		got[r.owner] = r
	}
	xWinner, xLoser := got["a"], got["b"]
	if xWinner.err != nil {
		xWinner, xLoser = xLoser, xWinner
	}
	if xWinner.err != nil || xWinner.l.Name != "x" {
		t.Fatalf("no acquire of x won: a %v, b %v", got["a"].err, got["b"].err)
	}
	if he := asHeld(t, xLoser.err); he.Holder == nil || he.Holder.Token != xWinner.l.Token {
		t.Fatalf("losing acquire of x: %+v, want held by token %d", he, xWinner.l.Token)
	}
	if y := got["c"]; y.err != nil {
		t.Fatalf("acquire of y: %v", y.err)
	}
	// Two txns: one acquire of x with y, the other alone.
	if txns, reqs := batchSizes(t, e); txns != 2 || reqs != 3 {
		t.Fatalf("%d txns carried %v requests, want a batch of 2 and one of 1", txns, reqs)
	}
}

// TestBatch_AcquireInAnEndedSessionFailsAloneInItsBatch batches three
// session acquires, one of them in a session whose lease is gone: that one
// is refused and the others are granted, in one txn.
func TestBatch_AcquireInAnEndedSessionFailsAloneInItsBatch(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	var ids []string
	for i := range 3 {
		s, err := e.CreateSession(ctx, owner(i), 0)
		if err != nil {
			t.Fatalf("create session: %v", err)
		}
		ids = append(ids, s.ID)
	}
	deadID, err := strconv.ParseInt(ids[1], 16, 64)
	if err != nil {
		t.Fatalf("session ID %q: %v", ids[1], err)
	}
	if _, err := m.Client().Revoke(ctx, clientv3.LeaseID(deadID)); err != nil {
		t.Fatalf("revoke session lease: %v", err)
	}
	release := lock.HoldTxnSlots(e)
	errs := make([]error, 3)
	locks := make([]*lock.Lock, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			locks[i], _, errs[i] = e.Acquire(ctx, lock.AcquireRequest{Name: fmt.Sprintf("s%d", i), Owner: owner(i), Session: ids[i]})
		}()
	}
	waitQueued(t, e, 3)
	release()
	waitAll(t, ctx, &wg)
	if !errors.Is(errs[1], lock.ErrSessionNotFound) {
		t.Fatalf("acquire in the ended session: %v, want ErrSessionNotFound", errs[1])
	}
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("acquires in live sessions: %v, %v", errs[0], errs[2])
	}
	if locks[0].Token != locks[2].Token {
		t.Fatalf("tokens %d and %d: want one batch, one revision", locks[0].Token, locks[2].Token)
	}
	if txns, reqs := batchSizes(t, e); txns != 1 || reqs != 3 {
		t.Fatalf("%d txns carried %v requests, want one batch of 3", txns, reqs)
	}
	if n := metric(t, e, "baton_etcd_txn_batch_splits_total"); n != 0 {
		t.Fatalf("%v batches split; the session's compare keeps its put from running", n)
	}
}

// TestBatch_APutOnADeadLeaseFailsOnlyItsOwnRequest: etcd refuses a whole
// txn when one put in it names a lease that is gone, so the batcher sends
// each member again alone. A dead lease on a branch not taken does not
// count (etcd checks only the branches it runs).
func TestBatch_APutOnADeadLeaseFailsOnlyItsOwnRequest(t *testing.T) {
	t.Parallel()
	overBoth(t, testDeadLease)
}

func testDeadLease(t *testing.T, e *lock.Engine, cli *clientv3.Client) {
	ctx := holdtest.Ctx(t)
	g, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	if _, err := cli.Revoke(ctx, g.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	put := func(k string, opts ...clientv3.OpOption) []clientv3.Op {
		return []clientv3.Op{clientv3.OpPut(holdtest.Prefix+"t/"+k, "v", opts...)}
	}
	absent := func(k string) []clientv3.Cmp {
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(holdtest.Prefix+"t/"+k), "=", 0)}
	}
	run := func(reqs [][3]any) ([]*clientv3.TxnResponse, []error) {
		t.Helper()
		release := lock.HoldTxnSlots(e)
		resps := make([]*clientv3.TxnResponse, len(reqs))
		errs := make([]error, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				then, _ := r[1].([]clientv3.Op)
				els, _ := r[2].([]clientv3.Op)
				resps[i], errs[i] = lock.Txn(ctx, e, r[0].([]clientv3.Cmp), then, els)
			}()
		}
		waitQueued(t, e, len(reqs))
		release()
		waitAll(t, ctx, &wg)
		return resps, errs
	}

	// The dead lease on the branch taken: the batch is refused, then each
	// request alone gets its own answer.
	resps, errs := run([][3]any{
		{absent("a"), put("a"), nil},
		{absent("b"), put("b", clientv3.WithLease(g.ID)), nil},
		{absent("c"), put("c"), nil},
	})
	if !errors.Is(errs[1], rpctypes.ErrLeaseNotFound) {
		t.Fatalf("put on the dead lease: %v, want lease not found", errs[1])
	}
	for _, i := range []int{0, 2} {
		if errs[i] != nil || !resps[i].Succeeded || resps[i].Header.Revision == 0 {
			t.Fatalf("request %d: %+v, %v, want it applied", i, resps[i], errs[i])
		}
	}
	if n := metric(t, e, "baton_etcd_txn_batch_splits_total"); n != 1 {
		t.Fatalf("%v batches split, want 1", n)
	}
	if got := holdtest.KeysUnder(t, cli, holdtest.Prefix+"t/"); fmt.Sprint(got) != "[a c]" {
		t.Fatalf("keys %v, want [a c]", got)
	}

	// The dead lease only on the branch not taken: one txn, no split.
	resps, errs = run([][3]any{
		{absent("d"), put("d"), put("d", clientv3.WithLease(g.ID))},
		{absent("e"), put("e"), nil},
	})
	for i := range resps {
		if errs[i] != nil || !resps[i].Succeeded {
			t.Fatalf("request %d: %+v, %v, want it applied", i, resps[i], errs[i])
		}
	}
	if resps[0].Header.Revision != resps[1].Header.Revision {
		t.Fatalf("revisions %d and %d, want one txn", resps[0].Header.Revision, resps[1].Header.Revision)
	}
	if n := metric(t, e, "baton_etcd_txn_batch_splits_total"); n != 1 {
		t.Fatalf("%v batches split, want still 1", n)
	}
}

// TestBatch_ACallerThatLeavesWhileQueuedIsNeverSent: its txn is withdrawn,
// and the others in the queue go out without it.
func TestBatch_ACallerThatLeavesWhileQueuedIsNeverSent(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	release := lock.HoldTxnSlots(e)
	gone, cancel := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() {
		_, err := lock.Txn(gone, e, nil, []clientv3.Op{clientv3.OpPut(holdtest.Prefix+"t/gone", "v")}, nil)
		left <- err
	}()
	stays := make(chan error, 1)
	go func() {
		_, err := lock.Txn(ctx, e, nil, []clientv3.Op{clientv3.OpPut(holdtest.Prefix+"t/stays", "v")}, nil)
		stays <- err
	}()
	waitQueued(t, e, 2)
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("caller that left: %v, want context.Canceled", err)
	}
	waitQueued(t, e, 1)
	release()
	if err := <-stays; err != nil {
		t.Fatalf("caller that stayed: %v", err)
	}
	if got := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"t/"); fmt.Sprint(got) != "[stays]" {
		t.Fatalf("keys %v, want only [stays]", got)
	}
}

// TestBatch_ConcurrentCyclesKeepEveryGuarantee runs acquire+release cycles
// from many goroutines at once, on names of their own and on names they
// share (waiting for them), with one txn slot so that nearly every txn is
// a batch. Shared names never have two holders, their tokens grow in grant
// order, and every hold is audited exactly once as acquired and once as
// released.
func TestBatch_ConcurrentCyclesKeepEveryGuarantee(t *testing.T) {
	t.Parallel()
	overBoth(t, testConcurrentCycles)
}

func testConcurrentCycles(t *testing.T, e *lock.Engine, cli *clientv3.Client) {
	ctx := holdtest.Ctx(t)
	lock.SetTxnSlots(e, 1)
	s, err := e.CreateSession(ctx, "w", 0)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	const (
		workers = 24
		cycles  = 6
		shared  = 3
	)
	crit := make([]critical, shared)
	holds := make(chan *lock.Lock, workers*cycles*2)
	errs := make(chan error, workers*cycles*2)
	cycle := func(name string, i int, req lock.AcquireRequest, c *critical) error {
		l, _, err := e.Acquire(ctx, req)
		if err != nil {
			return fmt.Errorf("%s: acquire %s: %v", owner(i), name, err)
		}
		if c != nil {
			c.hold(i, l.Token)
		}
		holds <- l
		if err := e.Release(ctx, name, l.Token); err != nil {
			return fmt.Errorf("%s: release %s: %v", owner(i), name, err)
		}
		return nil
	}
	// Every worker's first acquire queues behind the held slot, so the
	// first txn after it is a batch, whatever the scheduler does.
	release := lock.HoldTxnSlots(e)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range cycles {
				own := fmt.Sprintf("own-%d-%d", i, k)
				req := lock.AcquireRequest{Name: own, Owner: owner(i)}
				if i%2 == 0 {
					req.Session = s.ID
				}
				if err := cycle(own, i, req, nil); err != nil {
					errs <- err
					return
				}
				j := (i + k) % shared
				name := fmt.Sprintf("shared-%d", j)
				if err := cycle(name, i, lock.AcquireRequest{Name: name, Owner: owner(i), Wait: 30 * time.Second}, &crit[j]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	waitQueued(t, e, workers)
	release()
	waitAll(t, ctx, &wg)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	close(holds)
	checkCycles(t, e, crit, holds)
	txns, reqs := batchSizes(t, e)
	if reqs <= float64(txns) {
		t.Fatalf("%d txns carried %v requests: no batch had more than one", txns, reqs)
	}
	t.Logf("%d txns carried %v requests", txns, reqs)
	checkNoQueueLeft(t, e, holdtest.KeysUnder(t, cli, holdtest.Prefix+"queue/"))
	if n := len(holdtest.KeysUnder(t, cli, holdtest.Prefix+"locks/")); n != 0 {
		t.Fatalf("%d locks still held", n)
	}
}

// TestBatch_ReleasesInOneSessionShareABatchUnlessTheSessionIsCapped: a
// release counts into its session's tally only if the acquire did
// (MaxLocksPerSession on), and counted releases of one session write one
// key, so only they go one per txn.
func TestBatch_ReleasesInOneSessionShareABatchUnlessTheSessionIsCapped(t *testing.T) {
	t.Parallel()
	for _, capped := range []bool{false, true} {
		t.Run(fmt.Sprintf("capped=%v", capped), func(t *testing.T) {
			m := testetcd.Start(t)
			cfg := lock.DefaultConfig()
			if capped {
				cfg.MaxLocksPerSession = 10
			}
			e := holdtest.StartEngine(t, m, cfg)
			ctx := holdtest.Ctx(t)
			s, err := e.CreateSession(ctx, "w", 0)
			if err != nil {
				t.Fatalf("create session: %v", err)
			}
			var held []*lock.Lock
			for _, n := range []string{"a", "b", "c"} {
				held = append(held, holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: "w", Session: s.ID}))
			}
			txns0, reqs0 := batchSizes(t, e)
			release := lock.HoldTxnSlots(e)
			var wg sync.WaitGroup
			errs := make([]error, len(held))
			for i, l := range held {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = e.Release(ctx, l.Name, l.Token)
				}()
			}
			waitQueued(t, e, len(held))
			release()
			waitAll(t, ctx, &wg)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("release %s: %v", held[i].Name, err)
				}
			}
			txns, reqs := batchSizes(t, e)
			txns, reqs = txns-txns0, reqs-reqs0
			want := uint64(1)
			if capped {
				want = 3
			}
			if txns != want || reqs != 3 {
				t.Fatalf("3 releases went out in %d txns (%v requests), want %d", txns, reqs, want)
			}
			// And the tally, where kept, counted all three: the session
			// has room for its whole cap again.
			if capped {
				for i := range cfg.MaxLocksPerSession {
					holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: fmt.Sprintf("r%d", i), Owner: "w", Session: s.ID})
				}
			}
		})
	}
}

// TestBatch_ABatchIsBoundByTheEngineNotByItsCallers: what is queued when
// the engine closes fails (as the engine's own etcd calls do then) instead
// of being sent, and no caller waits beyond it.
func TestBatch_ABatchIsBoundByTheEngineNotByItsCallers(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	release := lock.HoldTxnSlots(e)
	errs := make(chan error, 2)
	for _, k := range []string{"a", "b"} {
		go func() {
			_, err := lock.Txn(ctx, e, nil, []clientv3.Op{clientv3.OpPut(holdtest.Prefix+"t/"+k, "v")}, nil)
			errs <- err
		}()
	}
	waitQueued(t, e, 2)
	e.Close()
	release()
	for range 2 {
		select {
		case err := <-errs:
			if err == nil {
				t.Fatal("a txn queued when the engine closed was committed")
			}
		case <-ctx.Done():
			t.Fatal("a caller still waits after the engine closed")
		}
	}
	if got := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"t/"); len(got) != 0 {
		t.Fatalf("keys %v written after the engine closed", got)
	}
}

// checkCycles checks the holds of testConcurrentCycles: the shared locks
// never had two holders at once and granted increasing tokens, and every
// hold was audited once acquired and once released.
func checkCycles(t *testing.T, e *lock.Engine, crit []critical, holds <-chan *lock.Lock) {
	t.Helper()
	byName := map[string][]int64{}
	for l := range holds {
		byName[l.Name] = append(byName[l.Name], l.Token)
	}
	for j := range crit {
		c := &crit[j]
		if n := c.overlaps.Load(); n != 0 {
			t.Errorf("shared-%d: %d times two holders at once", j, n)
		}
		for k := 1; k < len(c.tokens); k++ {
			if c.tokens[k] <= c.tokens[k-1] {
				t.Errorf("shared-%d: tokens not increasing in grant order: %v", j, c.tokens)
				break
			}
		}
	}
	for name, tokens := range byName {
		evs := holdtest.History(t, e, name)
		acquired, released := map[int64]int{}, map[int64]int{}
		for _, ev := range holdtest.EventsOf(evs, lock.EventAcquired) {
			acquired[ev.Token]++
		}
		for _, ev := range holdtest.EventsOf(evs, lock.EventReleased) {
			released[ev.Token]++
		}
		if len(evs) != 2*len(tokens) {
			t.Errorf("%s: %d audit events for %d holds", name, len(evs), len(tokens))
		}
		for _, tok := range tokens {
			if acquired[tok] != 1 || released[tok] != 1 {
				t.Errorf("%s: hold %d audited %d× acquired, %d× released; want once each", name, tok, acquired[tok], released[tok])
			}
		}
	}
}
