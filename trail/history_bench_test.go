package trail_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// BenchmarkHistory reads the audit trail, holding 50,000 events over
// 100 locks: a first page, a page of one lock, and a call of an owner
// filter that matches nothing, which reads its whole budget. The first
// two should cost the same whatever the trail holds; the third grows
// with trail.HistoryScanBudget only. The bench's history scenario
// measures them at a million events (docs/PERFORMANCE.md). Run with:
//
//	go test -run '^$' -bench History -benchtime 100x ./lock/
func BenchmarkHistory(b *testing.B) {
	m := testetcd.Start(b)
	e, err := lock.New(context.Background(), m.Client(), lock.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := w; i < 25000; i += 64 {
				name := fmt.Sprintf("b-%d", i%100)
				l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: fmt.Sprintf("w%d", w), TTL: time.Minute, Wait: time.Minute})
				if err == nil {
					err = e.Release(ctx, name, l.Token)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, bc := range []struct {
		name string
		o    trail.HistoryOptions
	}{
		{"page", trail.HistoryOptions{Limit: 100}},
		{"lock", trail.HistoryOptions{Lock: "b-7", Limit: 100}},
		{"filtered", trail.HistoryOptions{Owner: "nobody", Limit: 100}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := holdtest.TrailOf(e).History(ctx, bc.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
