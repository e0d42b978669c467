package lock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// BenchmarkCreateSession_AtSessions measures CreateSession, one at a
// time, in a cluster that holds 1,000 or 50,000 sessions already (under
// the default cap of 100,000), to show that a create costs the same
// whatever the number of sessions. Run with:
//
//	go test -run '^$' -bench CreateSession_AtSessions -benchtime 500x ./lock/
//
// The sessions are session keys under one lease, written directly: a
// create's cost depends on the keys under the prefix, not their leases.
func BenchmarkCreateSession_AtSessions(b *testing.B) {
	for _, n := range []int{1000, 50000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchCreateSessionAt(b, n) })
	}
}

func benchCreateSessionAt(b *testing.B, sessions int) {
	m := testetcd.Start(b)
	cli := m.Client()
	ctx := context.Background()
	lease, err := cli.Grant(ctx, 600)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < sessions; {
		var ops []clientv3.Op
		for ; len(ops) < 128 && i < sessions; i++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/baton/sessions/%x", 1<<40+i), `{"owner":"bench","ttl":600}`, clientv3.WithLease(lease.ID)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
	}
	cfg := lock.DefaultConfig()
	cfg.Embedded = m
	e, err := lock.New(ctx, cli, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	// The first create may count the sessions; it is not what is measured.
	if _, err := e.CreateSession(ctx, "warm", 30*time.Second); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.CreateSession(ctx, "bench", 30*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
