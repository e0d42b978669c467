package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/report"
)

// TestMain lets the test binary be the load generator too: run re-executes
// os.Executable(), which in a test is this binary.
func TestMain(m *testing.M) {
	if os.Getenv(load.Env) != "" {
		os.Exit(load.Main(os.Stdin, os.Stdout, generate))
	}
	os.Exit(m.Run())
}

// smokeRun runs the harness with cfg, checks that its table mentions each
// of mentions, and returns the JSON it wrote.
func smokeRun(t *testing.T, cfg Config, mentions ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var table bytes.Buffer
	if err := run(ctx, cfg, &table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", &table)
	for _, s := range mentions {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table does not mention %q", s)
		}
	}
	raw, err := os.ReadFile(cfg.JSONPath)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestRun_SmokeEveryScenario runs the whole harness for seconds, so it
// never rots. It checks that every figure is there and sane, never how
// fast anything was: speed is measured, not asserted.
func TestRun_SmokeEveryScenario(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Duration = 300 * time.Millisecond
	cfg.Clients = []int{1, 4}
	cfg.ContentionClients = 4
	cfg.ScaleSessions, cfg.ScaleLocks = 5, 10
	cfg.ScaleDuration, cfg.ScaleRenew = 2*time.Second, 500*time.Millisecond
	cfg.FailoverKills = 2
	cfg.JSONPath = filepath.Join(t.TempDir(), "results.json")
	cfg.CPUProfile = filepath.Join(t.TempDir(), "cpu.out")
	cfg.MemProfile = filepath.Join(t.TempDir(), "mem.out")
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	raw := smokeRun(t, cfg, "floor", "lease", "session", "contention", "election", "semaphore: 4 clients, limit 4", "rwlock: 4 clients", "lockset: 4 clients", "one by one", "keys:", "watch:", "failover:", "scale", cfg.JSONPath)
	for _, p := range []string{cfg.CPUProfile, cfg.MemProfile} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s not written: %v", p, err)
		}
	}

	var sections map[string]json.RawMessage
	if err := json.Unmarshal(raw, &sections); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"machine", "settings", "started", "floor", "lease", "session", "etcd_gateway", "contention", "election", "etcd_election", "semaphore", "rwlock", "lockset", "kv", "failover", "scale"} {
		if len(sections[s]) == 0 {
			t.Errorf("JSON has no %q section", s)
		}
	}
	var res report.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Machine.CPUs < 1 || res.Machine.GoVersion == "" {
		t.Errorf("machine = %+v", res.Machine)
	}

	if len(res.Redis) > 0 || res.RedisServer != nil || len(sections["redis"]) > 0 || len(sections["redis_server"]) > 0 {
		t.Errorf("without -redis, the redis peer ran: %+v %+v", res.Redis, res.RedisServer)
	}
	for _, sc := range res.CycleSections() {
		if sc.Name == "redis" {
			continue // TestRun_SmokeRedis
		}
		checkCycles(t, sc.Name, sc.Results, cfg.Clients, sc.Name != "floor")
		for _, c := range sc.Results {
			name := sc.Name + "/" + strings.Repeat("c", c.Clients)
			// Every cycle commits at least its acquire and its release;
			// baton's may share raft entries with other cycles' (an etcd
			// txn carries fewer than 128 of its acquires and releases,
			// internal/txnbatch), the floor's and etcd's own may not.
			minRaft := 2.0
			if sc.Name == "lease" || sc.Name == "session" || sc.Name == "httpfloor-batched" {
				minRaft = 2.0 / 128
			}
			if c.CPUSecondsPer1k <= 0 || c.RaftEntriesPerCycle < minRaft {
				t.Errorf("%s: cpu s/1k %v, raft entries/cycle %v", name, c.CPUSecondsPer1k, c.RaftEntriesPerCycle)
			}
			// And etcd applies at least the put of its key and the
			// delete; ZooKeeper has no etcd writes.
			if w := c.KeyWritesPerCycle; (sc.Name == "zookeeper") != (w == 0) || (w != 0 && w < 2) {
				t.Errorf("%s: etcd writes/cycle %v", name, w)
			}
			// Only the HTTP scenarios have a load generator process.
			if c.Cores.Node <= 0 || (c.Cores.Loadgen > 0) != (sc.Name != "floor") {
				t.Errorf("%s: cores %+v", name, c.Cores)
			}
			if v := c.VsFloor; v != nil && v.CPUSecondsPer1k <= 0 {
				t.Errorf("%s: ratios to the floor %+v", name, v)
			}
		}
	}

	checkHandoffs(t, "contention", res.Contention, cfg.ContentionClients)
	checkHandoffs(t, "election", res.Election, cfg.ContentionClients)
	checkHandoffs(t, "etcd-election", res.EtcdElection, cfg.ContentionClients)
	if v := res.EtcdElection.BatonVs; v <= 0 {
		t.Errorf("election: baton against etcd-election %v", v)
	}
	checkHolds(t, "semaphore", res.Semaphore, cfg.ContentionClients, true)
	checkHolds(t, "rwlock", res.RWLock, cfg.ContentionClients, true)
	checkLockSets(t, res.LockSets, cfg.ContentionClients)
	checkKV(t, res.KV, cfg.Clients)

	s := res.Scale
	if s.Sessions != cfg.ScaleSessions || s.LocksPerSession != cfg.ScaleLocks || s.Errors != 0 {
		t.Errorf("scale: %+v", s)
	}
	if want := int64(cfg.ScaleSessions * cfg.ScaleLocks); s.LocksHeld != want {
		t.Errorf("scale: etcd holds %d locks, want %d", s.LocksHeld, want)
	}
	if s.SetupSeconds <= 0 || s.Seconds <= 0 || s.RSSBeforeMiB <= 0 || s.RSSMaxMiB <= 0 || s.Cores.Node <= 0 || s.Cores.Loadgen <= 0 {
		t.Errorf("scale: %+v", s)
	}
	checkLatency(t, "scale renew", s.Renew, -1)
	checkLatency(t, "scale probe", s.Probe, -1)
}

