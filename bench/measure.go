package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
)

// maxLatency is the largest latency a histogram tells apart; anything
// slower is recorded as maxLatency (and shows as the max).
const maxLatency = 5 * time.Minute

// latencies is a histogram of durations that many goroutines record into:
// HdrHistogram with three significant digits, in microseconds.
type latencies struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newLatencies() *latencies {
	return &latencies{h: hdrhistogram.New(1, maxLatency.Microseconds(), 3)}
}

func (l *latencies) record(d time.Duration) {
	us := min(max(d.Microseconds(), 0), maxLatency.Microseconds())
	l.mu.Lock()
	defer l.mu.Unlock()
	// Cannot fail: us is within the histogram's range.
	_ = l.h.RecordValue(us)
}

// Latency summarises a histogram. Values are in microseconds, each the
// upper end of its HdrHistogram bucket (within 0.1%).
type Latency struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50_us"`
	P99   int64 `json:"p99_us"`
	Max   int64 `json:"max_us"`
}

func (l *latencies) summary() Latency {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Latency{
		Count: l.h.TotalCount(),
		P50:   l.h.ValueAtQuantile(50),
		P99:   l.h.ValueAtQuantile(99),
		Max:   l.h.Max(),
	}
}

// errorCount counts failures and keeps the first one's text for the report.
type errorCount struct {
	n     atomic.Int64
	once  sync.Once
	first string
}

func (e *errorCount) add(err error) {
	e.n.Add(1)
	e.once.Do(func() { e.first = err.Error() })
}

