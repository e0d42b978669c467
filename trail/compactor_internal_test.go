package trail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// logs is a slog destination that tests read while the engine writes.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// index is where msg first appears, or -1.
func (l *logs) index(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Index(l.buf.String(), msg)
}

// compactingEngine starts an engine that compacts its member every 50 ms
// to what is older than 500 ms and the trail has read; the member never
// compacts by itself. tune adjusts the engine's Config.
func compactingEngine(t *testing.T, quota int64, tune func(*Config)) (*engine, *embedetcd.Member, *logs) {
	t.Helper()
	mc := testetcd.Config(t)
	mc.CompactionRetention, mc.QuotaBackendBytes = 0, quota
	m := testetcd.StartConfig(t, mc)
	l := new(logs)
	cfg := lock.DefaultConfig()
	cfg.Embedded, cfg.BackendQuota = m, quota
	cfg.Logger = slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tc := DefaultConfig()
	tc.CompactionRetention = 500 * time.Millisecond
	if tune != nil {
		tune(&tc)
	}
	return startBeside(t, m.Client(), cfg, tc), m, l
}

// haltIndex stops the trail writer on e's node, and waits until it has.
func haltIndex(t *testing.T, e *engine) {
	t.Helper()
	e.trail.hist.halted.Store(true)
	poll.Until(t, 10*time.Second, "the history index stops", func() bool { return !e.trail.hist.serving.Load() })
}

// compactedPast says whether etcd compacted rev away.
func compactedPast(t *testing.T, cli *clientv3.Client, rev int64) bool {
	t.Helper()
	_, err := cli.Get(context.Background(), "x", clientv3.WithRev(rev))
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatal(err)
	}
	return err != nil
}

