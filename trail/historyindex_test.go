package trail_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// cycles acquires and releases locks names[i%len(names)] n times, by
// owners w<i>, from workers goroutines.
func cycles(t *testing.T, e *lock.Engine, names []string, n, workers int) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				name := names[i%len(names)]
				l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: fmt.Sprintf("w%d", i), TTL: 30 * time.Second, Wait: 20 * time.Second})
				if err == nil {
					err = e.Release(ctx, name, l.Token)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// allPages reads the whole trail (or lock's) limit events at a time.
func allPages(t *testing.T, e *lock.Engine, o trail.HistoryOptions) []lock.Event {
	t.Helper()
	var all []lock.Event
	for pages := 0; ; pages++ {
		evs, next, err := holdtest.TrailOf(e).History(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
		if next == 0 {
			return all
		}
		if pages > 10000 {
			t.Fatal("paging does not end")
		}
		o.Before = next
	}
}

// checkTrail fails unless evs are newest first, each once, and hold a
// whole acquire/release pair for each of n cycles.
func checkTrail(t *testing.T, evs []lock.Event, n int) {
	t.Helper()
	seen := map[string]bool{}
	for i, ev := range evs {
		k := fmt.Sprintf("%d/%s/%s", ev.Revision, ev.Type, ev.Name)
		if seen[k] {
			t.Fatalf("event %s twice", k)
		}
		seen[k] = true
		if i > 0 && ev.Revision > evs[i-1].Revision {
			t.Fatalf("event %d (revision %d) after one of revision %d: not newest first", i, ev.Revision, evs[i-1].Revision)
		}
	}
	if a, r := len(holdtest.EventsOf(evs, lock.EventAcquired)), len(holdtest.EventsOf(evs, lock.EventReleased)); a != n || r != n {
		t.Fatalf("%d acquired and %d released events; want %d of each", a, r, n)
	}
}

func TestHistory_PagesOfTheIndexHoldEveryEventOnceAndNoPendingRecordIsLeft(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	names := []string{"p0", "p1", "p2", "p3", "p4"}
	cycles(t, e, names, 60, 6)
	checkTrail(t, allPages(t, e, trail.HistoryOptions{Limit: 7}), 60)
	per := allPages(t, e, trail.HistoryOptions{Lock: "p3", Limit: 5})
	checkTrail(t, per, 12)
	for _, ev := range per {
		if ev.Lock != "p3" {
			t.Fatalf("lock=p3 gave an event of %s", ev.Lock)
		}
	}
	poll.Until(t, 10*time.Second, "no pending audit record left", func() bool {
		return len(holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"audit/")) == 0
	})
	if _, _, got := chunksUnder(t, m.Client(), holdtest.Prefix+"trailname/"); got != 120 {
		t.Fatalf("%d indexed events; want 120", got)
	}
}

func TestHistory_AFilterReadsABudgetAndSaysWhereToGoOn(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	// More events than one call may scan, one of them matching, oldest.
	const n = trail.HistoryScanBudget/2 + 100
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "rare", Owner: "needle", TTL: 30 * time.Second})
	cycles(t, e, []string{"hay0", "hay1", "hay2", "hay3"}, n, 16)
	o := trail.HistoryOptions{Owner: "needle", Limit: 10}
	evs, next, err := holdtest.TrailOf(e).History(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 0 || next == 0 {
		t.Fatalf("first call: %d events, next %d; want none, and where to go on", len(evs), next)
	}
	calls := 1
	for next != 0 && len(evs) == 0 {
		o.Before = next
		if evs, next, err = holdtest.TrailOf(e).History(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		calls++
	}
	if len(evs) != 1 || evs[0].Owner != "needle" || evs[0].Lock != "rare" {
		t.Fatalf("after %d calls: %v; want the needle's acquire", calls, evs)
	}
	if calls > 2*n/trail.HistoryScanBudget+2 {
		t.Errorf("%d calls to scan %d events: a call reads less than its budget", calls, 2*n)
	}
}

func TestHistory_TheCountBoundDropsTheOldestEventsWhileLocksKeepBeingGranted(t *testing.T) {
	m := testetcd.Start(t)
	cfg := lock.DefaultConfig()
	tc := trail.DefaultConfig()
	tc.HistoryMaxEvents = 128
	e := holdtest.StartWithTrail(t, m.Client(), cfg, tc)
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "oldest", Owner: "first", TTL: 30 * time.Second})
	if err := e.Release(context.Background(), "oldest", first.Token); err != nil {
		t.Fatal(err)
	}
	cycles(t, e, []string{"b0", "b1", "b2"}, 300, 4)
	last := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "newest", Owner: "last", TTL: 30 * time.Second})
	var evs []lock.Event
	poll.Until(t, 10*time.Second, "a trail of at most 128 events", func() bool {
		evs = allPages(t, e, trail.HistoryOptions{Limit: 100})
		return len(evs) <= tc.HistoryMaxEvents
	})
	if len(evs) < tc.HistoryMaxEvents/2 {
		t.Errorf("%d events kept; want close to the bound of %d", len(evs), tc.HistoryMaxEvents)
	}
	if evs[0].Token != last.Token || evs[0].Type != lock.EventAcquired {
		t.Errorf("newest event %+v; want the last acquire (token %d)", evs[0], last.Token)
	}
	if got := holdtest.History(t, e, "oldest"); len(got) != 0 {
		t.Errorf("the oldest lock's events are still there: %v", got)
	}
	// The pending records of the dropped events went with their indexing.
	if n := len(holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"trailname/lock/oldest/")); n != 0 {
		t.Errorf("%d index keys of dropped events are left", n)
	}
}