// loopResult is what a closed loop measured; a load generator sends it as
// its report.
type loopResult struct {
	Elapsed    time.Duration `json:"elapsed"`
	Cycles     int64         `json:"cycles"`
	Errors     int64         `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
	Latency    Latency       `json:"latency"`
}

// workerLock is the lock name worker w of a cycle scenario takes and
// gives back every cycle, prefix and all. Each worker has one of its own,
// as the zookeeper peer's recipe has a lock node per worker: a cycle
// scenario measures locks that are taken again and again, as a service's
// are, not names that are used once and left to the store to forget.
func workerLock(prefix string, w int) string {
	return prefix + strconv.Itoa(w)
}

// closedLoop runs workers goroutines that each repeat cycle back to back
// and times every cycle. New cycles start until d has passed; cycles
// already started run to the end, so every cycle counted is a whole one
// and none leaves a lock behind. Elapsed runs until the last one ends.
func closedLoop(ctx context.Context, workers int, d time.Duration, cycle func(ctx context.Context, worker, seq int) error) loopResult {
	lat := newLatencies()
	var errs errorCount
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil && time.Now().Before(deadline); seq++ {
				t0 := time.Now()
				if err := cycle(ctx, w, seq); err != nil {
					errs.add(err)
					continue
				}
				lat.record(time.Since(t0))
			}
		})
	}
	wg.Wait()
	sum := lat.summary()
	// Read errs.first only after Wait: the workers that set it are done.
	return loopResult{Elapsed: time.Since(start), Cycles: sum.Count, Errors: errs.n.Load(), FirstError: errs.first, Latency: sum}
}

// pace calls f(k, due) in a goroutine of its own at due = start + k×step,
// k = 0, 1, …, until ctx ends, then waits for the calls still running.
// Callers time from due, not from when f ran, so a schedule that fell
// behind (a starved scheduler) shows in the latencies instead of hiding.
func pace(ctx context.Context, step time.Duration, f func(k int, due time.Time)) {
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

// parallel runs f(ctx, i) for i in [0, n) on workers goroutines and returns
// the first error, after which no new i starts.
func parallel(ctx context.Context, workers, n int, f func(ctx context.Context, i int) error) error {
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

// usage is what has been consumed so far.
type usage struct {
	at          time.Time
	cpu         time.Duration // by this process: baton and etcd
	machine     time.Duration // by every process on the machine
	raftEntries float64       // committed by the embedded etcd member
	keyWrites   float64       // puts and deletes the member applied
	dbBytes     float64       // the member's backend file
}

// spent is what one scenario consumed.
type spent struct {
	wall        time.Duration
	cpu         time.Duration
	loadgenCPU  time.Duration
	machine     time.Duration
	raftEntries float64
	// keyWrites counts the puts and deletes etcd applied, each key a
	// lease revocation deleted among them.
	keyWrites float64
	// dbBytes is the member's backend file at the end: what etcd keeps,
	// old revisions until it compacts them included.
	dbBytes float64
}

// raftMetric is etcd's commit index as a gauge: every raft entry the
// member committed, whatever proposed it.
const raftMetric = "etcd_server_proposals_committed_total"

// putsMetric and deletesMetric count the puts and deletes etcd's store
// applied, a txn's ops one by one and a lease revocation's deletes among
// them; a delete of a key that does not exist counts too.
const (
	putsMetric    = "etcd_mvcc_put_total"
	deletesMetric = "etcd_mvcc_delete_total"
)

// dbMetric is the size of the member's backend file.
const dbMetric = "etcd_mvcc_db_total_size_in_bytes"

func readUsage() (usage, error) {
	cpu, err := processCPU()
	if err != nil {
		return usage{}, err
	}
	machine, err := machineCPU()
	if err != nil {
		return usage{}, err
	}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return usage{}, fmt.Errorf("gather metrics: %w", err)
	}
	u := usage{at: time.Now(), cpu: cpu, machine: machine}
	raft := false
	for _, mf := range mfs {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		m := mf.GetMetric()[0]
		v := m.GetCounter().GetValue()
		if g := m.GetGauge(); g != nil {
			v = g.GetValue()
		}
		switch mf.GetName() {
		case raftMetric:
			u.raftEntries, raft = v, true
		case putsMetric, deletesMetric:
			u.keyWrites += v
		case dbMetric:
			u.dbBytes = v
		}
	}
	if !raft {
		return usage{}, fmt.Errorf("metric %s not registered: is the embedded etcd member in this process?", raftMetric)
	}
	return u, nil
}

// measured reads usage before and after f, which runs the scenario's load
// and returns the CPU time its load generator spent (0 for load run in
// this process).
func measured(f func() (loadgenCPU time.Duration, err error)) (spent, error) {
	before, err := readUsage()
	if err != nil {
		return spent{}, err
	}
	loadgenCPU, err := f()
	if err != nil {
		return spent{}, err
	}
	after, err := readUsage()
	if err != nil {
		return spent{}, err
	}
	if after, err = settled(after); err != nil {
		return spent{}, err
	}
	return spent{
		wall:        after.at.Sub(before.at),
		cpu:         after.cpu - before.cpu,
		loadgenCPU:  loadgenCPU,
		machine:     after.machine - before.machine,
		raftEntries: after.raftEntries - before.raftEntries,
		keyWrites:   after.keyWrites - before.keyWrites,
		dbBytes:     after.dbBytes,
	}, nil
}

// settled waits for etcd's commit-index gauge to stop moving after a
// scenario, from its reading last, and returns the reading it settled at.
// etcd hands committed entries to be applied, and so answers their
// clients, before it sets the gauge in the same loop, so a reading taken
// as the last answer arrives can lag it by the last few entries; and the
// history index writes the scenario's last events just after it. Three
// equal readings 20ms apart, or a second, whichever comes first.
func settled(last usage) (usage, error) {
	deadline := time.Now().Add(time.Second)
	for same := 0; same < 3 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // the pace of the readings
		u, err := readUsage()
		if err != nil {
			return usage{}, err
		}
		if u.raftEntries == last.raftEntries {
			same++
		} else {
			same = 0
		}
		last.raftEntries, last.keyWrites, last.dbBytes = u.raftEntries, u.keyWrites, u.dbBytes
	}
	return last, nil
}

// processCPU is the user and system CPU time this process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// machineCPU is the CPU time every process on the machine has used, from
// the first line of /proc/stat. Time stolen by the hypervisor counts: it
// is CPU this machine wanted and did not get.
func machineCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read machine CPU: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	// cpu user nice system idle iowait irq softirq steal …
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("read machine CPU: unexpected /proc/stat line %q", line)
	}
	var busy int64
	for i, v := range f[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read machine CPU: %q: %w", line, err)
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}

// rssBytes reads this process's resident set size from /proc.
func rssBytes() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read RSS: VmRSS %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	return 0, errors.New("read RSS: no VmRSS in /proc/self/status")
}
