package lock_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

func TestAcquire_BeyondTheLockCapIsRefusedAndLeavesNothing(t *testing.T) {
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxLocks = 2 })
	ctx := holdtest.Ctx(t)
	cli := e.Client()
	a := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "a", Owner: "w"})
	s, err := e.CreateSession(ctx, "w", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "b", Owner: "w", Session: s.ID}) // locks in sessions count too
	// The history index grants its retention bucket's lease once it
	// indexes the first events: wait for it, so that the count below is
	// of the refusals' leases only.
	holdtest.History(t, e, "")
	leases := leaseCount(t, cli)

	for _, req := range []lock.AcquireRequest{{Name: "c", Owner: "w"}, {Name: "c", Owner: "w", Session: s.ID}} {
		_, _, err := e.Acquire(ctx, req)
		le := holdtest.AsLimit(t, err, lock.ErrTooManyHeldLocks)
		if le.Limit != 2 || le.RetryAfter <= 0 {
			t.Fatalf("limit error %+v, want limit 2 and a retry hint", le)
		}
	}
	if held := holdtest.KeysUnder(t, cli, holdtest.Prefix+"locks/"); !slices.Equal(held, []string{"a", "b"}) {
		t.Fatalf("lock keys %v, want a b", held)
	}
	if n := leaseCount(t, cli); n != leases {
		t.Fatalf("%d leases after the refusals, want %d", n, leases)
	}
	// Holding what one has is no new lock.
	if _, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "b", Owner: "w", Session: s.ID}); err != nil || fresh {
		t.Fatalf("acquire again in the same session at the cap: fresh=%v, %v", fresh, err)
	}
	// A release makes room, seen at the latest by the recount a refusal
	// makes once the count is older than a tenth of a second.
	if err := e.Release(ctx, "a", a.Token); err != nil {
		t.Fatal(err)
	}
	var got *lock.Lock
	poll.Until(t, 5*time.Second, "c acquired after a's release", func() bool {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "c", Owner: "w"})
		if err != nil && !errors.Is(err, lock.ErrTooManyHeldLocks) {
			t.Fatal(err)
		}
		got = l
		return err == nil
	})
	if got.Token <= a.Token {
		t.Fatalf("token %d after %d", got.Token, a.Token)
	}
}

// One engine never lets more locks than the cap be held, however many
// acquires race for the last slots.
func TestAcquire_ConcurrentAcquiresSettleWithinTheLockCap(t *testing.T) {
	const limit, acquirers = 5, 24
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxLocks = limit })
	ctx := holdtest.Ctx(t)
	var won atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range acquirers {
		wg.Go(func() {
			<-start
			_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: fmt.Sprintf("l%d", i), Owner: owner(i)})
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, lock.ErrTooManyHeldLocks):
				t.Errorf("acquire %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := len(holdtest.KeysUnder(t, e.Client(), holdtest.Prefix+"locks/")); n != limit || won.Load() != limit {
		t.Fatalf("%d locks held after %d acquires succeeded; want %d", n, won.Load(), limit)
	}
}

// An engine counts what the others hold before it refuses or admits its
// first acquire, and sees their releases within CountRefresh.
func TestAcquire_LockCapCountsWhatOtherNodesHold(t *testing.T) {
	m := testetcd.Start(t)
	cfg := lock.DefaultConfig()
	cfg.MaxLocks = 2
	e1, e2 := holdtest.StartEngine(t, m, cfg), holdtest.StartEngine(t, m, cfg)
	ctx := holdtest.Ctx(t)
	a := holdtest.MustAcquire(t, e1, lock.AcquireRequest{Name: "a", Owner: "w"})
	holdtest.MustAcquire(t, e1, lock.AcquireRequest{Name: "b", Owner: "w"})
	_, _, err := e2.Acquire(ctx, lock.AcquireRequest{Name: "c", Owner: "w"})
	holdtest.AsLimit(t, err, lock.ErrTooManyHeldLocks)
	if err := e1.Release(ctx, "a", a.Token); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "c acquired on the other node", func() bool {
		_, _, err := e2.Acquire(ctx, lock.AcquireRequest{Name: "c", Owner: "w"})
		if err != nil && !errors.Is(err, lock.ErrTooManyHeldLocks) {
			t.Fatal(err)
		}
		return err == nil
	})
}