// TestRun_SmokeTrail runs a scenario beside a small trail made first,
// compacted or not, and checks that the trail is what was asked for and
// is said so.
func TestRun_SmokeTrail(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keeps history %v", keep), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Only = []string{"session"}
			cfg.Duration, cfg.Clients = 300*time.Millisecond, []int{2}
			cfg.TrailEvents, cfg.TrailKeepsHistory = 1000, keep
			cfg.JSONPath = filepath.Join(t.TempDir(), "results.json")
			said := "then compacted"
			if keep {
				said = "not compacted"
			}
			raw := smokeRun(t, cfg, "beside a trail of 1000 audit events", said)
			var res report.Results
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			tr := res.Trail
			if tr == nil || tr.Events != int64(cfg.TrailEvents) || tr.FillSeconds <= 0 || tr.Keys <= 0 || (tr.CompactedAt > 0) == keep ||
				res.Settings.TrailEvents != cfg.TrailEvents || res.Settings.TrailKeepsHistory != keep {
				t.Fatalf("trail %+v, settings %+v; want %d events, filled and counted, compacted unless kept", tr, res.Settings, cfg.TrailEvents)
			}
			if len(res.Session) != 1 || res.Session[0].Cycles == 0 || res.Session[0].Errors != 0 {
				t.Errorf("session beside the trail: %+v", res.Session)
			}
		})
	}
}

