package lock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// setWatcher follows every lock key in etcd and checks, after each
// revision, that no lock set is held in part: every held member's record
// names its set, and every name of it is held with the same token.
type setWatcher struct {
	mu     sync.Mutex
	held   map[string]setMember // lock name → its hold
	errs   []string
	revs   int
	cancel context.CancelFunc
	done   chan struct{}
}

type setMember struct {
	Set   []string `json:"set"`
	token int64
}

func watchSets(t *testing.T, cli *clientv3.Client) *setWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &setWatcher{held: map[string]setMember{}, cancel: cancel, done: make(chan struct{})}
	resp, err := cli.Get(ctx, holdtest.Prefix+"locks/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		w.apply(&clientv3.Event{Type: mvccpb.PUT, Kv: kv})
	}
	wch := cli.Watch(ctx, holdtest.Prefix+"locks/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	go func() {
		defer close(w.done)
		for wr := range wch {
			w.mu.Lock()
			for _, ev := range wr.Events {
				w.apply(ev)
			}
			if len(wr.Events) > 0 {
				w.check(wr.Events[len(wr.Events)-1].Kv.ModRevision)
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *setWatcher) apply(ev *clientv3.Event) {
	name := strings.TrimPrefix(string(ev.Kv.Key), holdtest.Prefix+"locks/")
	if ev.Type == mvccpb.DELETE {
		delete(w.held, name)
		return
	}
	var m setMember
	_ = json.Unmarshal(ev.Kv.Value, &m)
	m.token = ev.Kv.ModRevision
	w.held[name] = m
}

// check runs once the events of a revision are applied: a watch response
// never splits a revision's events.
func (w *setWatcher) check(rev int64) {
	w.revs++
	for name, m := range w.held {
		for _, n := range m.Set {
			if got, ok := w.held[n]; !ok || got.token != m.token {
				w.errs = append(w.errs, fmt.Sprintf("revision %d: %s is held by set %v, but its member %s is not (%+v)", rev, name, m.Set, n, got))
			}
		}
	}
}

func (w *setWatcher) stop() {
	w.cancel()
	<-w.done
}

// verdict stops the watcher and fails t if it saw a set held in part.
func (w *setWatcher) verdict(t *testing.T) {
	t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs[:min(len(w.errs), 10)] {
		t.Error(e)
	}
	if w.revs == 0 {
		t.Fatal("the watcher saw no revision")
	}
}

// TestLockSet_NoDeadlockAndAlwaysWholeUnderContention: 16 goroutines on
// two nodes take random sets of 2 to 4 of 6 names, in random orders, with
// wait, 500 sets in all, and single locks of the same names between
// them. Every acquire is granted within its wait and the whole run within
// its bound (no deadlock), no two holders of one name
// ever overlap (each hold checks its names inside its critical section),
// and a watcher of etcd never sees a set held in part.
func TestLockSet_NoDeadlockAndAlwaysWholeUnderContention(t *testing.T) {
	t.Parallel()
	a, m := holdtest.NewEngine(t)
	b := holdtest.StartEngine(t, m, lock.DefaultConfig())
	w := watchSets(t, m.Client())
	rounds := 500
	if testing.Short() {
		rounds = 100
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names := []string{"n0", "n1", "n2", "n3", "n4", "n5"}
	var (
		inside  [6]atomic.Int32
		next    atomic.Int64
		wg      sync.WaitGroup
		errs    = make(chan error, 32)
		granted atomic.Int64
	)
	enter := func(idx []int) error {
		for _, i := range idx {
			if inside[i].Add(1) != 1 {
				return fmt.Errorf("%s held twice at once", names[i])
			}
		}
		for _, i := range idx {
			inside[i].Add(-1)
		}
		return nil
	}
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := a
			if g%2 == 1 {
				e = b
			}
			rng := rand.New(rand.NewPCG(uint64(g), 21))
			for next.Load() < int64(rounds) {
				set, err := setRound(ctx, e, rng, names, owner(g), enter)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", g, err)
					cancel()
					return
				}
				if set && next.Add(1) <= int64(rounds) {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := granted.Load(); got != int64(rounds) && !t.Failed() {
		t.Fatalf("%d rounds granted, want %d", got, rounds)
	}
	w.verdict(t)
	for _, n := range names {
		if ws, err := a.Waiters(context.Background(), n); err != nil || len(ws) != 0 {
			t.Fatalf("%s has waiters %+v (%v) after every round", n, ws, err)
		}
	}
}

// setRound takes a random set of 2 to 4 of names in a random order, or one
// of them alone (every fourth round or so: set is false then), runs enter
// inside it, and releases.
func setRound(ctx context.Context, e *lock.Engine, rng *rand.Rand, names []string, owner string, enter func([]int) error) (set bool, err error) {
	idx := rng.Perm(len(names))[:2+rng.IntN(3)]
	if rng.IntN(4) == 0 {
		idx = idx[:1]
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: names[idx[0]], Owner: owner, Wait: time.Minute})
		if err != nil {
			return false, err
		}
		if err := enter(idx); err != nil {
			return false, err
		}
		return false, e.Release(ctx, l.Name, l.Token)
	}
	members := make([]string, len(idx))
	for i, j := range idx {
		members[i] = names[j]
	}
	s, _, err := e.AcquireSet(ctx, lock.LockSetRequest{Names: members, Owner: owner, Wait: time.Minute})
	if err != nil {
		return true, err
	}
	if err := enter(idx); err != nil {
		return true, err
	}
	return true, e.ReleaseSet(ctx, members, s.Token)
}

// TestLockSet_SixtyFourNames: a set of the most names waits for one held
// member, is granted all 64 at one revision when it is released, and its
// release hands each name to the single waiter queued behind it.
func TestLockSet_SixtyFourNames(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	names := make([]string, lock.MaxSetNames)
	for i := range names {
		names[i] = fmt.Sprintf("big-%02d", i)
	}
	w := watchSets(t, m.Client())
	blocker := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: names[40], Owner: "blocker"})
	set := setAsync(ctx, e, lock.LockSetRequest{Names: names, Owner: "big", Wait: 30 * time.Second})
	for _, n := range names {
		queued(t, e, n, 1)
	}
	singles := make([]<-chan acquired, 0, len(names))
	for _, n := range names[:8] {
		singles = append(singles, acquireAsync(ctx, e, lock.AcquireRequest{Name: n, Owner: "single-" + n, Wait: 30 * time.Second}))
		queued(t, e, n, 2)
	}
	if err := e.Release(ctx, names[40], blocker.Token); err != nil {
		t.Fatal(err)
	}
	got := <-set
	if got.err != nil {
		t.Fatalf("set: %v", got.err)
	}
	for _, l := range got.s.Locks {
		if l.Token != got.s.Token {
			t.Fatalf("member %s token %d, set %d", l.Name, l.Token, got.s.Token)
		}
	}
	if err := e.ReleaseSet(ctx, names, got.s.Token); err != nil {
		t.Fatalf("release the set: %v", err)
	}
	for _, ch := range singles {
		r := <-ch
		if r.err != nil || r.l.Token <= got.s.Token {
			t.Fatalf("single after the set: %+v, %v", r.l, r.err)
		}
		if err := e.Release(ctx, r.l.Name, r.l.Token); err != nil {
			t.Fatal(err)
		}
	}
	w.verdict(t)
	evs := holdtest.History(t, e, "")
	acquiredAt := map[int64]int{}
	for _, ev := range holdtest.EventsOf(evs, lock.EventAcquired) {
		if slices.Equal(ev.Set, names) {
			acquiredAt[ev.Revision]++
		}
	}
	if len(acquiredAt) != 1 || acquiredAt[got.s.Token] != 64 {
		t.Fatalf("the set's acquired events by revision: %v", acquiredAt)
	}
}
