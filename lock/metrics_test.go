package lock_test

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// metric reads one series of e's Collector, as a scrape would: name and
// its labels as "k=v" pairs. A series that does not exist fails the test,
// so a renamed label cannot pass as a zero.
func metric(t *testing.T, e *lock.Engine, name string, labels ...string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.Collector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	sort.Strings(labels)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var got []string
			for _, lp := range m.GetLabel() {
				got = append(got, lp.GetName()+"="+lp.GetValue())
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(labels, ",") {
				continue
			}
			return value(m)
		}
	}
	t.Fatalf("no series %s{%s}", name, strings.Join(labels, ","))
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return m.GetUntyped().GetValue()
}

func TestMetrics_EverySeriesExistsAtZeroBeforeAnyEvent(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	for _, typ := range []string{"acquired", "released", "revoked", "expired", "session_expired"} {
		if v := metric(t, e, "baton_lock_events_total", "type="+typ); v != 0 {
			t.Errorf("baton_lock_events_total{type=%q} = %v on a fresh engine, want 0", typ, v)
		}
	}
	for _, s := range [][]string{
		{"kind=lock", "reason=not_held"}, {"kind=lock", "reason=token_mismatch"}, {"kind=lock", "reason=unavailable"},
		{"kind=session", "reason=session_not_found"}, {"kind=session", "reason=unavailable"},
	} {
		if v := metric(t, e, "baton_renew_failures_total", s...); v != 0 {
			t.Errorf("baton_renew_failures_total%v = %v on a fresh engine, want 0", s, v)
		}
	}
	if v := metric(t, e, "baton_etcd_leader_changes_total"); v != 0 {
		t.Errorf("leader changes %v on a fresh engine, want 0", v)
	}
	if v := metric(t, e, "baton_acquires_waiting"); v != 0 {
		t.Errorf("acquires waiting %v on a fresh engine, want 0", v)
	}
}