// TestRun_SmokeHistory fills a small audit trail and reads it as the
// history scenario does at a million events; it checks that every figure
// is there and sane, and that the replay counts the very events the fill
// says it made.
func TestRun_SmokeHistory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Only = []string{"history"}
	cfg.HistoryEvents, cfg.HistoryRequests = 2000, 20
	cfg.JSONPath = filepath.Join(t.TempDir(), "results.json")
	raw := smokeRun(t, cfg, "history", "/v1/history?limit=100&owner=nobody", "replay", "target")
	var res report.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	h := res.History
	if h == nil || len(res.Floor)+len(res.Session) > 0 || res.Scale != nil {
		t.Fatalf("-only history ran %+v", res)
	}
	cycles := int64(cfg.HistoryEvents-2*historyExpiries) / 2
	if h.Events != int64(cfg.HistoryEvents) || h.Cycles != cycles || h.Revoked != cycles/revokeEvery || h.Revoked == 0 || h.Expired != historyExpiries {
		t.Errorf("fill: %d events, %d cycles, %d revoked, %d expired; want %d, %d, %d (> 0), %d",
			h.Events, h.Cycles, h.Revoked, h.Expired, cfg.HistoryEvents, cycles, cycles/revokeEvery, historyExpiries)
	}
	if h.FillSeconds <= 0 || h.FillEventsPerSec <= 0 || h.FirstRevision <= 0 || h.LastRevision <= h.FirstRevision {
		t.Errorf("fill: %+v", h)
	}
	for _, r := range h.Reads() {
		checkLatency(t, r.Path, r.Latency, int64(cfg.HistoryRequests))
		if r.Errors != 0 || r.Events > historyPage+historyWorkers || r.TargetP99 <= 0 {
			t.Errorf("%s: %+v", r.Path, r)
		}
	}
	for _, r := range []report.HistoryRead{h.Newest, h.Middle, h.Oldest} {
		if r.Events == 0 {
			t.Errorf("%s: an empty page of a trail of %d events", r.Path, h.Events)
		}
	}
	if h.Owner.Events != 0 || h.Type.Events != int(h.Revoked) {
		t.Errorf("owner=nobody found %d events, type=revoked %d; want 0 and %d", h.Owner.Events, h.Type.Events, h.Revoked)
	}
	if s := h.RSS; s.Reads != historyRSSReads || s.Errors != 0 || s.BeforeMiB <= 0 || s.AfterMiB <= 0 || s.TargetMiB <= 0 {
		t.Errorf("rss: %+v", s)
	}
	// The trail holds the fill's events and nothing else.
	if p := h.Replay; !p.Complete || p.Events != h.Events || p.FirstSeconds <= 0 || p.Seconds < p.FirstSeconds || p.RSSMaxMiB <= 0 {
		t.Errorf("replay: %+v, want all %d events", p, h.Events)
	}
	if res.Settings.HistoryEvents != cfg.HistoryEvents || res.Settings.HistoryRequests != cfg.HistoryRequests {
		t.Errorf("settings: %+v", res.Settings)
	}
}

// checkCycles checks what every cycle scenario reports, whatever it ran
// on: one result per client count, whole cycles without errors, sane
// latencies, and ratios to the floor (when vsFloor) of cycles/s, p50 and
// p99.
func checkCycles(t *testing.T, scenario string, results []report.CycleResult, clients []int, vsFloor bool) {
	t.Helper()
	if len(results) != len(clients) {
		t.Fatalf("%s: %d results, want one per client count %v", scenario, len(results), clients)
	}
	for i, c := range results {
		name := scenario + "/" + strings.Repeat("c", c.Clients)
		if c.Clients != clients[i] || c.Errors != 0 || c.Cycles <= 0 || c.Seconds <= 0 || c.CyclesPerSec <= 0 {
			t.Errorf("%s: %+v", name, c)
		}
		checkLatency(t, name, c.Latency, c.Cycles)
		if c.Cores.Other < 0 {
			t.Errorf("%s: cores %+v", name, c.Cores)
		}
		switch v := c.VsFloor; {
		case !vsFloor && v != nil:
			t.Errorf("%s: ratios to the floor %+v, want none", name, v)
		case vsFloor && (v == nil || v.CyclesPerSec <= 0 || v.P50 <= 0 || v.P99 <= 0):
			t.Errorf("%s: ratios to the floor %+v", name, v)
		}
	}
}

