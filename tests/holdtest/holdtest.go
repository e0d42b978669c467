// Package holdtest starts what the tests of the hold engine (lock) and
// of the audit trail (trail) run against: an engine over a real embedded
// etcd member, with the trail beside it as a node runs them, and the
// checks both suites make of them. Only tests import it.
package holdtest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// Prefix is DefaultConfig's key prefix; tests read etcd under it directly
// to check what the engine wrote (or did not write).
const Prefix = "/baton/"

// NewEngine starts an engine with DefaultConfig, and the trail beside
// it, on a fresh embedded etcd member.
func NewEngine(t testing.TB) (*lock.Engine, *embedetcd.Member) {
	t.Helper()
	m := testetcd.Start(t)
	return StartEngine(t, m, lock.DefaultConfig()), m
}

// NewEngineAtFormat is NewEngine over a keyspace an older baton began at
// storage format format, not raised since.
func NewEngineAtFormat(t testing.TB, format string) (*lock.Engine, *embedetcd.Member) {
	t.Helper()
	m := testetcd.Start(t)
	if _, err := m.Client().Put(Ctx(t), Prefix+"meta/format", format); err != nil {
		t.Fatal(err)
	}
	return StartEngine(t, m, lock.DefaultConfig()), m
}

// StartEngine starts an engine over m's client, with the trail beside
// it, closed when the test ends (before m, since cleanups run last-in
// first-out).
func StartEngine(t testing.TB, m *embedetcd.Member, cfg lock.Config) *lock.Engine {
	t.Helper()
	return StartEngineOn(t, m.Client(), cfg)
}

// StartEngineOn is StartEngine over cli.
func StartEngineOn(t testing.TB, cli *clientv3.Client, cfg lock.Config) *lock.Engine {
	t.Helper()
	return StartWithTrail(t, cli, cfg, trail.DefaultConfig())
}

// trails are the audit trails started beside the tests' engines:
// *lock.Engine → *trail.Trail.
var trails sync.Map

// StartWithTrail starts an engine over cli and the audit trail beside it
// with tc (its BackendQuota, if 0, the engine's), both closed when the
// test ends, the trail first. TrailOf finds the trail.
func StartWithTrail(t testing.TB, cli *clientv3.Client, cfg lock.Config, tc trail.Config) *lock.Engine {
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

// StartTrail starts the audit trail beside e, an engine started without
// one, closed when the test ends (before e, if e's cleanup was
// registered first).
func StartTrail(t testing.TB, e *lock.Engine) {
	t.Helper()
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

// TrailOf is the audit trail started beside e.
func TrailOf(e *lock.Engine) *trail.Trail {
	tr, ok := trails.Load(e)
	if !ok {
		panic("holdtest: no audit trail beside this engine: start it with StartWithTrail")
	}
	return tr.(*trail.Trail)
}

// Ctx is a context that bounds a whole test, so a hang fails instead of
// running into go test's global timeout.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// KeysUnder lists the keys etcd holds under p (relative to p).
func KeysUnder(t testing.TB, cli *clientv3.Client, p string) []string {
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

// History returns every retained event (of one lock if name is set),
// newest first, from the trail beside e.
func History(t testing.TB, e *lock.Engine, name string) []lock.Event {
	t.Helper()
	evs, next, err := TrailOf(e).History(context.Background(), trail.HistoryOptions{Lock: name, Limit: lock.MaxListLimit})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	if next != 0 {
		t.Fatalf("history of %q does not fit in one page", name)
	}
	return evs
}

// EventsOf returns the events of type typ among evs.
func EventsOf(evs []lock.Event, typ lock.EventType) []lock.Event {
	var out []lock.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// MustAcquire acquires or fails the test.
func MustAcquire(t testing.TB, e *lock.Engine, req lock.AcquireRequest) *lock.Lock {
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

// AsLimit returns err as a *LimitError of sentinel, or fails the test.
func AsLimit(t testing.TB, err, sentinel error) *lock.LimitError {
	t.Helper()
	var le *lock.LimitError
	if !errors.Is(err, sentinel) || !errors.As(err, &le) {
		t.Fatalf("got %v, want a *lock.LimitError for %v", err, sentinel)
	}
	return le
}
