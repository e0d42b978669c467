package lock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// These benchmarks measure a full acquire+release cycle through the
// engine against the floor: the same two etcd txns (create-if-absent,
// delete-if-ModRevision-matches) sent directly through the same
// in-process client. Run with:
//
//	go test -run '^$' -bench . -benchtime 2000x ./lock/

func benchEngine(b *testing.B) (*lock.Engine, *clientv3.Client) {
	m := testetcd.Start(b)
	e, err := lock.New(context.Background(), m.Client(), lock.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e, m.Client()
}

func BenchmarkFloor_TxnCycle(b *testing.B) {
	_, cli := benchEngine(b)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(32)
	defer reportRaftEntries(b)()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("/floor/%d", n.Add(1))
			r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, "x")).Commit()
			if err != nil || !r.Succeeded {
				b.Fatal(err)
			}
			if _, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", r.Header.Revision)).Then(clientv3.OpDelete(key)).Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportRaftEntries reports the raft entries committed per op, from etcd's
// own counter, between its call and the call of what it returns. Each
// test binary has one registry, so benchmarks must not run in parallel.
func reportRaftEntries(b *testing.B) func() {
	before := proposalsCommitted(b)
	return func() {
		b.ReportMetric(float64(proposalsCommitted(b)-before)/float64(b.N), "raft/op")
	}
}

func proposalsCommitted(b *testing.B) float64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "etcd_server_proposals_committed_total" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	b.Fatal("etcd_server_proposals_committed_total not registered")
	return 0
}

func benchCycle(b *testing.B, session bool) {
	e, _ := benchEngine(b)
	ctx := context.Background()
	var sid string
	if session {
		s, err := e.CreateSession(ctx, "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		sid = s.ID
	}
	var n atomic.Int64
	b.SetParallelism(32)
	defer reportRaftEntries(b)()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprintf("bench-%d", n.Add(1))
			l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: "bench", Session: sid})
			if err != nil {
				b.Fatal(err)
			}
			if err := e.Release(ctx, name, l.Token); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEngine_CycleOwnLease(b *testing.B) { benchCycle(b, false) }
func BenchmarkEngine_CycleSession(b *testing.B)  { benchCycle(b, true) }

// The serial pair shows one client's cycle without HTTP: the engine's
// against the floor's, each cycle waiting for the one before.
func BenchmarkFloor_TxnCycleSerial(b *testing.B) {
	_, cli := benchEngine(b)
	ctx := context.Background()
	defer reportRaftEntries(b)()
	b.ResetTimer()
	for i := range b.N {
		key := fmt.Sprintf("/floor/serial-%d", i)
		r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, "x")).Commit()
		if err != nil || !r.Succeeded {
			b.Fatal(err)
		}
		if _, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", r.Header.Revision)).Then(clientv3.OpDelete(key)).Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEngine_CycleSessionSerial(b *testing.B) {
	e, _ := benchEngine(b)
	ctx := context.Background()
	s, err := e.CreateSession(ctx, "bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer reportRaftEntries(b)()
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("serial-%d", i)
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: "bench", Session: s.ID})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Release(ctx, name, l.Token); err != nil {
			b.Fatal(err)
		}
	}
}
