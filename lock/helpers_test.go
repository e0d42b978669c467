package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/testetcd"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// prefix is DefaultConfig's key prefix; tests read etcd under it directly
// to check what the engine wrote (or did not write).
const prefix = "/baton/"

// newEngine starts an engine with DefaultConfig on a fresh embedded etcd member.
func newEngine(t *testing.T) (*lock.Engine, *embedetcd.Member) {
	t.Helper()
	m := testetcd.Start(t)
	return startEngine(t, m, lock.DefaultConfig()), m
}

// newEngineAtFormat is newEngine over a keyspace an older baton began at
// storage format format, not raised since.
func newEngineAtFormat(t *testing.T, format string) (*lock.Engine, *embedetcd.Member) {
	t.Helper()
	m := testetcd.Start(t)
	if _, err := m.Client().Put(ctxT(t), prefix+"meta/format", format); err != nil {
		t.Fatal(err)
	}
	return startEngine(t, m, lock.DefaultConfig()), m
}

// startEngine starts an engine over m's client, closed when the test ends
// (before m, since cleanups run last-in first-out).
func startEngine(t *testing.T, m *embedetcd.Member, cfg lock.Config) *lock.Engine {
	t.Helper()
	return startEngineOn(t, m.Client(), cfg)
}

func startEngineOn(t *testing.T, cli *clientv3.Client, cfg lock.Config) *lock.Engine {
	t.Helper()
	return startWithTrail(t, cli, cfg, trail.DefaultConfig())
}

// trails are the audit trails started beside the tests' engines
// (startWithTrail): *lock.Engine → *trail.Trail.
var trails sync.Map

// startWithTrail starts an engine over cli and the audit trail beside it
// with tc (its BackendQuota, if 0, the engine's), both closed when the
// test ends, the trail first. trailOf finds the trail.
func startWithTrail(t *testing.T, cli *clientv3.Client, cfg lock.Config, tc trail.Config) *lock.Engine {
	t.Helper()
	e, err := lock.New(context.Background(), cli, cfg)
	if err != nil {
		t.Fatalf("new engine: %v", err)
	}
	if tc.BackendQuota == 0 {
		tc.BackendQuota = cfg.BackendQuota
	}
	tr, err := trail.New(context.Background(), e, tc)
	if err != nil {
		e.Close()
		t.Fatalf("new trail: %v", err)
	}
	trails.Store(e, tr)
	t.Cleanup(func() {
		tr.Close()
		e.Close()
		trails.Delete(e)
	})
	return e
}

// trailOf is the audit trail started beside e.
func trailOf(e *lock.Engine) *trail.Trail {
	tr, ok := trails.Load(e)
	if !ok {
		panic("no audit trail beside this engine: start it with startWithTrail")
	}
	return tr.(*trail.Trail)
}

// The internal tests of package lock read the history through this: they
// cannot import trail, which imports lock.
func init() {
	lock.StartTrail = func(t testing.TB, e *lock.Engine) {
		tr, err := trail.New(context.Background(), e, trail.DefaultConfig())
		if err != nil {
			t.Fatalf("new trail: %v", err)
		}
		trails.Store(e, tr)
		t.Cleanup(func() {
			tr.Close()
			trails.Delete(e)
		})
	}
	lock.HistoryOf = func(ctx context.Context, e *lock.Engine, name string) ([]lock.Event, error) {
		evs, _, err := trailOf(e).History(ctx, trail.HistoryOptions{Lock: name})
		return evs, err
	}
}

// ctxT is a context that bounds a whole test, so a hang fails instead of
// running into go test's global timeout.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// keysUnder lists the keys etcd holds under p (relative to p).
func keysUnder(t *testing.T, cli *clientv3.Client, p string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("get %s: %v", p, err)
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys = append(keys, strings.TrimPrefix(string(kv.Key), p))
	}
	return keys
}

// leaseCount is the number of leases etcd holds.
func leaseCount(t *testing.T, cli *clientv3.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Leases(ctx)
	if err != nil {
		t.Fatalf("list leases: %v", err)
	}
	return len(resp.Leases)
}

// keylessLeases counts leases with no key attached but their marker
// (a lease that held a lock keeps it): the idle own leases the engine
// keeps for reuse.
func keylessLeases(t *testing.T, cli *clientv3.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Leases(ctx)
	if err != nil {
		t.Fatalf("list leases: %v", err)
	}
	n := 0
	for _, l := range resp.Leases {
		ttl, err := cli.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())
		if err != nil {
			t.Fatalf("time to live of lease %x: %v", int64(l.ID), err)
		}
		if ttl.TTL > 0 && !slices.ContainsFunc(ttl.Keys, func(k []byte) bool { return !strings.HasPrefix(string(k), prefix+"leases/") }) {
			n++
		}
	}
	return n
}

// lockLease returns the lease the lock key of name is attached to.
func lockLease(t *testing.T, cli *clientv3.Client, name string) clientv3.LeaseID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix+"locks/"+name)
	if err != nil {
		t.Fatalf("get lock key: %v", err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("lock key of %q absent", name)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// remainingTTL is etcd's view of a lease's remaining TTL in seconds
// (rounded down), -1 when the lease is gone.
func remainingTTL(t *testing.T, cli *clientv3.Client, id clientv3.LeaseID) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.TimeToLive(ctx, id)
	if err != nil {
		t.Fatalf("time to live of lease %x: %v", int64(id), err)
	}
	return resp.TTL
}

// history returns every retained event (of one lock if name is set),
// newest first.
func history(t *testing.T, e *lock.Engine, name string) []lock.Event {
	t.Helper()
	evs, next, err := trailOf(e).History(context.Background(), trail.HistoryOptions{Lock: name, Limit: lock.MaxListLimit})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	if next != 0 {
		t.Fatalf("history of %q does not fit in one page", name)
	}
	return evs
}

// eventsOf returns the events of type typ among evs.
func eventsOf(evs []lock.Event, typ lock.EventType) []lock.Event {
	var out []lock.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// isNotHeld reports whether name is free, failing on any other error.
func isNotHeld(t *testing.T, e *lock.Engine, name string) bool {
	t.Helper()
	_, err := e.Get(context.Background(), name)
	if err == nil {
		return false
	}
	if !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("get %q: %v", name, err)
	}
	return true
}

// mustAcquire acquires or fails the test.
func mustAcquire(t *testing.T, e *lock.Engine, req lock.AcquireRequest) *lock.Lock {
	t.Helper()
	l, fresh, err := e.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("acquire %q as %q: %v", req.Name, req.Owner, err)
	}
	if !fresh {
		t.Fatalf("acquire %q as %q: fresh = false, want a new hold", req.Name, req.Owner)
	}
	if l.Token <= 0 {
		t.Fatalf("acquire %q: token %d", req.Name, l.Token)
	}
	return l
}

// asHeld returns err as a *HeldError or fails the test.
func asHeld(t *testing.T, err error) *lock.HeldError {
	t.Helper()
	var he *lock.HeldError
	if !errors.Is(err, lock.ErrHeld) || !errors.As(err, &he) {
		t.Fatalf("got %v, want a *lock.HeldError", err)
	}
	return he
}

func owner(i int) string { return fmt.Sprintf("w%02d", i) }