// holdCycles acquires and releases a lock of each of workers names, over
// and over, for d, and returns each acknowledged cycle's token by name.
func holdCycles(t *testing.T, e *engine, workers int, d time.Duration) map[string][]int64 {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	tokens := make(map[string][]int64)
	end := time.Now().Add(d)
	for w := range workers {
		name := fmt.Sprintf("cycle-%d", w)
		wg.Go(func() {
			for time.Now().Before(end) {
				l, _, err := e.Acquire(context.Background(), lock.AcquireRequest{Name: name, Owner: name, TTL: 10 * time.Second})
				if err == nil {
					err = e.Release(context.Background(), name, l.Token)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				tokens[name] = append(tokens[name], l.Token)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return tokens
}

// A trail writer stopped for three times the compaction retention, under
// load, holds compaction back: once it resumes, every acquire and release
// is in the history exactly once, with no gap, and compaction goes on.
func TestCompactor_WaitsForAStoppedTrailAndNothingIsLost(t *testing.T) {
	e, m, l := compactingEngine(t, 0, nil)
	cli := m.Client()
	before := holdCycles(t, e, 2, 200*time.Millisecond)
	haltIndex(t, e)
	during := holdCycles(t, e, 4, 3*e.trail.cfg.CompactionRetention)
	// The compactor has had about 30 ticks. The trail will resume after
	// its cursor, reading the previous values of the changes after it
	// there: etcd keeps the cursor's revision, and compacts up to it.
	cursor := func() int64 {
		e.trail.hist.mu.Lock()
		defer e.trail.hist.mu.Unlock()
		return e.trail.hist.meta.Indexed
	}
	poll.Until(t, 10*time.Second, "compaction up to the trail's cursor", func() bool { return compactedPast(t, cli, cursor()-1) })
	if compactedPast(t, cli, cursor()) {
		t.Fatalf("revision %d, the trail's cursor, was compacted", cursor())
	}
	e.trail.hist.halted.Store(false)
	evs := allHistory(t, e)
	want := make(map[string]int)
	for _, tokens := range []map[string][]int64{before, during} {
		for name, ts := range tokens {
			for _, tok := range ts {
				want[fmt.Sprintf("%s/%d/acquired", name, tok)]++
				want[fmt.Sprintf("%s/%d/released", name, tok)]++
			}
		}
	}
	got := make(map[string]int)
	for _, ev := range evs {
		if ev.Type == EventGap {
			t.Fatalf("a gap in the history: %+v", ev)
		}
		got[fmt.Sprintf("%s/%d/%s", ev.Name, ev.Token, ev.Type)]++
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("event %s is in the history %d times, want %d", k, got[k], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the history holds %d events, want %d", len(got), len(want))
	}
	last := evs[len(evs)-1].Revision
	poll.Until(t, 10*time.Second, "compaction up to the last event", func() bool { return compactedPast(t, cli, last-1) })
	if i := l.index("compacting etcd's history past"); i >= 0 {
		t.Errorf("compacted past the trail, within its bounds:\n%s", l.buf.String())
	}
}

// steppedCompactor is a compactor of e whose ticks the test makes, each
// step later than the one before on a clock of its own, over a
// retention of a minute; the engine runs none.
func steppedCompactor(t *testing.T, e *engine, holdBack time.Duration, quotaShare float64) func(step time.Duration) {
	e.trail.cfg.CompactionRetention, e.trail.cfg.TrailHoldBack, e.trail.cfg.TrailHoldBackQuota = time.Minute, holdBack, quotaShare
	c := &compactor{t: e.trail}
	clock := time.Now()
	return func(step time.Duration) {
		t.Helper()
		clock = clock.Add(step)
		if err := c.tick(context.Background(), clock); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	heldBackWarning = "compaction is held back for it"
	forcedPast      = "compacting etcd's history past"
)

// A trail writer stopped while etcd's backend fills holds compaction back
// only up to the bound: past --trail-hold-back-quota of the quota, after
// a warning at half of it, baton compacts anyway and keeps the locks up.
// The trail, once resumed, records what it lost as one gap, with the
// reason, and counts it.
func TestCompactor_CompactsPastAStalledTrailAtTheQuotaBoundAndTheTrailRecordsTheGap(t *testing.T) {
	const quota = 16 << 20
	e, m, l := compactingEngine(t, quota, func(c *Config) { c.CompactionRetention = 0 })
	tick := steppedCompactor(t, e, time.Hour, 0.25)
	cli := m.Client()
	haltIndex(t, e)
	lost := holdCycles(t, e, 2, 100*time.Millisecond)
	mark, err := cli.Put(context.Background(), "mark", "")
	if err != nil {
		t.Fatal(err)
	}
	for range 7 { // the retention point passes mark
		tick(10 * time.Second)
	}
	if compactedPast(t, cli, mark.Header.Revision) {
		t.Fatal("compacted past the stopped trail's cursor, below the bound")
	}
	// Old revisions of one key fill the backend, 256 KiB at a time: a
	// 64th of the bound each.
	// etcd's Status tells the bytes in use as of its backend's last
	// commit, every 100 ms: each put is committed before the next tick.
	value := strings.Repeat("v", 256<<10)
	for l.index(forcedPast) < 0 {
		if _, err := cli.Put(context.Background(), "filler", value); err != nil {
			t.Fatal(err)
		}
		m.Etcd().Server.Backend().ForceCommit()
		tick(time.Second)
		if e.NoSpace() {
			t.Fatal("the NOSPACE alarm is raised")
		}
	}
	if w := l.index(heldBackWarning); w < 0 || w > l.index(forcedPast) {
		t.Errorf("no warning before the forced compaction:\n%s", l.buf.String())
	}
	if !compactedPast(t, cli, mark.Header.Revision-1) {
		t.Fatal("the forced compaction did not reach the retention point")
	}
	resumeAfterAGap(t, e, lost, mark.Header.Revision, "--trail-hold-back-quota")
	if n := valueOf(e.trail.metrics.trailGaps); n != 1 {
		t.Errorf("baton_trail_gaps_total %v, want 1", n)
	}
}

// valueOf is a counter's or a gauge's value.
func valueOf(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// resumeAfterAGap starts e's stopped trail writer again, takes a lock,
// and checks the history: one gap, recorded at its end, from at most the
// first of the lost holds' tokens to at least through, whose reason
// says why; then the acquire after it. It returns the history.
func resumeAfterAGap(t *testing.T, e *engine, lost map[string][]int64, through int64, why string) []Event {
	t.Helper()
	e.trail.hist.halted.Store(false)
	after, _, err := e.Acquire(context.Background(), lock.AcquireRequest{Name: "after", Owner: "o", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	evs := allHistory(t, e)
	g := theGap(t, evs)
	firstLost := int64(math.MaxInt64)
	for _, ts := range lost {
		firstLost = min(firstLost, ts[0])
	}
	if g.FromRevision > firstLost || g.ToRevision < through || g.Revision != g.ToRevision || !strings.Contains(g.Reason, why) {
		t.Errorf("gap %+v; want one from at most revision %d to at least %d, recorded at its end, saying %q", g, firstLost, through, why)
	}
	if newest := evs[len(evs)-1]; newest.Token != after.Token || newest.Type != EventAcquired {
		t.Errorf("the newest event is %+v, want the acquire after the gap (token %d)", newest, after.Token)
	}
	return evs
}

// theGap is the one gap of evs.
func theGap(t *testing.T, evs []Event) Event {
	t.Helper()
	var gaps []Event
	for _, ev := range evs {
		if ev.Type == EventGap {
			gaps = append(gaps, ev)
		}
	}
	if len(gaps) != 1 {
		t.Fatalf("gaps %+v, want one", gaps)
	}
	return gaps[0]
}

// Held back for --trail-hold-back, compaction goes past the stopped
// trail, after a warning at half that time, and the baton_trail_hold_back_ratio gauge climbs
// on the way.
func TestCompactor_CompactsPastAStalledTrailAfterTheHoldBackTime(t *testing.T) {
	e, m, l := compactingEngine(t, 0, func(c *Config) { c.CompactionRetention = 0 })
	tick := steppedCompactor(t, e, 2*time.Minute, 1)
	haltIndex(t, e)
	holdCycles(t, e, 1, 50*time.Millisecond)
	mark, err := m.Client().Put(context.Background(), "mark", "")
	if err != nil {
		t.Fatal(err)
	}
	tick(10 * time.Second)
	tick(time.Minute) // the retention point: mark; held back from here
	for i := 1; l.index(forcedPast) < 0; i++ {
		ratio := valueOf(e.trail.metrics.trailHoldBack)
		if want := float64(i-1) / 12; math.Abs(ratio-want) > 0.01 {
			t.Fatalf("after %d ticks held back the ratio is %v, want %v\n%s", i-1, ratio, want, l.buf.String())
		}
		if (l.index(heldBackWarning) >= 0) != (ratio >= 0.5) {
			t.Fatalf("at a ratio of %v the warning is logged: %v", ratio, l.index(heldBackWarning) >= 0)
		}
		if i > 12 {
			t.Fatal("not compacted after 2 minutes held back")
		}
		tick(10 * time.Second)
	}
	e.trail.hist.halted.Store(false)
	if g := theGap(t, allHistory(t, e)); g.ToRevision < mark.Header.Revision || !strings.Contains(g.Reason, "--trail-hold-back)") {
		t.Errorf("gap %+v; want one through revision %d, naming the time bound", g, mark.Header.Revision)
	}
	if r := valueOf(e.trail.metrics.trailHoldBack); r != 0 {
		t.Errorf("ratio %v once compacted, want 0", r)
	}
}
