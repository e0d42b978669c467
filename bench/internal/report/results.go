package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/peer/redis"
	"github.com/baton-dev/baton/bench/internal/peer/zookeeper"
)

// Results is one run, as written to the JSON file. Sections of scenarios
// that did not run are absent.
type Results struct {
	Machine  Machine       `json:"machine"`
	Settings Settings      `json:"settings"`
	Started  time.Time     `json:"started"`
	Floor    []CycleResult `json:"floor,omitempty"`
	Lease    []CycleResult `json:"lease,omitempty"`
	Session  []CycleResult `json:"session,omitempty"`
	// EtcdGateway is the peer: etcd's own lock API through its HTTP
	// gateway, on the same member, one shared lease.
	EtcdGateway []CycleResult `json:"etcd_gateway,omitempty"`
	// Redis is the other peer, run when given a server: SET NX PX and a
	// compare-and-delete script; RedisServer says what that server is.
	Redis       []CycleResult     `json:"redis,omitempty"`
	RedisServer *redis.Server     `json:"redis_server,omitempty"`
	Contention  *ContentionResult `json:"contention,omitempty"`
	Scale       *ScaleResult      `json:"scale,omitempty"`
	History     *HistoryResult    `json:"history,omitempty"`
	// Trail is the trail the scenarios ran beside, with -trail-events.
	Trail *TrailResult `json:"trail,omitempty"`

	// ZooKeeper is the lock recipe of Curator on a standalone server the
	// bench started, ZooKeeperContention the contention scenario on it.
	ZooKeeper           []CycleResult     `json:"zookeeper,omitempty"`
	ZooKeeperContention *ContentionResult `json:"zookeeper_contention,omitempty"`
	ZooKeeperServer     *zookeeper.Server `json:"zookeeper_server,omitempty"`
	// EtcdMutex is etcd's own Go recipe, clientv3/concurrency's Session
	// and Mutex, over gRPC to the same member, a session per worker; and
	// EtcdMutexContention its workers on one Mutex.
	EtcdMutex           []CycleResult     `json:"etcd_mutex,omitempty"`
	EtcdMutexContention *ContentionResult `json:"etcd_mutex_contention,omitempty"`
	// Election is the election scenario: candidates take turns leading
	// one election (campaign, waiting; resign at once). EtcdElection is
	// etcd's own recipe on the same loop, ZooKeeperElection Curator's
	// LeaderSelector (the lock recipe) when the zookeeper peer runs.
	Election          *ContentionResult `json:"election,omitempty"`
	EtcdElection      *ContentionResult `json:"etcd_election,omitempty"`
	ZooKeeperElection *ContentionResult `json:"zookeeper_election,omitempty"`
	// Semaphore and RWLock are the semaphore and rwlock scenarios:
	// workers on one semaphore, or one read/write lock, taking holds
	// (waiting) and giving them back at once; ZooKeeperSemaphore and
	// ZooKeeperRWLock Curator's recipes for them, when the zookeeper
	// peer runs.
	Semaphore          *HoldsResult `json:"semaphore,omitempty"`
	ZooKeeperSemaphore *HoldsResult `json:"zookeeper_semaphore,omitempty"`
	RWLock             *HoldsResult `json:"rwlock,omitempty"`
	ZooKeeperRWLock    *HoldsResult `json:"zookeeper_rwlock,omitempty"`
	// LockSets is the lockset scenario: workers taking two names at a
	// time, as one lock set and as two single locks one by one.
	LockSets *LockSetsResult `json:"lockset,omitempty"`
	// HTTPFloor is the limit of an HTTP/JSON lock on embedded etcd: a
	// bare net/http server, one txn per acquire and one per release.
	HTTPFloor []CycleResult `json:"httpfloor,omitempty"`
	// HTTPFloorBatched is the same floor with its txns group-committed,
	// as baton's are: the limit of the shape for a design that batches.
	HTTPFloorBatched []CycleResult `json:"httpfloor_batched,omitempty"`
	// HTTPFloorContention is the floor's acquire with wait under the
	// contention scenario: the limit of a FIFO lock in that shape.
	HTTPFloorContention *ContentionResult `json:"httpfloor_contention,omitempty"`
	// KV is the keys scenario: puts and gets by baton and its peers, and
	// how soon each one's watch hears of a put.
	KV *KVResult `json:"kv,omitempty"`
	// Failover is the failover scenario: a holder killed, to the next
	// waiter's grant.
	Failover *FailoverResult `json:"failover,omitempty"`
}

