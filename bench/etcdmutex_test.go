package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/testetcd"
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
	var res Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []cycleSection{{"etcd-mutex", res.EtcdMutex}, {"httpfloor", res.HTTPFloor}} {
		checkCycles(t, sc.name, sc.results, cfg.Clients, false)
		for _, c := range sc.results {
			name := sc.name + "/" + strings.Repeat("c", c.Clients)
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
	for _, p := range []peerContentionResult{{"etcd-mutex", res.EtcdMutexContention}, {"httpfloor", res.HTTPFloorContention}} {
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

// TestContendMutex_NeverTwoHolders runs the etcd-mutex contention loop
// against a member of its own over gRPC and checks, from each hold's times
// on the loop's one clock, that no hold began before the one granted
// before it was released, and that tokens grow with every grant.
func TestContendMutex_NeverTwoHolders(t *testing.T) {
	cfg := testetcd.Config(t)
	testetcd.StartConfig(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sessions, closeAll, err := mutexClients(ctx, cfg.ClientURL, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	holds, errs, _ := contendMutex(ctx, sessions, etcdMutexPrefix+"test-one", 500*time.Millisecond)
	if n := errs.n.Load(); n != 0 {
		t.Fatalf("%d errors, the first: %s", n, errs.first)
	}
	// Each of the 4 workers has at least two turns.
	if len(holds) < 8 {
		t.Fatalf("%d holds, want at least 8", len(holds))
	}
	if err := checkExclusive(holds); err != nil {
		t.Error(err)
	}
	if err := closeAll(); err != nil {
		t.Errorf("close sessions: %v", err)
	}
}

func TestCheckExclusive_CatchesOverlapsAndMisorderedTokens(t *testing.T) {
	hold := func(granted, releasing time.Duration, token int64) mutexHold {
		return mutexHold{grant: grant{granted: granted, released: releasing + 1, token: token}, releasing: releasing}
	}
	for _, tc := range []struct {
		name  string
		holds []mutexHold
		want  string // in the error; "" for none
	}{
		{"one after another", []mutexHold{hold(5, 6, 12), hold(0, 2, 10), hold(3, 4, 11)}, ""},
		// The third overlaps only the first, not the one granted just
		// before it: both count.
		{"overlap", []mutexHold{hold(0, 10, 10), hold(2, 3, 11), hold(5, 6, 12)}, "2 were granted while an earlier one was held"},
		{"token goes back", []mutexHold{hold(0, 1, 10), hold(2, 3, 9)}, "1 had a token no greater"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkExclusive(tc.holds)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("checkExclusive: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkExclusive: %v, want %q", err, tc.want)
			}
		})
	}
}