// The documented bound of the approximation: an engine admits against
// its last count plus its own creates, so the cluster can exceed the cap
// by what the other engines created since that count, and no more.
func TestAcquire_LockCapOvershootIsWhatOthersCreatedSinceTheCount(t *testing.T) {
	const limit = 4
	m := testetcd.Start(t)
	cfg := lock.DefaultConfig()
	cfg.MaxLocks, cfg.CountRefresh = limit, time.Hour // no background count in this test
	e1, e2 := holdtest.StartEngine(t, m, cfg), holdtest.StartEngine(t, m, cfg)
	ctx := holdtest.Ctx(t)
	acquireAll := func(e *lock.Engine, prefix string) (n int) {
		for i := 0; ; i++ {
			_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: fmt.Sprintf("%s%d", prefix, i), Owner: "w"})
			if errors.Is(err, lock.ErrTooManyHeldLocks) {
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	holdtest.MustAcquire(t, e1, lock.AcquireRequest{Name: "first", Owner: "w"})  // e1 counts 0
	holdtest.MustAcquire(t, e2, lock.AcquireRequest{Name: "second", Owner: "w"}) // e2 counts 1
	n1 := acquireAll(e1, "a")                                                    // e1 does not see e2's
	n2 := acquireAll(e2, "b")                                                    // nor e2 e1's since its count
	held := len(holdtest.KeysUnder(t, e1.Client(), holdtest.Prefix+"locks/"))
	if n1 != limit-1 || n2 != limit-2 || held != limit+n1 {
		t.Fatalf("e1 took %d more, e2 %d more, %d held; want %d, %d and %d: the cap plus what e2 did not see", n1, n2, held, limit-1, limit-2, limit+n1)
	}
	// At their estimates' cap both refuse, counting again first.
	for _, e := range []*lock.Engine{e1, e2} {
		_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "late", Owner: "w"})
		holdtest.AsLimit(t, err, lock.ErrTooManyHeldLocks)
	}
}

func TestFenced_ValueOverTheSizeCapIsRefusedAndWritesNothing(t *testing.T) {
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxFencedValueBytes = 100 })
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w"})
	fits, _ := json.Marshal(strings.Repeat("x", 98))
	if _, err := e.PutFenced(ctx, "res", l.Token, fits, ""); err != nil {
		t.Fatalf("a value of exactly the cap: %v", err)
	}
	big, _ := json.Marshal(strings.Repeat("y", 99))
	_, err := e.PutFenced(ctx, "res", l.Token, big, "")
	if le := holdtest.AsLimit(t, err, lock.ErrValueTooLarge); le.Limit != 100 || !strings.Contains(le.Reason, "101") {
		t.Fatalf("limit error %+v, want limit 100 and the size named", le)
	}
	got, err := e.GetFenced(ctx, "res")
	if err != nil || string(got.Value) != string(fits) {
		t.Fatalf("value after the refusal: %+v, %v; want the first", got, err)
	}
	if _, err := e.PutFenced(ctx, "new", l.Token, big, ""); !errors.Is(err, lock.ErrValueTooLarge) {
		t.Fatalf("a new resource with a large value: %v", err)
	}
	if keys := holdtest.KeysUnder(t, e.Client(), holdtest.Prefix+"fencemax/"); !slices.Equal(keys, []string{"res"}) {
		t.Fatalf("fenced maxima %v, want res alone", keys)
	}
}

