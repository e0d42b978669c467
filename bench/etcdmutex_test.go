package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/bench/internal/report"
)

// TestRun_SmokeEtcdMutexAndHTTPFloor runs both peers beside baton's session
// mode and contention, each under contention too, and the floor batched,
// for seconds, and checks
// that their figures are there and sane and that baton is held against
// them.
func TestRun_SmokeEtcdMutexAndHTTPFloor(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Duration = 300 * time.Millisecond
	cfg.Clients = []int{1, 4}
	cfg.ContentionClients = 4
	cfg.Only = []string{"session", "etcd-mutex", "httpfloor", "httpfloor-batched", "contention"}
	cfg.JSONPath = filepath.Join(t.TempDir(), "results.json")
	raw := smokeRun(t, cfg, "\netcd-mutex ", "\nhttpfloor ", "\nhttpfloor-batched ", "against the peers", "contention of the peers")
	var res report.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []report.CycleSection{{Name: "etcd-mutex", Results: res.EtcdMutex}, {Name: "httpfloor", Results: res.HTTPFloor}} {
		checkCycles(t, sc.Name, sc.Results, cfg.Clients, false)
		for _, c := range sc.Results {
			name := sc.Name + "/" + strings.Repeat("c", c.Clients)
			// One raft entry per txn, shared with no other cycle's: at
			// least the acquire's and the release's.
			if c.CPUSecondsPer1k <= 0 || c.RaftEntriesPerCycle < 2 || c.Cores.Node <= 0 || c.Cores.Loadgen <= 0 {
				t.Errorf("%s: cpu s/1k %v, raft entries/cycle %v, cores %+v", name, c.CPUSecondsPer1k, c.RaftEntriesPerCycle, c.Cores)
			}
			if v := c.BatonVs; v == nil || v.CyclesPerSec <= 0 || v.P50 <= 0 || v.P99 <= 0 || v.CPUSecondsPer1k <= 0 {
				t.Errorf("%s: baton's session against it %+v", name, v)
			}
		}
	}
	checkCycles(t, "httpfloor-batched", res.HTTPFloorBatched, cfg.Clients, false)
	for _, c := range res.HTTPFloorBatched {
		if c.CPUSecondsPer1k <= 0 || c.RaftEntriesPerCycle <= 0 || c.BatonVs == nil {
			t.Errorf("httpfloor-batched/%d: cpu s/1k %v, raft entries/cycle %v, baton against it %+v", c.Clients, c.CPUSecondsPer1k, c.RaftEntriesPerCycle, c.BatonVs)
		}
	}
	for _, p := range []struct {
		name   string
		result *report.ContentionResult
	}{{"etcd-mutex", res.EtcdMutexContention}, {"httpfloor", res.HTTPFloorContention}} {
		c := p.result
		if c == nil {
			t.Fatalf("no %s contention", p.name)
		}
		if c.Clients != cfg.ContentionClients || c.Errors != 0 || c.Grants < 2 || c.HandoffsPerSec <= 0 || c.RaftEntriesPerGrant <= 0 || c.KeyWritesPerGrant <= 0 || c.Cores.Node <= 0 || c.Cores.Loadgen <= 0 || c.BatonVs <= 0 {
			t.Errorf("%s contention: %+v", p.name, c)
		}
		if h := c.Handoff; h.Count != c.Grants-1 || h.P99 < h.P50 || h.Max == 0 {
			t.Errorf("%s handoffs: %+v, want %d", p.name, h, c.Grants-1)
		}
		if f := c.Fairness; f.Judged <= 0 || f.InOrder <= 0 || f.InOrder > 1 {
			t.Errorf("%s fairness: %+v", p.name, f)
		}
	}
}
