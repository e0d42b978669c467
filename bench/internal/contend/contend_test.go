package contend

import (
	"testing"
	"time"

	"github.com/baton-dev/baton/bench/internal/measure"
)

func TestJudgeFairness_CountsOvertakes(t *testing.T) {
	// Requests are sent at 1, 2, 3, …; token gives the grant order.
	sentInOrder := func(tokens ...int64) []Grant {
		gs := make([]Grant, len(tokens))
		for i, tok := range tokens {
			gs[i] = Grant{Sent: time.Duration(i + 1), Token: tok}
		}
		return gs
	}
	for _, tc := range []struct {
		name   string
		grants []Grant
		want   Fairness
	}{
		{"none", nil, Fairness{}},
		{"first come first served", sentInOrder(10, 20, 30, 40), Fairness{Judged: 4, InOrder: 1}},
		// The last sent is granted first: it overtook three, and it is
		// the only grant out of order.
		{"one jumps the queue", sentInOrder(20, 30, 40, 10), Fairness{Judged: 4, InOrder: 0.75, MaxOvertaken: 1}},
		// The first sent is granted last: three overtook it, and each of
		// them was granted while it waited.
		{"one left behind", sentInOrder(40, 10, 20, 30), Fairness{Judged: 4, InOrder: 0.25, MaxOvertaken: 3}},
		{"reversed", sentInOrder(40, 30, 20, 10), Fairness{Judged: 4, InOrder: 0.25, MaxOvertaken: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeFairness(tc.grants); got != tc.want {
				t.Errorf("judgeFairness = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestHandoffs_FromReleaseToNextGrant(t *testing.T) {
	ms := time.Millisecond
	// Listed out of order: handoffs follows the tokens.
	lat, early := handoffs([]Grant{
		{Granted: 10 * ms, Released: 11 * ms, Token: 2},
		{Granted: 0, Released: 1 * ms, Token: 1},
		{Granted: 14 * ms, Released: 16 * ms, Token: 3},
		{Granted: 15 * ms, Released: 17 * ms, Token: 4}, // answered before 3's release
	})
	// 1ms → 10ms, 11ms → 14ms and the early one as 0, within
	// HdrHistogram's 0.1%.
	sum := lat.Summary()
	near := func(us, want int64) bool { return us >= want && us <= want+want/1000 }
	if sum.Count != 3 || !near(sum.P50, 3000) || !near(sum.Max, 9000) || early != 1 {
		t.Errorf("handoffs = %+v, %d early; want 0, 3ms and 9ms, 1 early", sum, early)
	}
}

func TestAfterOpening_DropsTheOpeningBurst(t *testing.T) {
	ms := time.Millisecond
	got := afterOpening([]Grant{
		{Sent: 0, Granted: 5 * ms, Token: 2},
		{Sent: 1 * ms, Granted: 2 * ms, Token: 1}, // the first grant
		{Sent: 3 * ms, Granted: 8 * ms, Token: 3},
	})
	if len(got) != 1 || got[0].Token != 3 {
		t.Errorf("afterOpening kept %+v, want only the request sent after the first grant", got)
	}
}

// TestHoldCounter_SeesBreaches checks that the counter the semaphore and
// rwlock scenarios run with fails the report of a run that held more
// than the primitive allows, and only then.
func TestHoldCounter_SeesBreaches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int64
		holds  []HoldMode
		breach bool
	}{
		{"permits up to the limit", 2, []HoldMode{HoldPermit, HoldPermit}, false},
		{"a permit beyond the limit", 2, []HoldMode{HoldPermit, HoldPermit, HoldPermit}, true},
		{"readers share", 0, []HoldMode{HoldRead, HoldRead, HoldRead}, false},
		{"a writer alone", 0, []HoldMode{HoldWrite}, false},
		{"a writer beside a reader", 0, []HoldMode{HoldRead, HoldWrite}, true},
		{"a reader beside a writer", 0, []HoldMode{HoldWrite, HoldRead}, true},
		{"two writers", 0, []HoldMode{HoldWrite, HoldWrite}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewHoldCounter(tc.limit)
			var grants []Grant
			for i, m := range tc.holds {
				c.enter(m)
				grants = append(grants, Grant{Mode: m, Sent: time.Duration(i), Granted: time.Duration(i + 1), Token: int64(i + 1)})
			}
			for _, m := range tc.holds {
				c.leave(m)
			}
			rep, err := c.Report(time.Second, &measure.ErrorCount{}, grants)
			if (err != nil) != tc.breach {
				t.Fatalf("report: %v, want a breach: %v", err, tc.breach)
			}
			if err == nil && rep.(HoldsReport).MostHeld != int64(len(tc.holds)) {
				t.Errorf("most held %d, want %d", rep.(HoldsReport).MostHeld, len(tc.holds))
			}
			if c.shared.Load() != 0 || c.writers.Load() != 0 {
				t.Errorf("after every leave: %d shared, %d writers", c.shared.Load(), c.writers.Load())
			}
		})
	}
}

// TestRWModes_SeededShareOfWrites checks that a worker draws the same
// turns in every run, about RWWriteShare of them writes.
func TestRWModes_SeededShareOfWrites(t *testing.T) {
	const turns = 10000
	a, b := RWModes(3), RWModes(3)
	writes := 0
	for range turns {
		m := a()
		if m != b() {
			t.Fatal("two draws of worker 3 differ")
		}
		if m == HoldWrite {
			writes++
		}
	}
	if share := float64(writes) / turns; share < RWWriteShare-0.02 || share > RWWriteShare+0.02 {
		t.Errorf("%.3f of the turns are writes, want about %v", share, RWWriteShare)
	}
}