// checkLatency wants count values (any positive count for -1) with
// 0 < p50 ≤ p99 ≤ max.
func checkLatency(t *testing.T, name string, l measure.Latency, count int64) {
	t.Helper()
	if count == -1 && l.Count <= 0 || count != -1 && l.Count != count {
		t.Errorf("%s: %d latencies, want %d", name, l.Count, count)
	}
	if l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
		t.Errorf("%s: want 0 < p50 ≤ p99 ≤ max, got %+v", name, l)
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-clients", "2, 8", "-only", "floor,scale", "-scale-duration", "1m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clients) != 2 || cfg.Clients[0] != 2 || cfg.Clients[1] != 8 || !cfg.runs("scale") || cfg.runs("lease") || cfg.ScaleDuration != time.Minute {
		t.Errorf("parsed %+v", cfg)
	}
	for _, bad := range [][]string{{"-only", "floor,gossip"}, {"-clients", "0"}, {"-clients", "x"}, {"-scale-renew", "20s"}, {"-redis", "nohost"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestParseFlags_HistoryRunsOnlyWhenNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false}, // every scenario but history
		{[]string{"-only", "floor"}, false},
		{[]string{"-only", "history", "-history-events", "5000"}, true},
	} {
		cfg, err := parseFlags(tc.args)
		if err != nil {
			t.Errorf("parseFlags(%q): %v", tc.args, err)
			continue
		}
		if got := cfg.runs("history"); got != tc.want {
			t.Errorf("parseFlags(%q): runs history = %v, want %v", tc.args, got, tc.want)
		}
	}
	if _, err := parseFlags([]string{"-only", "history", "-history-events", "1"}); err == nil {
		t.Error("-history-events 1 accepted")
	}
	for _, bad := range []string{"-1", "17"} {
		if _, err := parseFlags([]string{"-trail-events", bad}); err == nil {
			t.Errorf("-trail-events %s accepted", bad)
		}
	}
}

func TestParseFlags_RedisRunsOnlyWithAnAddress(t *testing.T) {
	_, err := parseFlags([]string{"-only", "floor,redis"})
	if err == nil || !strings.Contains(err.Error(), "-redis") {
		t.Errorf("-only redis without -redis: error %v, want one naming -redis", err)
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false}, // every scenario, but no server
		{[]string{"-redis", "127.0.0.1:6379"}, true}, // every scenario
		{[]string{"-redis", "[::1]:6379", "-only", "redis,floor"}, true},
		{[]string{"-redis", "localhost:6379", "-only", "floor"}, false},
	} {
		cfg, err := parseFlags(tc.args)
		if err != nil {
			t.Errorf("parseFlags(%q): %v", tc.args, err)
			continue
		}
		if got := cfg.runs("redis"); got != tc.want {
			t.Errorf("parseFlags(%q): runs redis = %v, want %v", tc.args, got, tc.want)
		}
		if cfg.runs("floor") != (len(cfg.Only) == 0 || slices.Contains(cfg.Only, "floor")) {
			t.Errorf("parseFlags(%q): floor runs = %v", tc.args, cfg.runs("floor"))
		}
	}
}