// TrailResult is the trail every scenario ran beside (-trail-events).
type TrailResult struct {
	// Events counts the audit events made, as the history scenario makes
	// its own; FillSeconds is how long that took, and IndexedSeconds how
	// long the history index took after it to hold them all.
	Events         int64   `json:"events"`
	FillSeconds    float64 `json:"fill_seconds"`
	IndexedSeconds float64 `json:"indexed_seconds"`
	// Keys is how many keys etcd held once the index held the trail, and
	// CompactedAt the revision etcd was then compacted to (0 with
	// -trail-keeps-history).
	Keys        int64 `json:"keys"`
	CompactedAt int64 `json:"compacted_at,omitempty"`
}

// Machine is where the run ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// DescribeMachine is this machine.
func DescribeMachine() Machine {
	return Machine{CPUs: runtime.NumCPU(), CPUModel: cpuModel(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "" off Linux.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Settings are the run's settings, as the flags spell them.
type Settings struct {
	Duration          string   `json:"duration"`
	Clients           []int    `json:"clients"`
	ContentionClients int      `json:"contention_clients"`
	ScaleSessions     int      `json:"scale_sessions"`
	ScaleLocks        int      `json:"scale_locks"`
	ScaleDuration     string   `json:"scale_duration"`
	ScaleRenew        string   `json:"scale_renew"`
	Redis             string   `json:"redis,omitempty"`
	Only              []string `json:"only,omitempty"`
	HistoryEvents     int      `json:"history_events,omitempty"`
	HistoryRequests   int      `json:"history_requests,omitempty"`
	FloorRecords      int      `json:"floor_records,omitempty"`
	TrailEvents       int      `json:"trail_events,omitempty"`
	TrailKeepsHistory bool     `json:"trail_keeps_history,omitempty"`
}

// CycleResult is one cycle scenario (floor, lease, session or a peer) at
// one client count.
type CycleResult struct {
	Clients int `json:"clients"`
	// Cycles is how many acquire+release cycles completed in Seconds.
	Cycles       int64   `json:"cycles"`
	Seconds      float64 `json:"seconds"`
	CyclesPerSec float64 `json:"cycles_per_sec"`
	// Latency is of whole cycles, acquire sent to release answered.
	Latency measure.Latency `json:"latency"`
	// CPUSecondsPer1k is the CPU time of the process running etcd (and
	// baton) per 1,000 cycles; for the redis peer, redis-server's, absent
	// when it could not be read (see RedisServer.NoCPU).
	CPUSecondsPer1k float64 `json:"cpu_seconds_per_1k,omitempty"`
	// RaftEntriesPerCycle counts the raft entries etcd committed per
	// cycle; absent for the redis peer, which has no raft log.
	RaftEntriesPerCycle float64 `json:"raft_entries_per_cycle,omitempty"`
	// KeyWritesPerCycle counts the puts and deletes etcd applied per
	// cycle, whoever wrote them (the engine's records and index, lease
	// revocations); absent where raft entries are.
	KeyWritesPerCycle float64 `json:"key_writes_per_cycle,omitempty"`
	// DBMiB is the embedded member's backend file when the scenario
	// ended, in MiB: what etcd keeps of every scenario run so far, the
	// old revisions it has not compacted yet included; absent for the
	// peers outside etcd.
	DBMiB      float64  `json:"db_mib,omitempty"`
	Cores      CPUCores `json:"cores"`
	Errors     int64    `json:"errors"`
	FirstError string   `json:"first_error,omitempty"`
	// VsFloor divides this scenario's figures by the floor's at the same
	// client count; absent for the floor itself or when it did not run.
	VsFloor *Ratios `json:"vs_floor,omitempty"`
	// BatonVs divides baton's session-mode figures at the same client
	// count by this peer's (see peerSections): cycles/s above 1 and p50
	// below 1 are baton ahead. Absent for baton's own rows.
	BatonVs *Ratios `json:"baton_vs,omitempty"`
}

// Ratios are one scenario's figures divided by another's: the floor's
// (VsFloor), or a peer's (BatonVs).
type Ratios struct {
	CyclesPerSec    float64 `json:"cycles_per_sec"`
	P50             float64 `json:"p50"`
	P99             float64 `json:"p99"`
	CPUSecondsPer1k float64 `json:"cpu_seconds_per_1k,omitempty"`
}

// CPUCores says what used the machine's CPU during a scenario, in cores
// (CPU seconds per second). Other work on the machine competes with the
// bench for the same cores: a run whose Other is well above 0 is noisy.
type CPUCores struct {
	// Node is the process running baton and etcd (and, for the floor,
	// the load too); for the redis peer, redis-server, absent when it
	// could not be read (its CPU, if it runs here, is then in Other).
	Node float64 `json:"node,omitempty"`
	// Loadgen is the load generator process.
	Loadgen float64 `json:"loadgen"`
	// Other is every other process on the machine, and CPU time the
	// hypervisor stole.
	Other float64 `json:"other"`
}

// NewCPUCores is the cores of what a scenario spent.
func NewCPUCores(s measure.Spent) CPUCores {
	wall := s.Wall.Seconds()
	return CPUCores{
		Node:    Per(s.CPU.Seconds(), wall),
		Loadgen: Per(s.LoadgenCPU.Seconds(), wall),
		// /proc/stat counts in 10ms ticks: a short scenario can come out
		// a little below what the two processes used.
		Other: max(0, Per((s.Machine-s.CPU-s.LoadgenCPU).Seconds(), wall)),
	}
}

// NewCycleResult is the result of a cycle scenario's row at clients: its
// closed loop, and what it spent.
func NewCycleResult(clients int, l load.LoopResult, u measure.Spent) CycleResult {
	return CycleResult{
		Clients:             clients,
		Cycles:              l.Cycles,
		Seconds:             l.Elapsed.Seconds(),
		CyclesPerSec:        Per(float64(l.Cycles), l.Elapsed.Seconds()),
		Latency:             l.Latency,
		CPUSecondsPer1k:     Per(u.CPU.Seconds()*1000, float64(l.Cycles)),
		RaftEntriesPerCycle: Per(u.RaftEntries, float64(l.Cycles)),
		KeyWritesPerCycle:   Per(u.KeyWrites, float64(l.Cycles)),
		DBMiB:               u.DBBytes / (1 << 20),
		Cores:               NewCPUCores(u),
		Errors:              l.Errors,
		FirstError:          l.FirstError,
	}
}

// Per divides, and answers 0 for nothing measured: JSON has no NaN.
func Per(x, y float64) float64 {
	if y == 0 {
		return 0
	}
	return x / y
}

// ContentionResult is the contention scenario.
type ContentionResult struct {
	Clients int `json:"clients"`
	// Grants is how many acquires were granted in Seconds; every grant
	// but the first is a handoff.
	Grants         int64   `json:"grants"`
	Seconds        float64 `json:"seconds"`
	HandoffsPerSec float64 `json:"handoffs_per_sec"`
	// Handoff is from a release being answered to the next acquire of the
	// key being answered.
	Handoff measure.Latency `json:"handoff"`
	// HandoffsEarly counts handoffs whose acquire was answered before the
	// release; Handoff has them as 0.
	HandoffsEarly       int64            `json:"handoffs_early"`
	Fairness            contend.Fairness `json:"fairness"`
	CPUSecondsPer1k     float64          `json:"cpu_seconds_per_1k"`
	RaftEntriesPerGrant float64          `json:"raft_entries_per_grant"`
	// KeyWritesPerGrant counts etcd's puts and deletes per grant, as
	// CycleResult.KeyWritesPerCycle does per cycle.
	KeyWritesPerGrant float64  `json:"key_writes_per_grant,omitempty"`
	Cores             CPUCores `json:"cores"`
	Errors            int64    `json:"errors"`
	FirstError        string   `json:"first_error,omitempty"`
	// BatonVs divides the handoffs/s of baton's contention scenario by
	// this peer's (above 1 is baton ahead); absent for baton's own.
	BatonVs float64 `json:"baton_vs,omitempty"`
}

// NewContentionResult is the result of a contention loop of clients: its
// report, and what it spent.
func NewContentionResult(clients int, r contend.Report, u measure.Spent) *ContentionResult {
	return &ContentionResult{
		Clients:             clients,
		Grants:              r.Grants,
		Seconds:             r.Elapsed.Seconds(),
		HandoffsPerSec:      Per(float64(r.Grants), r.Elapsed.Seconds()),
		Handoff:             r.Handoff,
		HandoffsEarly:       r.HandoffsEarly,
		Fairness:            r.Fairness,
		CPUSecondsPer1k:     Per(u.CPU.Seconds()*1000, float64(r.Grants)),
		RaftEntriesPerGrant: Per(u.RaftEntries, float64(r.Grants)),
		KeyWritesPerGrant:   Per(u.KeyWrites, float64(r.Grants)),
		Cores:               NewCPUCores(u),
		Errors:              r.Errors,
		FirstError:          r.FirstError,
	}
}

// ScaleResult is the scale scenario. Its measured phase starts once every
// lock is held.
type ScaleResult struct {
	Sessions        int `json:"sessions"`
	LocksPerSession int `json:"locks_per_session"`
	// LocksHeld is counted in etcd at the end of the measured phase.
	LocksHeld    int64   `json:"locks_held"`
	SetupSeconds float64 `json:"setup_seconds"`
	Seconds      float64 `json:"seconds"`
	// RSS of the process running baton and etcd, in MiB: before the
	// scenario, and the most seen in the measured phase.
	RSSBeforeMiB float64 `json:"rss_before_mib"`
	RSSMaxMiB    float64 `json:"rss_max_mib"`
	// Renew is from a renew's scheduled time to its answer.
	Renew measure.Latency `json:"renew"`
	// Probe is from a probe's scheduled time to its release's answer.
	Probe             measure.Latency `json:"probe"`
	Cores             CPUCores        `json:"cores"`
	RaftEntriesPerSec float64         `json:"raft_entries_per_sec"`
	Errors            int64           `json:"errors"`
	FirstError        string          `json:"first_error,omitempty"`
	// ProbesPerSec is the probes' rate, a constant of the scenario: the
	// table's heading says it, the JSON does not.
	ProbesPerSec int `json:"-"`
}

// Compare fills in each cycle scenario's ratios to the floor at the same
// client count, and the peers' ratios to baton's.
func (r *Results) Compare() {
	for _, rs := range [][]CycleResult{r.Lease, r.Session, r.EtcdGateway, r.Redis, r.ZooKeeper, r.EtcdMutex, r.HTTPFloor, r.HTTPFloorBatched} {
		for i := range rs {
			for _, f := range r.Floor {
				if f.Clients != rs[i].Clients {
					continue
				}
				rs[i].VsFloor = &Ratios{
					CyclesPerSec:    Per(rs[i].CyclesPerSec, f.CyclesPerSec),
					P50:             Per(float64(rs[i].Latency.P50), float64(f.Latency.P50)),
					P99:             Per(float64(rs[i].Latency.P99), float64(f.Latency.P99)),
					CPUSecondsPer1k: Per(rs[i].CPUSecondsPer1k, f.CPUSecondsPer1k),
				}
			}
		}
	}
	r.compareToSession()
	if r.KV != nil {
		r.KV.compare()
	}
}

// peerSections are the cycle scenarios baton's session mode is held
// against, in table order: ZooKeeper, etcd's own recipe, and the HTTP
// floor, its txns sent alone and batched.
func (r *Results) peerSections() []CycleSection {
	return []CycleSection{{"zookeeper", r.ZooKeeper}, {"etcd-mutex", r.EtcdMutex}, {"httpfloor", r.HTTPFloor}, {"httpfloor-batched", r.HTTPFloorBatched}}
}

// peerContentionResult is a peer's contention scenario, named.
type peerContentionResult struct {
	name   string
	result *ContentionResult
}

// peerContention lists the peers' contention results that ran.
func (r *Results) peerContention() []peerContentionResult {
	var ps []peerContentionResult
	if r.ZooKeeperContention != nil {
		ps = append(ps, peerContentionResult{"zookeeper", r.ZooKeeperContention})
	}
	if r.EtcdMutexContention != nil {
		ps = append(ps, peerContentionResult{"etcd-mutex", r.EtcdMutexContention})
	}
	if r.HTTPFloorContention != nil {
		ps = append(ps, peerContentionResult{"httpfloor", r.HTTPFloorContention})
	}
	return ps
}

// compareToSession divides baton's session-mode figures by each peer's
// at the same client count, and the handoffs/s of baton's contention
// scenario by each contention peer's.
func (r *Results) compareToSession() {
	for _, sc := range r.peerSections() {
		for i := range sc.Results {
			p := &sc.Results[i]
			for _, s := range r.Session {
				if s.Clients != p.Clients {
					continue
				}
				p.BatonVs = &Ratios{
					CyclesPerSec:    Per(s.CyclesPerSec, p.CyclesPerSec),
					P50:             Per(float64(s.Latency.P50), float64(p.Latency.P50)),
					P99:             Per(float64(s.Latency.P99), float64(p.Latency.P99)),
					CPUSecondsPer1k: Per(s.CPUSecondsPer1k, p.CPUSecondsPer1k),
				}
			}
		}
	}
	if c := r.Contention; c != nil {
		for _, p := range r.peerContention() {
			p.result.BatonVs = Per(c.HandoffsPerSec, p.result.HandoffsPerSec)
		}
	}
	if c := r.Election; c != nil {
		for _, p := range r.peerElections() {
			p.result.BatonVs = Per(c.HandoffsPerSec, p.result.HandoffsPerSec)
		}
	}
	if r.Semaphore != nil && r.ZooKeeperSemaphore != nil {
		r.Semaphore.compareTo(r.ZooKeeperSemaphore)
	}
	if r.RWLock != nil && r.ZooKeeperRWLock != nil {
		r.RWLock.compareTo(r.ZooKeeperRWLock)
	}
}

// peerElections lists the peers' election results that ran.
func (r *Results) peerElections() []peerContentionResult {
	var ps []peerContentionResult
	if r.ZooKeeperElection != nil {
		ps = append(ps, peerContentionResult{"zookeeper", r.ZooKeeperElection})
	}
	if r.EtcdElection != nil {
		ps = append(ps, peerContentionResult{"etcd-election", r.EtcdElection})
	}
	return ps
}

// printPeers prints baton's session mode beside each peer at the same
// client count, and the peers' contention beside baton's.
func printPeers(tw io.Writer, r *Results) {
	var rows []string
	for _, sc := range r.peerSections() {
		for _, p := range sc.Results {
			if v := p.BatonVs; v != nil {
				rows = append(rows, fmt.Sprintf("%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", sc.Name, p.Clients, p.CyclesPerSec,
					ratio(v.CyclesPerSec), ms(p.Latency.P50), ratio(v.P50), ms(p.Latency.P99), ratio(v.P99), ratio(v.CPUSecondsPer1k)))
			}
		}
	}
	if len(rows) > 0 {
		fmt.Fprintln(tw, "\nbaton's session mode against the peers (×: baton's session figure ÷ the peer's, same clients)")
		fmt.Fprintln(tw, "peer\tclients\tcycles/s\t×\tp50\t×\tp99\t×\tcpu s/1k ×\t")
		for _, row := range rows {
			fmt.Fprint(tw, row)
		}
	}
	if ps := r.peerContention(); len(ps) > 0 {
		fmt.Fprintf(tw, "\ncontention of the peers: %d clients, lock (waiting) then unlock, one lock (×: the contention scenario's handoffs/s ÷ the peer's)\n", ps[0].result.Clients)
		printHandoffs(tw, ps)
		if r.ZooKeeperContention != nil {
			fmt.Fprintln(tw, "zookeeper contention: cpu and node cores are the server's; token order is the sequence numbers' order")
		}
	}
	if r.Election != nil {
		fmt.Fprintf(tw, "\nelection: %d candidates, campaign (waiting) then resign, one election (×: baton's handovers/s ÷ the peer's)\n", r.Election.Clients)
		printHandoffs(tw, append([]peerContentionResult{{"baton", r.Election}}, r.peerElections()...))
		if r.ZooKeeperElection != nil {
			fmt.Fprintln(tw, "zookeeper election: Curator's LeaderSelector takes leadership with its lock recipe, which is what runs here")
		}
	}
}

// printHandoffs prints a row of handoff figures for each of ps.
func printHandoffs(tw io.Writer, ps []peerContentionResult) {
	fmt.Fprintln(tw, "peer\thandoffs/s\t×\thandoff p50\thandoff p99\tearly\tjudged\tin order\tmax overtaken\tcpu s/1k\traft/grant\twrites/grant\tcores node/gen/other\terrors\t")
	for _, p := range ps {
		c := p.result
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%d\t%d\t%.4f\t%d\t%s\t%s\t%s\t%s\t%d\t\n",
			p.name, c.HandoffsPerSec, ratio(c.BatonVs), ms(c.Handoff.P50), ms(c.Handoff.P99), c.HandoffsEarly,
			c.Fairness.Judged, c.Fairness.InOrder, c.Fairness.MaxOvertaken, figure(c.CPUSecondsPer1k, 3), figure(c.RaftEntriesPerGrant, 2), figure(c.KeyWritesPerGrant, 1), c.Cores, c.Errors)
	}
}

// CycleSection is one of the cycle scenarios' results, named.
type CycleSection struct {
	Name    string
	Results []CycleResult
}

// CycleSections lists the cycle sections in table order; zookeeper's
// only when it ran, as its server may not be installed.
func (r *Results) CycleSections() []CycleSection {
	sections := []CycleSection{{"floor", r.Floor}, {"lease", r.Lease}, {"session", r.Session}, {"etcd-gateway", r.EtcdGateway}, {"redis", r.Redis}}
	if len(r.ZooKeeper) > 0 {
		sections = append(sections, CycleSection{"zookeeper", r.ZooKeeper})
	}
	return append(sections, CycleSection{"etcd-mutex", r.EtcdMutex}, CycleSection{"httpfloor", r.HTTPFloor}, CycleSection{"httpfloor-batched", r.HTTPFloorBatched})
}

// hasCycles reports whether any cycle scenario ran.
func (r *Results) hasCycles() bool {
	for _, sc := range r.CycleSections() {
		if len(sc.Results) > 0 {
			return true
		}
	}
	return false
}

// WriteTable prints r to out as the tables a reader of a run looks at.
func WriteTable(out io.Writer, r *Results) error {
	m := r.Machine
	fmt.Fprintf(out, "baton bench: %d CPUs (%s), %s, %s per throughput scenario\n", m.CPUs, m.CPUModel, m.GoVersion, r.Settings.Duration)
	if t := r.Trail; t != nil {
		then := "then compacted"
		if t.CompactedAt == 0 {
			then = "not compacted: etcd still holds every revision and deleted key of the fill"
		}
		fmt.Fprintf(out, "every scenario ran beside a trail of %d audit events (%d keys in etcd), made in %.1f s, indexed %.1f s later, %s\n", t.Events, t.Keys, t.FillSeconds, t.IndexedSeconds, then)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if r.hasCycles() {
		fmt.Fprintln(tw, "\nacquire+release cycles, each client on a lock of its own (×floor: ratio to the floor at the same clients)")
		fmt.Fprintln(tw, "scenario\tclients\tcycles/s\t×floor\tp50\t×floor\tp99\t×floor\tcpu s/1k\t×floor\traft/cycle\twrites/cycle\tdb MiB\tcores node/gen/other\terrors\t")
		for _, sc := range r.CycleSections() {
			for _, c := range sc.Results {
				v := c.VsFloor
				if v == nil {
					v = &Ratios{}
				}
				fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n",
					sc.Name, c.Clients, c.CyclesPerSec, ratio(v.CyclesPerSec),
					ms(c.Latency.P50), ratio(v.P50), ms(c.Latency.P99), ratio(v.P99),
					figure(c.CPUSecondsPer1k, 3), ratio(v.CPUSecondsPer1k), figure(c.RaftEntriesPerCycle, 2), figure(c.KeyWritesPerCycle, 1),
					figure(c.DBMiB, 0), c.Cores, c.Errors)
			}
		}
		if s := r.RedisServer; s != nil && len(r.Redis) > 0 {
			fmt.Fprintln(tw, s.Caveat())
			if s.PID != 0 {
				fmt.Fprintf(tw, "redis: cpu and node cores are redis-server's (pid %d); raft/cycle does not apply\n", s.PID)
			} else {
				fmt.Fprintf(tw, "redis: redis-server's CPU not read: %s. If it runs on this machine, it is in other. raft/cycle does not apply\n", s.NoCPU)
			}
		}
		if s := r.ZooKeeperServer; s != nil && len(r.ZooKeeper) > 0 {
			fmt.Fprintln(tw, s.Caveat())
		}
	}
	if c := r.Contention; c != nil {
		fmt.Fprintf(tw, "\ncontention: %d clients, acquire with wait then release, one key\n", c.Clients)
		fmt.Fprintln(tw, "handoffs/s\thandoff p50\thandoff p99\tearly\tjudged\tin order\tmax overtaken\tcpu s/1k\traft/grant\twrites/grant\tcores node/gen/other\terrors\t")
		fmt.Fprintf(tw, "%.0f\t%s\t%s\t%d\t%d\t%.4f\t%d\t%.3f\t%.2f\t%.1f\t%s\t%d\t\n",
			c.HandoffsPerSec, ms(c.Handoff.P50), ms(c.Handoff.P99), c.HandoffsEarly,
			c.Fairness.Judged, c.Fairness.InOrder, c.Fairness.MaxOvertaken,
			c.CPUSecondsPer1k, c.RaftEntriesPerGrant, c.KeyWritesPerGrant, c.Cores, c.Errors)
		fmt.Fprintln(tw, "handoff: release answered → next acquire answered; early: next acquire answered first (counted as 0)")
		fmt.Fprintln(tw, "judged: requests sent after the first grant (the opening burst all races in at once)")
		fmt.Fprintln(tw, "in order: share of judged grants that no earlier-sent request was still waiting for (1 = FIFO)")
		fmt.Fprintln(tw, "max overtaken: most later-sent requests granted before any one judged request (0 = FIFO)")
	}
	printPeers(tw, r)
	printHolds(tw, r)
	if r.LockSets != nil {
		printLockSets(tw, r.LockSets)
	}
	if r.KV != nil {
		printKV(tw, r.KV)
	}
	if r.Failover != nil {
		printFailover(tw, r.Failover)
	}
	if s := r.Scale; s != nil {
		fmt.Fprintf(tw, "\nscale: %d sessions × %d locks, each session renewed every %s, %d probes/s, %s\n",
			s.Sessions, s.LocksPerSession, r.Settings.ScaleRenew, s.ProbesPerSec, r.Settings.ScaleDuration)
		fmt.Fprintln(tw, "locks held\tsetup\trss before\trss max\trenews\trenew p50\trenew p99\tprobes\tprobe p50\tprobe p99\tcores node/gen/other\terrors\t")
		fmt.Fprintf(tw, "%d\t%.1fs\t%.0f MiB\t%.0f MiB\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t\n",
			s.LocksHeld, s.SetupSeconds, s.RSSBeforeMiB, s.RSSMaxMiB, s.Renew.Count, ms(s.Renew.P50), ms(s.Renew.P99),
			s.Probe.Count, ms(s.Probe.P50), ms(s.Probe.P99), s.Cores, s.Errors)
	}
	if h := r.History; h != nil {
		printHistory(tw, h)
	}
	fmt.Fprintln(tw, "\ncores: CPU seconds per second of baton's process, the load generator, and everything else on the machine (noise)")
	if r.hasCycles() || r.Contention != nil {
		fmt.Fprintln(tw, "writes: puts and deletes etcd applied, per cycle or grant, whoever made them (records, the history index, lease revocations)")
	}
	if r.hasCycles() {
		fmt.Fprintln(tw, "db MiB: etcd's backend file as the row ended, every row so far in it (old revisions until compaction too)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range r.firstErrors() {
		fmt.Fprintln(out, "first error:", e)
	}
	return nil
}

// firstErrors lists each scenario's first error, if it had any.
func (r *Results) firstErrors() []string {
	var errs []string
	for _, sc := range r.CycleSections() {
		for _, c := range sc.Results {
			if c.FirstError != "" {
				errs = append(errs, fmt.Sprintf("%s, %d clients: %s", sc.Name, c.Clients, c.FirstError))
			}
		}
	}
	if c := r.Contention; c != nil && c.FirstError != "" {
		errs = append(errs, "contention: "+c.FirstError)
	}
	if c := r.ZooKeeperContention; c != nil && c.FirstError != "" {
		errs = append(errs, "zookeeper contention: "+c.FirstError)
	}
	for _, p := range r.peerContention() {
		if p.result.FirstError != "" {
			errs = append(errs, p.name+" contention: "+p.result.FirstError)
		}
	}
	for _, p := range []peerHolds{{"semaphore", r.Semaphore}, {"zookeeper semaphore", r.ZooKeeperSemaphore}, {"rwlock", r.RWLock}, {"zookeeper rwlock", r.ZooKeeperRWLock}} {
		if p.result != nil && p.result.FirstError != "" {
			errs = append(errs, p.name+": "+p.result.FirstError)
		}
	}
	if s := r.LockSets; s != nil {
		errs = append(errs, s.firstErrors()...)
	}
	if s := r.Scale; s != nil && s.FirstError != "" {
		errs = append(errs, "scale: "+s.FirstError)
	}
	if h := r.History; h != nil {
		for _, hr := range h.Reads() {
			if hr.FirstError != "" {
				errs = append(errs, "history "+hr.Path+": "+hr.FirstError)
			}
		}
		if h.RSS.FirstError != "" {
			errs = append(errs, "history "+h.RSS.Path+": "+h.RSS.FirstError)
		}
	}
	return errs
}

func (c CPUCores) String() string {
	return fmt.Sprintf("%s/%.2f/%.2f", figure(c.Node, 2), c.Loadgen, c.Other)
}

// figure formats x with prec decimals, or "-" for a figure that does not
// apply or was not read (see the omitempty fields of CycleResult).
func figure(x float64, prec int) string {
	if x == 0 {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// ms formats microseconds as milliseconds.
func ms(us int64) string { return fmt.Sprintf("%.3fms", float64(us)/1000) }

func ratio(x float64) string {
	switch {
	case x == 0:
		return "-"
	case x < 0.1:
		// A peer can be that much faster than the floor (redis's p99).
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// WriteJSON writes r as JSON to the file at path.
func WriteJSON(path string, r *Results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