func TestFenced_NewResourceBeyondTheCapIsRefusedExistingOnesStayWritable(t *testing.T) {
	e := newCappedEngine(t, func(c *lock.Config) { c.MaxFencedValues = 2 })
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w"})
	for _, r := range []string{"r1", "r2"} {
		if _, err := e.PutFenced(ctx, r, l.Token, json.RawMessage(`1`), ""); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.PutFenced(ctx, "r3", l.Token, json.RawMessage(`1`), "")
	if le := holdtest.AsLimit(t, err, lock.ErrTooManyFencedValues); le.Limit != 2 {
		t.Fatalf("limit error %+v, want limit 2", le)
	}
	if _, err := e.GetFenced(ctx, "r3"); !errors.Is(err, lock.ErrNotFound) {
		t.Fatalf("r3 after the refusal: %v, want ErrNotFound", err)
	}
	if keys := holdtest.KeysUnder(t, e.Client(), holdtest.Prefix+"fencemax/"); !slices.Equal(keys, []string{"r1", "r2"}) {
		t.Fatalf("fenced maxima %v, want r1 r2", keys)
	}
	if _, err := e.PutFenced(ctx, "r1", l.Token, json.RawMessage(`2`), ""); err != nil {
		t.Fatalf("rewrite of an existing resource at the cap: %v", err)
	}
}

// Tokens are revisions: one above the current revision was never issued,
// and must neither be stored nor turn into a fault. MaxInt64 used to
// overflow the stale check.
func TestFenced_TokenNeverIssuedIsRefused(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w"})
	if _, err := e.PutFenced(ctx, "res", l.Token, json.RawMessage(`"kept"`), ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		res   string
		token int64
	}{{"res", math.MaxInt64}, {"res", l.Token + 1000}, {"fresh", math.MaxInt64}} {
		start := time.Now()
		_, err := e.PutFenced(ctx, tc.res, tc.token, json.RawMessage(`"never"`), "")
		if !errors.Is(err, lock.ErrUnknownToken) || errors.Is(err, lock.ErrUnavailable) {
			t.Fatalf("token %d on %s: %v, want ErrUnknownToken", tc.token, tc.res, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("token %d on %s took %s: retried instead of refused", tc.token, tc.res, took)
		}
	}
	got, err := e.GetFenced(ctx, "res")
	if err != nil || got.Token != l.Token || string(got.Value) != `"kept"` {
		t.Fatalf("res after the refusals: %+v, %v", got, err)
	}
	if _, err := e.GetFenced(ctx, "fresh"); !errors.Is(err, lock.ErrNotFound) {
		t.Fatalf("fresh after the refusal: %v, want ErrNotFound", err)
	}
	// The holder's own token still writes.
	if _, err := e.PutFenced(ctx, "res", l.Token, json.RawMessage(`"again"`), ""); err != nil {
		t.Fatal(err)
	}
}

// fillFenced writes 32 KiB values with token from several goroutines
// until etcd refuses for space: to names distinct resources round-robin
// (history, which compaction frees), or to a new resource each time when
// names is 0 (live values, which it does not).
func fillFenced(t *testing.T, e *lock.Engine, token int64, names int, quota int64) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	value, _ := json.Marshal(strings.Repeat("v", 32<<10-16))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > 4*quota/int64(len(value)) {
					t.Errorf("no NOSPACE after %d writes", i)
					return
				}
				res := fmt.Sprintf("r%d", i)
				if names > 0 {
					res = fmt.Sprintf("r%d", i%int64(names))
				}
				_, err := e.PutFenced(ctx, res, token, value, "")
				if errors.Is(err, lock.ErrNoSpace) {
					return
				}
				if err != nil {
					t.Errorf("fill: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// smallMember starts a member with a 16 MiB quota, and the engine config
// that knows it.
func smallMember(t *testing.T) (*embedetcd.Member, lock.Config) {
	const quota = 16 << 20
	ec := testetcd.Config(t)
	ec.QuotaBackendBytes = quota
	cfg := lock.DefaultConfig()
	cfg.BackendQuota = quota
	return testetcd.StartConfig(t, ec), cfg
}

// When the data kept fills the quota, compaction and defragmentation
// cannot help: Recover says what holds the space and leaves the alarm.
func TestRecover_LiveDataThatFillsTheQuotaIsStillFull(t *testing.T) {
	m, cfg := smallMember(t)
	cfg.Embedded = m
	e := holdtest.StartEngine(t, m, cfg)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w"})
	fillFenced(t, e, l.Token, 0, cfg.BackendQuota)
	if !e.NoSpace() || !errors.Is(e.Ready(ctx), lock.ErrNoSpace) {
		t.Fatal("NOSPACE alarm not reported after the fill")
	}
	_, err := e.Recover(ctx)
	var sf *lock.StillFullError
	if !errors.Is(err, lock.ErrStillFull) || !errors.As(err, &sf) {
		t.Fatalf("recover: %v, want a *StillFullError", err)
	}
	if sf.Keys["fenced values"] < 100 || sf.Quota != cfg.BackendQuota || sf.DBSize < cfg.BackendQuota*9/10 || !strings.Contains(err.Error(), "fenced values") {
		t.Fatalf("still full: %+v (%v), want the fenced values named", sf, err)
	}
	if !e.NoSpace() {
		t.Fatal("the alarm was disarmed although the store is still full")
	}
}

// Over a gRPC client (--etcd-endpoints) the engine has no hooks: it learns
// of the alarm from a refused write, and defragments through the client
// at the member's client URL.
func TestRecover_OverARemoteClientAsWithExternalEtcd(t *testing.T) {
	m, cfg := smallMember(t)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{m.Etcd().Config().AdvertiseClientUrls[0].String()}, DialTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	e := holdtest.StartEngineOn(t, cli, cfg)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w"})
	fillFenced(t, e, l.Token, 20, cfg.BackendQuota)
	if !e.NoSpace() || !errors.Is(e.Ready(ctx), lock.ErrNoSpace) {
		t.Fatal("NOSPACE not reported after a write was refused for it")
	}
	if _, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "other", Owner: "w"}); !errors.Is(err, lock.ErrNoSpace) {
		t.Fatalf("acquire on a full store: %v, want ErrNoSpace", err)
	}
	if _, err := e.GetFenced(ctx, "r1"); err != nil {
		t.Fatalf("read on a full store: %v", err)
	}
	r, err := e.Recover(ctx)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if !slices.Equal(r.Defragmented, []string{"test"}) || len(r.Alarms) != 0 || r.DBSize >= cfg.BackendQuota/2 {
		t.Fatalf("recover = %+v, want member test defragmented well under the quota and no alarm", r)
	}
	if e.NoSpace() || e.Ready(ctx) != nil {
		t.Fatal("still not ready after the recovery")
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "other", Owner: "w"})
}