// checkHandoffs checks the figures of a contention-like scenario: grants,
// handoffs, fairness and costs are there and consistent.
func checkHandoffs(t *testing.T, name string, c *report.ContentionResult, clients int) {
	t.Helper()
	if c == nil {
		t.Errorf("%s: no result", name)
		return
	}
	if c.Clients != clients || c.Errors != 0 || c.Grants < 2 || c.HandoffsPerSec <= 0 || c.CPUSecondsPer1k <= 0 || c.RaftEntriesPerGrant <= 0 || c.KeyWritesPerGrant <= 0 || c.Cores.Node <= 0 || c.Cores.Loadgen <= 0 {
		t.Errorf("%s: %+v", name, c)
	}
	// An early handoff counts as 0, so the median may be 0 too.
	if h := c.Handoff; h.Count != c.Grants-1 || h.P50 < 0 || h.P99 < h.P50 || h.Max < h.P99 || h.Max == 0 || c.HandoffsEarly > h.Count {
		t.Errorf("%s handoffs: %+v, %d early, want %d of them, 0 ≤ p50 ≤ p99 ≤ max", name, h, c.HandoffsEarly, c.Grants-1)
	}
	if f := c.Fairness; f.Judged <= 0 || int64(f.Judged) > c.Grants || f.InOrder <= 0 || f.InOrder > 1 || f.MaxOvertaken < 0 || f.MaxOvertaken >= f.Judged {
		t.Errorf("%s fairness: %+v", name, f)
	}
}

// checkHolds checks the figures of a semaphore or rwlock run: every
// worker's two turns at least, waits in every mode, no more held at once
// than the primitive allows (the run itself fails otherwise), and costs;
// raft only for baton.
func checkHolds(t *testing.T, name string, h *report.HoldsResult, clients int, raft bool) {
	t.Helper()
	if h == nil {
		t.Errorf("%s: no result", name)
		return
	}
	if h.Clients != clients || h.Errors != 0 || h.Holds < 2*int64(clients) || h.HoldsPerSec <= 0 || h.Seconds <= 0 || h.Cores.Loadgen <= 0 || (h.RaftEntriesPerHold > 0) != raft {
		t.Errorf("%s: %+v", name, h)
	}
	checkLatency(t, name+" wait", h.Wait, h.Holds)
	modes := []string{"permit"}
	if h.Limit == 0 {
		modes = []string{"read", "write"}
	}
	if len(h.Modes) != len(modes) {
		t.Fatalf("%s: modes %+v, want %v", name, h.Modes, modes)
	}
	var holds int64
	for i, m := range h.Modes {
		if m.Mode != modes[i] || m.HoldsPerSec <= 0 {
			t.Errorf("%s %s: %+v", name, modes[i], m)
		}
		// A write may come out at once: its p50 may be 0.
		if m.Wait.Count != m.Holds || m.Wait.P99 < m.Wait.P50 || m.Wait.Max < m.Wait.P99 {
			t.Errorf("%s %s wait: %+v", name, m.Mode, m.Wait)
		}
		holds += m.Holds
	}
	if holds != h.Holds {
		t.Errorf("%s: %d holds over the modes, %d in all", name, holds, h.Holds)
	}
	if h.MostHeld < 1 || (h.Limit > 0 && h.MostHeld > int64(h.Limit)) {
		t.Errorf("%s: %d held at once", name, h.MostHeld)
	}
	if f := h.Fairness; f.Judged <= 0 || int64(f.Judged) > h.Holds || f.InOrder <= 0 || f.InOrder > 1 {
		t.Errorf("%s fairness: %+v", name, f)
	}
}

// checkLockSets checks the figures of both ways of the lockset scenario:
// sets granted without errors, every name of each found held by its
// worker alone (the run fails outright on a name held twice), an acquire
// latency per set, and costs.
func checkLockSets(t *testing.T, r *report.LockSetsResult, clients int) {
	t.Helper()
	if r == nil {
		t.Error("lockset: no result")
		return
	}
	if r.Clients != clients || r.Names != lockSetNames || r.SetSize != lockSetSize || r.SetsVsOneByOne <= 0 {
		t.Errorf("lockset: %+v", r)
	}
	for _, w := range []struct {
		name string
		run  report.LockSetRun
	}{{"lockset", r.Sets}, {"lockset one by one", r.OneByOne}} {
		c := w.run
		if c.Sets <= 0 || c.Errors != 0 || c.Seconds <= 0 || c.SetsPerSec <= 0 || c.CPUSecondsPer1k <= 0 || c.RaftEntriesPerSet <= 0 || c.Cores.Node <= 0 || c.Cores.Loadgen <= 0 {
			t.Errorf("%s: %+v", w.name, c)
		}
		if c.Checked != lockSetSize*c.Sets {
			t.Errorf("%s: %d names checked exclusive, want %d for %d sets", w.name, c.Checked, lockSetSize*c.Sets, c.Sets)
		}
		checkLatency(t, w.name+" acquire", c.Acquire, c.Sets)
		checkLatency(t, w.name+" cycle", c.Cycle, c.Sets)
	}
}

