package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/bench/internal/peer/zookeeper"
	"github.com/baton-dev/baton/bench/internal/report"
)

// needZooKeeper skips the test without Debian's zookeeper package, except
// in CI, which installs it.
func needZooKeeper(t *testing.T) {
	t.Helper()
	if err := zookeeper.Installed(zookeeper.Jar); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI (.ci/run) should have installed zookeeper: %v", err)
		}
		t.Skip(err)
	}
}

// TestRun_SmokeZooKeeper runs the zookeeper peer beside baton for
// seconds, on the server the harness starts, and checks that its figures
// are there and sane, that baton is held against them, and that the
// server is stopped after the run.
func TestRun_SmokeZooKeeper(t *testing.T) {
	needZooKeeper(t)
	cfg := DefaultConfig()
	cfg.Duration = 300 * time.Millisecond
	cfg.Clients = []int{1, 4}
	cfg.ContentionClients = 4
	cfg.Only = []string{"floor", "session", "zookeeper", "contention", "semaphore", "rwlock"}
	cfg.ZooKeeperJar = zookeeper.Jar
	cfg.JSONPath = filepath.Join(t.TempDir(), "results.json")
	raw := smokeRun(t, cfg, "\nzookeeper ", "forceSync as shipped", "contention of the peers: 4 clients", "zookeeper contention: cpu and node cores are the server's")
	var res report.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	s := res.ZooKeeperServer
	if s == nil || s.PID == 0 || !strings.HasPrefix(s.Version, "3.") {
		t.Fatalf("zookeeper server = %+v", s)
	}
	checkCycles(t, "zookeeper", res.ZooKeeper, cfg.Clients, true)
	var serverCPU float64
	for _, c := range res.ZooKeeper {
		if c.RaftEntriesPerCycle != 0 || c.Cores.Loadgen <= 0 {
			t.Errorf("zookeeper/%d: raft entries %v, cores %+v", c.Clients, c.RaftEntriesPerCycle, c.Cores)
		}
		serverCPU += c.CPUSecondsPer1k * float64(c.Cycles) / 1000
		if v := c.BatonVs; v == nil || v.CyclesPerSec <= 0 || v.P50 <= 0 {
			t.Errorf("zookeeper/%d: baton's session against it %+v", c.Clients, v)
		}
	}
	// /proc counts in 10ms ticks: one short row may read 0, not both.
	if serverCPU <= 0 {
		t.Errorf("the server's CPU time over the rows: %vs", serverCPU)
	}
	c := res.ZooKeeperContention
	if c == nil {
		t.Fatal("no zookeeper contention")
	}
	// Every client has at least two turns; every grant but the first
	// is a handoff.
	if c.Errors != 0 || c.Grants < 2*int64(c.Clients) || c.HandoffsPerSec <= 0 || c.Handoff.Count != c.Grants-1 || c.Fairness.Judged == 0 || c.BatonVs <= 0 {
		t.Errorf("zookeeper contention: %+v", c)
	}
	checkHolds(t, "zookeeper semaphore", res.ZooKeeperSemaphore, cfg.ContentionClients, false)
	checkHolds(t, "zookeeper rwlock", res.ZooKeeperRWLock, cfg.ContentionClients, false)
	for _, h := range []*report.HoldsResult{res.ZooKeeperSemaphore, res.ZooKeeperRWLock} {
		if h != nil && h.BatonVs <= 0 {
			t.Errorf("baton against %+v: %v", h, h.BatonVs)
		}
	}
	if conn, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("zookeeper still listens on %s after the run", s.Addr)
	}
}

// TestParseFlags_ZooKeeperRunsWhenInstalled checks that the peer runs by
// default where its jar is, is skipped where it is not, and that -only
// zookeeper without it fails and says what to install.
func TestParseFlags_ZooKeeperRunsWhenInstalled(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "zookeeper.jar")
	if _, err := parseFlags([]string{"-only", "zookeeper", "-zookeeper-jar", missing}); err == nil || !strings.Contains(err.Error(), "apt-get install zookeeper") {
		t.Errorf("-only zookeeper without its jar: %v, want an error that says to install it", err)
	}
	if _, err := parseFlags([]string{"-only", "zookeeper", "-zookeeper-jar", ""}); err == nil || !strings.Contains(err.Error(), "-zookeeper-jar") {
		t.Errorf("-only zookeeper with no jar: %v, want an error that names -zookeeper-jar", err)
	}
	for _, args := range [][]string{{"-zookeeper-jar", missing}, {"-zookeeper-jar", ""}} {
		cfg, err := parseFlags(args)
		if err != nil || cfg.runs("zookeeper") {
			t.Errorf("parseFlags(%q): %v, zookeeper runs = %v; want it skipped", args, err, cfg.runs("zookeeper"))
		}
	}
	cfg, err := parseFlags(nil)
	if installed := zookeeper.Installed(zookeeper.Jar) == nil; err != nil || cfg.runs("zookeeper") != installed {
		t.Errorf("parseFlags(): %v, zookeeper runs = %v; want %v, as its package is installed or not", err, cfg.runs("zookeeper"), installed)
	}
}