func TestSubscribe_ReplayFromZeroReadsTheIndexInOrderWithoutGapOrDuplicate(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	cycles(t, e, []string{"r0", "r1", "r2"}, 1500, 8)
	ctx := holdtest.Ctx(t)
	s, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Replay: true, Since: 0, Buffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []lock.Event
	for len(got) < 3000 {
		select {
		case ev, ok := <-s.C:
			if !ok {
				t.Fatalf("stream ended after %d events: %v", len(got), s.Err())
			}
			got = append(got, ev)
		case <-ctx.Done():
			t.Fatalf("%d events replayed; want 3000", len(got))
		}
	}
	rev := make([]lock.Event, len(got))
	for i, ev := range got {
		rev[len(got)-1-i] = ev
	}
	checkTrail(t, rev, 1500)
	// And live events follow.
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "after", Owner: "live", TTL: 30 * time.Second})
	select {
	case ev := <-s.C:
		if ev.Token != l.Token || ev.Type != lock.EventAcquired {
			t.Fatalf("live event %+v; want the acquire of token %d", ev, l.Token)
		}
	case <-ctx.Done():
		t.Fatal("no live event after the replay")
	}
}

// Two engines index one trail (as nodes with an external etcd do): each
// event is indexed once whichever writes it.
func TestHistory_TwoIndexersOfOneTrailIndexEachEventOnce(t *testing.T) {
	m := testetcd.Start(t)
	a, b := holdtest.StartEngine(t, m, lock.DefaultConfig()), holdtest.StartEngine(t, m, lock.DefaultConfig())
	var wg sync.WaitGroup
	wg.Go(func() { cycles(t, a, []string{"x0", "x1"}, 100, 4) })
	wg.Go(func() { cycles(t, b, []string{"y0", "y1"}, 100, 4) })
	wg.Wait()
	checkTrail(t, allPages(t, a, trail.HistoryOptions{Limit: 50}), 200)
	if _, _, events := chunksUnder(t, m.Client(), holdtest.Prefix+"trailname/"); events != 400 {
		t.Fatalf("%d indexed events; want 400", events)
	}
}

func TestConfig_AHistoryBoundThatCouldFillHalfTheQuotaIsRefused(t *testing.T) {
	tc := trail.DefaultConfig()
	if err := tc.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tc.BackendQuota = 64 << 20
	tc.HistoryMaxEvents = 100000 // 70 MB of a 64 MiB quota
	err := tc.Validate()
	if err == nil || !strings.Contains(err.Error(), "--history-max-events") || !strings.Contains(err.Error(), "--etcd-quota-bytes") {
		t.Fatalf("Validate: %v; want a refusal naming both flags", err)
	}
	tc.HistoryMaxEvents = 40000
	if err := tc.Validate(); err != nil {
		t.Fatalf("40,000 events under a 64 MiB quota: %v", err)
	}
	// HistoryQuotaFor is the least quota a bound passes with.
	tc.HistoryMaxEvents = 1000000
	tc.BackendQuota = trail.HistoryQuotaFor(int64(tc.HistoryMaxEvents))
	if err := tc.Validate(); err != nil {
		t.Fatalf("a million events under HistoryQuotaFor's %d bytes: %v", tc.BackendQuota, err)
	}
	tc.BackendQuota -= 1 << 20
	if err := tc.Validate(); err == nil {
		t.Fatalf("a million events under a quota 1 MiB short of HistoryQuotaFor's passed")
	}
}

// A filter finds an owner whatever its characters: the scan's byte search
// must match the trail's JSON exactly as encoding/json wrote it.
func TestHistory_AnOwnerFilterFindsOwnersThatJSONEscapes(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	for _, owner := range []string{`quo"te`, `<tag>&amp`, "ünï ✓", `back\slash`} {
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "esc", Owner: owner, TTL: 30 * time.Second})
		evs, _, err := holdtest.TrailOf(e).History(context.Background(), trail.HistoryOptions{Owner: owner, Types: []lock.EventType{lock.EventAcquired}})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Owner != owner {
			t.Fatalf("owner %q: %v; want its acquire", owner, evs)
		}
		if err := e.Release(context.Background(), "esc", evs[0].Token); err != nil {
			t.Fatal(err)
		}
	}
}
