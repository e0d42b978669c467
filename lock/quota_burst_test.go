package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
)

// TestQuota_ABurstPastTheQuotaCountsWhatItGot: many acquires at once
// against a quota grant at most the quota, and the count then is what
// they were granted, neither more nor less.
func TestQuota_ABurstPastTheQuotaCountsWhatItGot(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	q := lock.CallerQuotas{Holds: 50}
	c := quotaed(ctx, "runaway", q)
	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 20 {
				_, _, err := e.Acquire(c, lock.AcquireRequest{Name: fmt.Sprintf("r.%d-%d", g, i), Owner: "w", TTL: time.Minute})
				switch {
				case err == nil:
					granted.Add(1)
				case errors.Is(err, lock.ErrQuotaExceeded):
					refused.Add(1)
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if granted.Load() > 50 || refused.Load() == 0 {
		t.Fatalf("%d granted, %d refused; want at most 50 granted", granted.Load(), refused.Load())
	}
	poll.Until(t, 10*time.Second, "the count to be what was granted", func() bool {
		u, err := e.QuotaUsage(ctx, "runaway", q)
		return err == nil && int64(u.Holds) == granted.Load()
	})
}

// TestQuota_ACountEtcdCannotGiveIsUnavailable: the first count of a holds
// quota reads every hold; with etcd gone it answers ErrUnavailable (503
// with Retry-After) within the engine's OpTimeout rather than hold the
// request until its client gives up.
func TestQuota_ACountEtcdCannotGiveIsUnavailable(t *testing.T) {
	m := testetcd.Start(t)
	cfg := lock.DefaultConfig()
	cfg.OpTimeout = time.Second
	e := holdtest.StartEngine(t, m, cfg)
	m.Close()
	ctx, cancel := context.WithTimeout(holdtest.Ctx(t), 5*time.Second)
	defer cancel()
	_, err := e.QuotaUsage(ctx, "team-a", lock.CallerQuotas{Holds: 5})
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("the holds a quota counts, with etcd gone: %v, want ErrUnavailable", err)
	}
}