// TestOccupancy_SeesBreaches checks that the counter both ways of the
// lockset scenario run with fails a run in which a name was held by two
// workers at once, and only then.
func TestOccupancy_SeesBreaches(t *testing.T) {
	o := newOccupancy(4)
	// Two sets that share no name, one after the other on a name.
	for _, set := range [][]int{{0, 1}, {2, 3}, {1, 2}} {
		for _, n := range set {
			o.enter(n)
		}
		for _, n := range set {
			o.leave(n)
		}
	}
	o.enter(0)
	o.enter(3)
	if err := o.err(); err != nil || o.checked.Load() != 8 {
		t.Fatalf("disjoint holds: %v, %d checked, want none and 8", err, o.checked.Load())
	}
	o.enter(3) // a second holder of name 3
	if err := o.err(); err == nil || !strings.Contains(err.Error(), "name 3 held by 2 workers") {
		t.Errorf("two holders of name 3: error %v", err)
	}
	if o.checked.Load() != 8 {
		t.Errorf("%d checked, want the breach left out", o.checked.Load())
	}
}

// TestNamePairs_DistinctSeededAndSpread checks that a worker draws two
// distinct names every turn, the same turns in every run, over every
// name.
func TestNamePairs_DistinctSeededAndSpread(t *testing.T) {
	a, b := namePairs(5), namePairs(5)
	seen := make(map[int]bool)
	for range 10000 {
		i, j := a()
		if k, l := b(); i != k || j != l {
			t.Fatal("two draws of worker 5 differ")
		}
		if i == j || i < 0 || j < 0 || i >= lockSetNames || j >= lockSetNames {
			t.Fatalf("drew %d and %d of %d names", i, j, lockSetNames)
		}
		seen[i], seen[j] = true, true
	}
	if len(seen) != lockSetNames {
		t.Errorf("10000 draws took %d of the %d names", len(seen), lockSetNames)
	}
}

// checkKV checks the keys scenario: a row of puts and of gets for baton
// and etcd at each client count, each with ops and no error, the peers'
// compared with baton's, and a watch latency of each.
func checkKV(t *testing.T, k *report.KVResult, clients []int) {
	t.Helper()
	if k == nil || k.ValueBytes <= 0 {
		t.Fatalf("kv: %+v", k)
	}
	for _, sys := range []string{"baton", "etcd"} {
		for _, op := range []string{"put", "get"} {
			for _, c := range clients {
				found := false
				for _, r := range k.Rows {
					if r.System != sys || r.Op != op || r.Clients != c {
						continue
					}
					found = true
					if r.Ops <= 0 || r.Errors != 0 || r.OpsPerSec <= 0 || (sys != "baton") != (r.BatonVs > 0) {
						t.Errorf("kv %s %s %d: %+v", sys, op, c, r)
					}
					checkLatency(t, "kv "+sys+" "+op, r.Latency, -1)
				}
				if !found {
					t.Errorf("kv: no row of %s %s at %d clients", sys, op, c)
				}
			}
		}
	}
	if len(k.Watch) < 2 {
		t.Fatalf("kv watch: %+v", k.Watch)
	}
	for _, w := range k.Watch {
		if w.Latency.Count != kvWatches || w.Latency.P50 <= 0 {
			t.Errorf("kv watch %s: %+v", w.System, w.Latency)
		}
	}
}
