package load

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-dev/baton/bench/internal/measure"
)

// SessionTTL is the TTL of every session and per-lock lease the bench
// makes, its peers' included: the API's default (docs/API.md, Locks), so
// the figures are those of an ordinary client.
const SessionTTL = 30 * time.Second

// LoopResult is what a closed loop measured; a load generator sends it as
// its report.
type LoopResult struct {
	Elapsed    time.Duration   `json:"elapsed"`
	Cycles     int64           `json:"cycles"`
	Errors     int64           `json:"errors"`
	FirstError string          `json:"first_error,omitempty"`
	Latency    measure.Latency `json:"latency"`
}

// WorkerLock is the lock name worker w of a cycle scenario takes and
// gives back every cycle, prefix and all. Each worker has one of its own,
// as the zookeeper peer's recipe has a lock node per worker: a cycle
// scenario measures locks that are taken again and again, as a service's
// are, not names that are used once and left to the store to forget.
func WorkerLock(prefix string, w int) string {
	return prefix + strconv.Itoa(w)
}

// ClosedLoop runs workers goroutines that each repeat cycle back to back
// and times every cycle. New cycles start until d has passed; cycles
// already started run to the end, so every cycle counted is a whole one
// and none leaves a lock behind. Elapsed runs until the last one ends.
func ClosedLoop(ctx context.Context, workers int, d time.Duration, cycle func(ctx context.Context, worker, seq int) error) LoopResult {
	lat := measure.NewLatencies()
	var errs measure.ErrorCount
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil && time.Now().Before(deadline); seq++ {
				t0 := time.Now()
				if err := cycle(ctx, w, seq); err != nil {
					errs.Add(err)
					continue
				}
				lat.Record(time.Since(t0))
			}
		})
	}
	wg.Wait()
	sum := lat.Summary()
	// Read errs.First only after Wait: the workers that set it are done.
	return LoopResult{Elapsed: time.Since(start), Cycles: sum.Count, Errors: errs.Count(), FirstError: errs.First(), Latency: sum}
}

// Pace calls f(k, due) in a goroutine of its own at due = start + k×step,
// k = 0, 1, …, until ctx ends, then waits for the calls still running.
// Callers time from due, not from when f ran, so a schedule that fell
// behind (a starved scheduler) shows in the latencies instead of hiding.
func Pace(ctx context.Context, step time.Duration, f func(k int, due time.Time)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for k := 0; ; k++ {
		due := start.Add(time.Duration(k) * step)
		t.Reset(time.Until(due))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wg.Go(func() { f(k, due) })
	}
}

// Parallel runs f(ctx, i) for i in [0, n) on workers goroutines and returns
// the first error, after which no new i starts.
func Parallel(ctx context.Context, workers, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}
