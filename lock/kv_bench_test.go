package lock_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkKV_ListPage lists a page of 100 keys under a prefix, at the
// start of the prefix and past its middle, with 1,000, 100,000 and
// 1,000,000 keys under it. A page should cost the page, not the keys
// stored (docs/PERFORMANCE.md, "Keys"). Beside it, etcd-range is the
// same page read with etcd's Range, which counts the keys to the end of
// the prefix. The keys are written straight into etcd, in txns of 1,000,
// as puts through the engine would leave them. Run with:
//
//	go test -run '^$' -bench KV_ListPage -benchtime 100x ./lock/
func BenchmarkKV_ListPage(b *testing.B) {
	m := testetcd.Start(b)
	cfg := lock.DefaultConfig()
	cfg.MaxKeys = 0
	cfg.Embedded = m // as a node runs it: pages come from the member's own store
	e := holdtest.StartEngine(b, m, cfg)
	ctx := context.Background()
	value := `{"v":{"addr":"10.0.0.1:8080"},"t":"2026-12-06T00:00:00Z"}`
	have := 0
	for _, n := range []int{1000, 100000, 1000000} {
		for have < n {
			ops := make([]clientv3.Op, 0, 1000)
			for ; have < n && len(ops) < cap(ops); have++ {
				ops = append(ops, clientv3.OpPut(fmt.Sprintf("%skv/members/m%07d", holdtest.Prefix, have), value))
			}
			if _, err := m.Client().Txn(ctx).Then(ops...).Commit(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("keys=%d/etcd-range", n), func(b *testing.B) {
			start := holdtest.Prefix + "kv/members/"
			for b.Loop() {
				resp, err := m.Client().Get(ctx, start, clientv3.WithRange(clientv3.GetPrefixRangeEnd(start)), clientv3.WithLimit(101))
				if err != nil || len(resp.Kvs) != 101 {
					b.Fatalf("read %d keys, err %v; want 101", len(resp.Kvs), err)
				}
			}
		})
		for _, at := range []struct {
			name, after string
		}{{"first", ""}, {"middle", fmt.Sprintf("members/m%07d", n/2)}} {
			b.Run(fmt.Sprintf("keys=%d/%s", n, at.name), func(b *testing.B) {
				for b.Loop() {
					p, err := e.KV().List(ctx, lock.KeyListOptions{Prefix: "members/", Limit: 100, After: at.after})
					if err != nil || len(p.Keys) != 100 {
						b.Fatalf("listed %d keys, err %v; want 100", len(p.Keys), err)
					}
				}
			})
		}
	}
}
