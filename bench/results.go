package main

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
	RedisServer *RedisServer      `json:"redis_server,omitempty"`
	Contention  *ContentionResult `json:"contention,omitempty"`
	Scale       *ScaleResult      `json:"scale,omitempty"`
	History     *HistoryResult    `json:"history,omitempty"`
	// Trail is the trail the scenarios ran beside, with -trail-events.
	Trail *TrailResult `json:"trail,omitempty"`

	// ZooKeeper is the lock recipe of Curator on a standalone server the
	// bench started, ZooKeeperContention the contention scenario on it.
	ZooKeeper           []CycleResult     `json:"zookeeper,omitempty"`
	ZooKeeperContention *ContentionResult `json:"zookeeper_contention,omitempty"`
	ZooKeeperServer     *ZooKeeperServer  `json:"zookeeper_server,omitempty"`
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
}

// Machine is where the run ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

func describeMachine() Machine {
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

func (c Config) settings() Settings {
	s := Settings{
		Duration:          c.Duration.String(),
		Clients:           c.Clients,
		ContentionClients: c.ContentionClients,
		ScaleSessions:     c.ScaleSessions,
		ScaleLocks:        c.ScaleLocks,
		ScaleDuration:     c.ScaleDuration.String(),
		ScaleRenew:        c.ScaleRenew.String(),
		Redis:             c.Redis,
		Only:              c.Only,
	}
	if c.runs("history") {
		s.HistoryEvents, s.HistoryRequests = c.HistoryEvents, c.HistoryRequests
	}
	if c.runs("httpfloor-batched") {
		s.FloorRecords = c.FloorRecords
	}
	s.TrailEvents, s.TrailKeepsHistory = c.TrailEvents, c.TrailKeepsHistory
	return s
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
	Latency Latency `json:"latency"`
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

func (s spent) cores() CPUCores {
	wall := s.wall.Seconds()
	return CPUCores{
		Node:    per(s.cpu.Seconds(), wall),
		Loadgen: per(s.loadgenCPU.Seconds(), wall),
		// /proc/stat counts in 10ms ticks: a short scenario can come out
		// a little below what the two processes used.
		Other: max(0, per((s.machine-s.cpu-s.loadgenCPU).Seconds(), wall)),
	}
}

func newCycleResult(clients int, l loopResult, u spent) CycleResult {
	return CycleResult{
		Clients:             clients,
		Cycles:              l.Cycles,
		Seconds:             l.Elapsed.Seconds(),
		CyclesPerSec:        per(float64(l.Cycles), l.Elapsed.Seconds()),
		Latency:             l.Latency,
		CPUSecondsPer1k:     per(u.cpu.Seconds()*1000, float64(l.Cycles)),
		RaftEntriesPerCycle: per(u.raftEntries, float64(l.Cycles)),
		KeyWritesPerCycle:   per(u.keyWrites, float64(l.Cycles)),
		DBMiB:               u.dbBytes / (1 << 20),
		Cores:               u.cores(),
		Errors:              l.Errors,
		FirstError:          l.FirstError,
	}
}

// per divides, and answers 0 for nothing measured: JSON has no NaN.
func per(x, y float64) float64 {
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
	Handoff Latency `json:"handoff"`
	// HandoffsEarly counts handoffs whose acquire was answered before the
	// release; Handoff has them as 0.
	HandoffsEarly       int64    `json:"handoffs_early"`
	Fairness            fairness `json:"fairness"`
	CPUSecondsPer1k     float64  `json:"cpu_seconds_per_1k"`
	RaftEntriesPerGrant float64  `json:"raft_entries_per_grant"`
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

func newContentionResult(clients int, r contentionReport, u spent) *ContentionResult {
	return &ContentionResult{
		Clients:             clients,
		Grants:              r.Grants,
		Seconds:             r.Elapsed.Seconds(),
		HandoffsPerSec:      per(float64(r.Grants), r.Elapsed.Seconds()),
		Handoff:             r.Handoff,
		HandoffsEarly:       r.HandoffsEarly,
		Fairness:            r.Fairness,
		CPUSecondsPer1k:     per(u.cpu.Seconds()*1000, float64(r.Grants)),
		RaftEntriesPerGrant: per(u.raftEntries, float64(r.Grants)),
		KeyWritesPerGrant:   per(u.keyWrites, float64(r.Grants)),
		Cores:               u.cores(),
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
	Renew Latency `json:"renew"`
	// Probe is from a probe's scheduled time to its release's answer.
	Probe             Latency  `json:"probe"`
	Cores             CPUCores `json:"cores"`
	RaftEntriesPerSec float64  `json:"raft_entries_per_sec"`
	Errors            int64    `json:"errors"`
	FirstError        string   `json:"first_error,omitempty"`
}

func newScaleResult(cfg Config, r scaleReport, held, rssBefore, rssMax int64, u spent) *ScaleResult {
	const mib = 1 << 20
	return &ScaleResult{
		Sessions:          cfg.ScaleSessions,
		LocksPerSession:   cfg.ScaleLocks,
		LocksHeld:         held,
		SetupSeconds:      r.Setup.Seconds(),
		Seconds:           r.Elapsed.Seconds(),
		RSSBeforeMiB:      float64(rssBefore) / mib,
		RSSMaxMiB:         float64(rssMax) / mib,
		Renew:             r.Renew,
		Probe:             r.Probe,
		Cores:             u.cores(),
		RaftEntriesPerSec: per(u.raftEntries, r.Elapsed.Seconds()),
		Errors:            r.Errors,
		FirstError:        r.FirstError,
	}
}

// compare fills in each cycle scenario's ratios to the floor at the same
// client count.
func (r *Results) compare() {
	for _, rs := range [][]CycleResult{r.Lease, r.Session, r.EtcdGateway, r.Redis, r.ZooKeeper, r.EtcdMutex, r.HTTPFloor, r.HTTPFloorBatched} {
		for i := range rs {
			for _, f := range r.Floor {
				if f.Clients != rs[i].Clients {
					continue
				}
				rs[i].VsFloor = &Ratios{
					CyclesPerSec:    per(rs[i].CyclesPerSec, f.CyclesPerSec),
					P50:             per(float64(rs[i].Latency.P50), float64(f.Latency.P50)),
					P99:             per(float64(rs[i].Latency.P99), float64(f.Latency.P99)),
					CPUSecondsPer1k: per(rs[i].CPUSecondsPer1k, f.CPUSecondsPer1k),
				}
			}
		}
	}
	r.compareToSession()
}

// peerSections are the cycle scenarios baton's session mode is held
// against, in table order: ZooKeeper, etcd's own recipe, and the HTTP
// floor, its txns sent alone and batched.
func (r *Results) peerSections() []cycleSection {
	return []cycleSection{{"zookeeper", r.ZooKeeper}, {"etcd-mutex", r.EtcdMutex}, {"httpfloor", r.HTTPFloor}, {"httpfloor-batched", r.HTTPFloorBatched}}
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
		for i := range sc.results {
			p := &sc.results[i]
			for _, s := range r.Session {
				if s.Clients != p.Clients {
					continue
				}
				p.BatonVs = &Ratios{
					CyclesPerSec:    per(s.CyclesPerSec, p.CyclesPerSec),
					P50:             per(float64(s.Latency.P50), float64(p.Latency.P50)),
					P99:             per(float64(s.Latency.P99), float64(p.Latency.P99)),
					CPUSecondsPer1k: per(s.CPUSecondsPer1k, p.CPUSecondsPer1k),
				}
			}
		}
	}
	if c := r.Contention; c != nil {
		for _, p := range r.peerContention() {
			p.result.BatonVs = per(c.HandoffsPerSec, p.result.HandoffsPerSec)
		}
	}
	if c := r.Election; c != nil {
		for _, p := range r.peerElections() {
			p.result.BatonVs = per(c.HandoffsPerSec, p.result.HandoffsPerSec)
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
		for _, p := range sc.results {
			if v := p.BatonVs; v != nil {
				rows = append(rows, fmt.Sprintf("%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", sc.name, p.Clients, p.CyclesPerSec,
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

// cycleSection is one of the cycle scenarios' results, named.
type cycleSection struct {
	name    string
	results []CycleResult
}

// cycleScenarios lists the cycle sections in table order; zookeeper's
// only when it ran, as its server may not be installed.
func (r *Results) cycleScenarios() []cycleSection {
	sections := []cycleSection{{"floor", r.Floor}, {"lease", r.Lease}, {"session", r.Session}, {"etcd-gateway", r.EtcdGateway}, {"redis", r.Redis}}
	if len(r.ZooKeeper) > 0 {
		sections = append(sections, cycleSection{"zookeeper", r.ZooKeeper})
	}
	return append(sections, cycleSection{"etcd-mutex", r.EtcdMutex}, cycleSection{"httpfloor", r.HTTPFloor}, cycleSection{"httpfloor-batched", r.HTTPFloorBatched})
}

// hasCycles reports whether any cycle scenario ran.
func (r *Results) hasCycles() bool {
	for _, sc := range r.cycleScenarios() {
		if len(sc.results) > 0 {
			return true
		}
	}
	return false
}

func printTable(out io.Writer, r *Results) error {
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
		for _, sc := range r.cycleScenarios() {
			for _, c := range sc.results {
				v := c.VsFloor
				if v == nil {
					v = &Ratios{}
				}
				fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n",
					sc.name, c.Clients, c.CyclesPerSec, ratio(v.CyclesPerSec),
					ms(c.Latency.P50), ratio(v.P50), ms(c.Latency.P99), ratio(v.P99),
					figure(c.CPUSecondsPer1k, 3), ratio(v.CPUSecondsPer1k), figure(c.RaftEntriesPerCycle, 2), figure(c.KeyWritesPerCycle, 1),
					figure(c.DBMiB, 0), c.Cores, c.Errors)
			}
		}
		if s := r.RedisServer; s != nil && len(r.Redis) > 0 {
			fmt.Fprintln(tw, s.caveat())
			if s.PID != 0 {
				fmt.Fprintf(tw, "redis: cpu and node cores are redis-server's (pid %d); raft/cycle does not apply\n", s.PID)
			} else {
				fmt.Fprintf(tw, "redis: redis-server's CPU not read: %s. If it runs on this machine, it is in other. raft/cycle does not apply\n", s.NoCPU)
			}
		}
		if s := r.ZooKeeperServer; s != nil && len(r.ZooKeeper) > 0 {
			fmt.Fprintln(tw, s.caveat())
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
	if s := r.Scale; s != nil {
		fmt.Fprintf(tw, "\nscale: %d sessions × %d locks, each session renewed every %s, %d probes/s, %s\n",
			s.Sessions, s.LocksPerSession, r.Settings.ScaleRenew, probeRate, r.Settings.ScaleDuration)
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
	for _, sc := range r.cycleScenarios() {
		for _, c := range sc.results {
			if c.FirstError != "" {
				errs = append(errs, fmt.Sprintf("%s, %d clients: %s", sc.name, c.Clients, c.FirstError))
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
		for _, hr := range h.reads() {
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

func writeJSON(path string, r *Results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// HistoryResult is the history scenario: the audit trail filled through
// the engine, then read through the HTTP API at that size.
type HistoryResult struct {
	// Events counts the audit events the fill made, FillSeconds the time
	// its cycles took.
	Events           int64   `json:"events"`
	FillSeconds      float64 `json:"fill_seconds"`
	FillEventsPerSec float64 `json:"fill_events_per_sec"`
	// FillWorkers called the engine at once, as FillOwners owners, on
	// historyNames locks.
	FillWorkers int `json:"fill_workers"`
	FillOwners  int `json:"fill_owners"`
	// IndexedSeconds is how long after the fill the first page could be
	// read (see awaitHistory).
	IndexedSeconds float64 `json:"indexed_seconds"`
	Cycles         int64   `json:"cycles"`
	Revoked        int64   `json:"revoked"`
	Expired        int     `json:"expired"`
	// FirstRevision and LastRevision are the lowest and highest token the
	// fill's acquires were granted; the middle and oldest pages are read
	// before revisions of that range.
	FirstRevision int64 `json:"first_revision"`
	LastRevision  int64 `json:"last_revision"`
	// Pages of 100 events: the newest, the one before the middle of the
	// fill's range, the one before its first 100 revisions, one lock's.
	Newest HistoryRead `json:"newest"`
	Middle HistoryRead `json:"middle"`
	Oldest HistoryRead `json:"oldest"`
	Lock   HistoryRead `json:"lock"`
	// Filtered reads: an owner no event has, and the rare revokes.
	Owner  HistoryRead   `json:"owner"`
	Type   HistoryRead   `json:"type"`
	RSS    HistoryRSS    `json:"rss"`
	Replay HistoryReplay `json:"replay"`
}

// HistoryRead is one kind of GET /v1/history, requested one at a time.
type HistoryRead struct {
	Path    string  `json:"path"`
	Latency Latency `json:"latency"`
	// Events and NextBefore are those of the last page read: a filtered
	// read may answer a short page with a next_before to go on from.
	Events     int   `json:"events"`
	NextBefore int64 `json:"next_before,omitempty"`
	// TargetP99 is the p99 this read should stay within, in
	// microseconds; Met says whether it did.
	TargetP99 int64 `json:"target_p99_us"`
	Met       bool  `json:"met"`
	// Errors counts the measured requests that failed (Latency counts
	// those that did not).
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// HistoryRSS is this process's RSS (the node's, and the bench's, small
// while it only reads) before and after Reads requests of Path.
type HistoryRSS struct {
	Path      string  `json:"path"`
	Reads     int     `json:"reads"`
	BeforeMiB float64 `json:"before_mib"`
	AfterMiB  float64 `json:"after_mib"`
	GrowthMiB float64 `json:"growth_mib"`
	// AllocatedMiB is what the process allocated during the reads, and
	// RetainedMiB the growth left once a GC collected it and gave it
	// back.
	AllocatedMiB float64 `json:"allocated_mib"`
	RetainedMiB  float64 `json:"retained_mib"`
	TargetMiB    float64 `json:"target_mib"`
	Met          bool    `json:"met"`
	Errors       int64   `json:"errors"`
	FirstError   string  `json:"first_error,omitempty"`
}

// HistoryReplay is GET /v1/events?since=0, read until 100,000 events, 10 s
// or the newest event recorded before it started (Complete).
type HistoryReplay struct {
	Events       int64   `json:"events"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	// FirstSeconds is the time to the first 1,000 events, 0 if fewer came.
	FirstSeconds float64 `json:"first_1000_seconds"`
	Complete     bool    `json:"complete"`
	RSSMaxMiB    float64 `json:"rss_max_mib"`
}

func newHistoryResult(f historyFill) *HistoryResult {
	return &HistoryResult{
		Events: f.events, FillSeconds: f.elapsed.Seconds(), FillEventsPerSec: per(float64(f.events), f.elapsed.Seconds()),
		FillWorkers: f.workers, FillOwners: f.clients, Cycles: f.cycles, Revoked: f.revoked, Expired: f.expired,
		FirstRevision: f.first, LastRevision: f.last,
	}
}

// reads lists the timed reads in table order.
func (h *HistoryResult) reads() []HistoryRead {
	return []HistoryRead{h.Newest, h.Middle, h.Oldest, h.Lock, h.Owner, h.Type}
}

func printHistory(tw io.Writer, h *HistoryResult) {
	fmt.Fprintf(tw, "\nhistory: %d events filled through the engine in-process (%d workers as %d owners, %d locks) in %.1fs, %.0f events/s; %d revoked, %d expired; revisions %d..%d\n",
		h.Events, h.FillWorkers, h.FillOwners, historyNames, h.FillSeconds, h.FillEventsPerSec, h.Revoked, h.Expired, h.FirstRevision, h.LastRevision)
	fmt.Fprintf(tw, "first page %.1fs after the fill (the trail indexed)\n", h.IndexedSeconds)
	fmt.Fprintln(tw, "GET\ttimed\tp50\tp99\tmax\ttarget p99\t\tlast page\tnext_before\terrors\t")
	for _, r := range h.reads() {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t≤ %s\t%s\t%d\t%d\t%d\t\n", r.Path, r.Latency.Count,
			ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max), ms(r.TargetP99), met(r.Met), r.Events, r.NextBefore, r.Errors)
	}
	s := h.RSS
	fmt.Fprintf(tw, "rss around %d reads of %s: %.0f MiB before, %.0f MiB after, growth %.1f MiB (target ≤ %.0f MiB: %s), %d errors\n",
		s.Reads, s.Path, s.BeforeMiB, s.AfterMiB, s.GrowthMiB, s.TargetMiB, met(s.Met), s.Errors)
	fmt.Fprintf(tw, "  the reads allocated %.0f MiB; after a GC the growth is %.1f MiB\n", s.AllocatedMiB, s.RetainedMiB)
	p := h.Replay
	complete := "stopped before the newest event"
	if p.Complete {
		complete = "through the newest event"
	}
	fmt.Fprintf(tw, "replay /v1/events?since=0: %d events in %.1fs (%.0f/s, %s), first %d in %.3fs, rss max %.0f MiB\n",
		p.Events, p.Seconds, p.EventsPerSec, complete, replayFirst, p.FirstSeconds, p.RSSMaxMiB)
}

func met(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}
