package lock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// BenchmarkListSessions lists the 10 sessions of one owner prefix, and a
// first page of 100 sessions of any owner, with 100 and then 50,000
// sessions of other owners in the cluster. The first should not grow with
// the other owners' sessions: they are outside its range of the owner
// index. The second does, though it reads 101 values either way: etcd
// walks its key index over the whole rest of the range to count it (see
// sessionOwnersPrefix in sessionlist.go).
// Run with:
//
//	go test -run '^$' -bench ListSessions -benchtime 200x ./lock/
func BenchmarkListSessions(b *testing.B) {
	m := testetcd.Start(b)
	cfg := lock.DefaultConfig()
	cfg.MaxSessions = 0 // the cap's counts would dominate the setup, not the listing
	e, err := lock.New(context.Background(), m.Client(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	ctx := context.Background()
	create := func(owner func(i int) string, from, to int) {
		var wg sync.WaitGroup
		work := make(chan int)
		for range 32 {
			wg.Go(func() {
				for i := range work {
					if _, err := e.CreateSession(ctx, owner(i), 4*time.Minute); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for i := from; i < to; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	create(func(i int) string { return fmt.Sprintf("target-%d", i) }, 0, 10)
	// Other owners sort on both sides of the target prefix.
	other := func(i int) string { return fmt.Sprintf("%c-worker-%06d", "az"[i%2], i) }
	others := 0
	for _, n := range []int{100, 50000} {
		create(other, others, n)
		others = n
		b.Run(fmt.Sprintf("others=%d/owner-prefix", n), func(b *testing.B) {
			for b.Loop() {
				page, _, err := e.ListSessions(ctx, lock.SessionListOptions{Prefix: "target-", Limit: 100})
				if err != nil || len(page) != 10 {
					b.Fatalf("listed %d sessions, err %v; want 10", len(page), err)
				}
			}
		})
		b.Run(fmt.Sprintf("others=%d/page-of-100", n), func(b *testing.B) {
			for b.Loop() {
				page, _, err := e.ListSessions(ctx, lock.SessionListOptions{Limit: 100})
				if err != nil || len(page) != 100 {
					b.Fatalf("listed %d sessions, err %v; want 100", len(page), err)
				}
			}
		})
	}
}