func TestMetrics_RenewFailuresAreCountedByReason(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "r", Owner: "w1"})
	if _, err := e.Renew(ctx, "r", l.Token+1); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("renew with another token: %v, want ErrTokenMismatch", err)
	}
	if _, err := e.Renew(ctx, "r", l.Token); err != nil {
		t.Fatalf("renew with the token: %v", err)
	}
	if err := e.Release(ctx, "r", l.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	for range 2 {
		if _, err := e.Renew(ctx, "r", l.Token); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("renew after release: %v, want ErrNotHeld", err)
		}
	}
	if _, err := e.RenewSession(ctx, "7fffffff"); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("renew of an unknown session: %v, want ErrSessionNotFound", err)
	}
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"kind=lock", "reason=token_mismatch"}, 1},
		{[]string{"kind=lock", "reason=not_held"}, 2},
		{[]string{"kind=lock", "reason=unavailable"}, 0}, // the good renew counts nowhere
		{[]string{"kind=session", "reason=session_not_found"}, 1},
	} {
		if got := metric(t, e, "baton_renew_failures_total", c.labels...); got != c.want {
			t.Errorf("baton_renew_failures_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
}

func TestMetrics_AuditEventsAreCountedByTheNodeThatWroteThem(t *testing.T) {
	t.Parallel()
	m := testetcd.Start(t)
	e1 := holdtest.StartEngine(t, m, lock.DefaultConfig())
	e2 := holdtest.StartEngine(t, m, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	a := holdtest.MustAcquire(t, e1, lock.AcquireRequest{Name: "a", Owner: "w1"})
	if err := e2.Release(ctx, "a", a.Token); err != nil {
		t.Fatalf("release on the other node: %v", err)
	}
	holdtest.MustAcquire(t, e1, lock.AcquireRequest{Name: "b", Owner: "w1"})
	if _, err := e1.Revoke(ctx, "b", "test"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	s, err := e2.CreateSession(ctx, "w2", 0)
	if err != nil {
		t.Fatal(err)
	}
	holdtest.MustAcquire(t, e2, lock.AcquireRequest{Name: "c", Owner: "w2", Session: s.ID})
	holdtest.MustAcquire(t, e2, lock.AcquireRequest{Name: "d", Owner: "w2", Session: s.ID})
	if err := e2.DeleteSession(ctx, s.ID); err != nil {
		t.Fatalf("delete session: %v", err)
	}
	for _, c := range []struct {
		e    *lock.Engine
		typ  string
		want float64
	}{
		{e1, "acquired", 2}, {e2, "acquired", 2},
		{e1, "released", 0}, {e2, "released", 3}, // a, and c and d with their session
		{e1, "revoked", 1}, {e2, "revoked", 0},
	} {
		if got := metric(t, c.e, "baton_lock_events_total", "type="+c.typ); got != c.want {
			who := "e1"
			if c.e == e2 {
				who = "e2"
			}
			t.Errorf("%s: baton_lock_events_total{type=%q} = %v, want %v", who, c.typ, got, c.want)
		}
	}
}

func TestMetrics_AnExpiryIsCountedOnceAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	m := testetcd.Start(t)
	engines := []*lock.Engine{holdtest.StartEngine(t, m, lock.DefaultConfig()), holdtest.StartEngine(t, m, lock.DefaultConfig())}
	ctx := holdtest.Ctx(t)
	holdtest.MustAcquire(t, engines[0], lock.AcquireRequest{Name: "exp", Owner: "w1", TTL: 2 * time.Second})
	s, err := engines[1].CreateSession(ctx, "w2", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	holdtest.MustAcquire(t, engines[1], lock.AcquireRequest{Name: "sess", Owner: "w2", Session: s.ID})
	sum := func(typ string) float64 {
		return metric(t, engines[0], "baton_lock_events_total", "type="+typ) +
			metric(t, engines[1], "baton_lock_events_total", "type="+typ)
	}
	poll.Until(t, 20*time.Second, "both expiries counted", func() bool {
		return sum("expired") >= 1 && sum("session_expired") >= 1
	})
	// Both recorders saw both deletions; the one whose write lost the race
	// must not count. The audit trail is the reference.
	poll.Consistently(t, time.Second, "each expiry counted once", func() bool {
		return sum("expired") == 1 && sum("session_expired") == 1
	})
	if n := len(holdtest.EventsOf(holdtest.History(t, engines[0], "exp"), lock.EventExpired)); n != 1 {
		t.Fatalf("%d expired events in the audit trail, want 1", n)
	}
}

func TestMetrics_WaitingAcquiresAreAGauge(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "w", Owner: "w1"})
	done := make(chan error, 1)
	go func() {
		_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "w", Owner: "w2", Wait: 30 * time.Second})
		done <- err
	}()
	poll.Until(t, 10*time.Second, "the waiting acquire shows", func() bool {
		return metric(t, e, "baton_acquires_waiting") == 1
	})
	if err := e.Release(ctx, "w", l.Token); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	if v := metric(t, e, "baton_acquires_waiting"); v != 0 {
		t.Fatalf("acquires waiting %v after the wait ended, want 0", v)
	}
}

func TestMetrics_HasLeaderOverExternalEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the leader poll over external etcd: not in the fast tier")
	}
	t.Parallel()
	m := testetcd.Start(t)
	// A remote client, as with --etcd-endpoints: no HasLeader hook, so the
	// engine polls.
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{m.Etcd().Config().AdvertiseClientUrls[0].String()}, DialTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	e := holdtest.StartEngineOn(t, cli, lock.DefaultConfig())
	poll.Until(t, 10*time.Second, "baton_etcd_has_leader is 1", func() bool {
		return metric(t, e, "baton_etcd_has_leader") == 1
	})
	// Stop the member: the poll fails, and the gauge says so.
	m.Close()
	poll.Until(t, 15*time.Second, "baton_etcd_has_leader is 0 with etcd gone", func() bool {
		return metric(t, e, "baton_etcd_has_leader") == 0
	})
}

func TestMetrics_HasLeaderFollowsTheEmbeddedMember(t *testing.T) {
	t.Parallel()
	m := testetcd.Start(t)
	cfg := lock.DefaultConfig()
	cfg.Embedded = m
	e := holdtest.StartEngine(t, m, cfg)
	if v := metric(t, e, "baton_etcd_has_leader"); v != 1 {
		t.Fatalf("has_leader %v on a ready single member, want 1", v)
	}
}
