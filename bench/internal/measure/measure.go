package measure

import (
	"bufio"
	"bytes"
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

// Latencies is a histogram of durations that many goroutines record into:
// HdrHistogram with three significant digits, in microseconds.
type Latencies struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

// NewLatencies returns an empty histogram.
func NewLatencies() *Latencies {
	return &Latencies{h: hdrhistogram.New(1, maxLatency.Microseconds(), 3)}
}

// Record adds d, clamped to the histogram's range.
func (l *Latencies) Record(d time.Duration) {
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

// Summary is the histogram so far.
func (l *Latencies) Summary() Latency {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Latency{
		Count: l.h.TotalCount(),
		P50:   l.h.ValueAtQuantile(50),
		P99:   l.h.ValueAtQuantile(99),
		Max:   l.h.Max(),
	}
}

// ErrorCount counts failures and keeps the first one's text for the report.
type ErrorCount struct {
	n     atomic.Int64
	once  sync.Once
	first string
}

// Add counts err, and keeps its text if it is the first.
func (e *ErrorCount) Add(err error) {
	e.n.Add(1)
	e.once.Do(func() { e.first = err.Error() })
}

// Count is how many failures were added.
func (e *ErrorCount) Count() int64 { return e.n.Load() }

// First is the first failure's text, or "". Read it once every Add is
// done: the goroutines that may set it must have ended.
func (e *ErrorCount) First() string { return e.first }

// usage is what has been consumed so far.
type usage struct {
	at          time.Time
	cpu         time.Duration // by this process: baton and etcd
	machine     time.Duration // by every process on the machine
	raftEntries float64       // committed by the embedded etcd member
	keyWrites   float64       // puts and deletes the member applied
	dbBytes     float64       // the member's backend file
}

// Spent is what one scenario consumed. A peer outside etcd sets the
// figures of its own server in place of the node's: its CPU as CPU, and
// no raft entries, key writes or backend.
type Spent struct {
	Wall time.Duration
	// CPU is the node's process's: baton and etcd (and, for load run in
	// this process, the load too).
	CPU        time.Duration
	LoadgenCPU time.Duration
	// Machine is every process's on the machine, CPU stolen by the
	// hypervisor included.
	Machine     time.Duration
	RaftEntries float64
	// KeyWrites counts the puts and deletes etcd applied, each key a
	// lease revocation deleted among them.
	KeyWrites float64
	// DBBytes is the member's backend file at the end: what etcd keeps,
	// old revisions until it compacts them included.
	DBBytes float64
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
	cpu, err := ProcessCPU()
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

// Measured reads usage before and after f, which runs the scenario's load
// and returns the CPU time its load generator spent (0 for load run in
// this process).
func Measured(f func() (loadgenCPU time.Duration, err error)) (Spent, error) {
	before, err := readUsage()
	if err != nil {
		return Spent{}, err
	}
	loadgenCPU, err := f()
	if err != nil {
		return Spent{}, err
	}
	after, err := readUsage()
	if err != nil {
		return Spent{}, err
	}
	if after, err = settled(after); err != nil {
		return Spent{}, err
	}
	return Spent{
		Wall:        after.at.Sub(before.at),
		CPU:         after.cpu - before.cpu,
		LoadgenCPU:  loadgenCPU,
		Machine:     after.machine - before.machine,
		RaftEntries: after.raftEntries - before.raftEntries,
		KeyWrites:   after.keyWrites - before.keyWrites,
		DBBytes:     after.dbBytes,
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

// ProcessCPU is the user and system CPU time this process has used.
func ProcessCPU() (time.Duration, error) {
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

// ProcCPU is the user and system CPU time process pid has used, every
// thread's, from /proc/PID/stat.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU of process %d: %w", pid, err)
	}
	d, err := statCPU(b)
	if err != nil {
		return 0, fmt.Errorf("read CPU of process %d: %w", pid, err)
	}
	return d, nil
}

// statCPU reads utime and stime from a /proc/PID/stat line.
func statCPU(stat []byte) (time.Duration, error) {
	// The second field, the command name in parentheses, may hold spaces
	// and parentheses: the numbered fields are counted from the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	var f []string
	if i >= 0 {
		// f[0] is field 3 (state); utime and stime are fields 14 and 15.
		f = strings.Fields(string(stat[i+1:]))
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected stat %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat %q: %w", stat, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// RSSBytes reads this process's resident set size from /proc.
func RSSBytes() (int64, error) {
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
