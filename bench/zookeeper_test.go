package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// needZooKeeper skips the test without Debian's zookeeper package, except
// in CI, which installs it.
func needZooKeeper(t *testing.T) {
	t.Helper()
	if err := zooKeeperInstalled(zooKeeperJar); err != nil {
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
	cfg.ZooKeeperJar = zooKeeperJar
	cfg.JSONPath = filepath.Join(t.TempDir(), "results.json")
	raw := smokeRun(t, cfg, "\nzookeeper ", "forceSync as shipped", "contention of the peers: 4 clients", "zookeeper contention: cpu and node cores are the server's")
	var res Results
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
	for _, h := range []*HoldsResult{res.ZooKeeperSemaphore, res.ZooKeeperRWLock} {
		if h != nil && h.BatonVs <= 0 {
			t.Errorf("baton against %+v: %v", h, h.BatonVs)
		}
	}
	if conn, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("zookeeper still listens on %s after the run", s.Addr)
	}
}

// startTestZooKeeper starts a server for the test and stops it after.
func startTestZooKeeper(t *testing.T) *ZooKeeperServer {
	t.Helper()
	needZooKeeper(t)
	s, err := startZooKeeper(context.Background(), zooKeeperJar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// TestZkMutex_HoldersNeverOverlap has workers, each in its own session,
// take one lock in turns: never two hold it at once, the holds come in
// the order of their sequence numbers, each wait is woken once (only its
// predecessor's release wakes it: no herd), and no node is left behind.
func TestZkMutex_HoldersNeverOverlap(t *testing.T) {
	s := startTestZooKeeper(t)
	const workers, turns = 6, 25
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns, closeAll, err := zkSessions(ctx, s.Addr, workers)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	dir := zkLocksRoot + "/overlap"
	if err := zkEnsure(conns[0], dir); err != nil {
		t.Fatal(err)
	}
	var holders, overlaps atomic.Int32
	var mu sync.Mutex
	var seqs []int64
	var waited int
	err = parallel(ctx, workers, workers*turns, func(ctx context.Context, i int) error {
		m := zkMutex{conn: conns[i%workers], dir: dir}
		h, err := m.lock(ctx)
		if err != nil {
			return err
		}
		if holders.Add(1) != 1 {
			overlaps.Add(1)
		}
		// A round trip to the server inside the critical section leaves
		// an overlap the time to show.
		ok, _, err := m.conn.Exists(h.path)
		if err == nil && !ok {
			err = errors.New("the holder's node is gone")
		}
		mu.Lock()
		seqs = append(seqs, h.seq)
		waited += h.waits
		if h.waits > 1 {
			t.Errorf("hold %d was woken %d times, want at most once", h.seq, h.waits)
		}
		mu.Unlock()
		holders.Add(-1)
		return errors.Join(err, m.unlock(h))
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d holds overlapped another", n)
	}
	if len(seqs) != workers*turns {
		t.Fatalf("%d holds, want %d", len(seqs), workers*turns)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Errorf("hold %d came after hold %d", seqs[i], seqs[i-1])
		}
	}
	t.Logf("%d holds, %d of them after waiting", len(seqs), waited)
	if children, _, err := conns[0].Children(dir); err != nil || len(children) != 0 {
		t.Errorf("children of %s after every unlock: %v (%v)", dir, children, err)
	}
}

// TestZkMutex_AWaiterThatGivesUpLeavesNoNode checks that a contender whose
// context ends deletes its node, so the next contender is not held up
// behind it.
func TestZkMutex_AWaiterThatGivesUpLeavesNoNode(t *testing.T) {
	s := startTestZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns, closeAll, err := zkSessions(ctx, s.Addr, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	dir := zkLocksRoot + "/give-up"
	if err := zkEnsure(conns[0], dir); err != nil {
		t.Fatal(err)
	}
	holder := zkMutex{conn: conns[0], dir: dir}
	h, err := holder.lock(ctx)
	if err != nil || h.waits != 0 {
		t.Fatalf("lock a free lock: %+v, %v", h, err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer wcancel()
	if _, err := (zkMutex{conn: conns[1], dir: dir}).lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock a held lock until the context ends: %v, want %v", err, context.DeadlineExceeded)
	}
	if children, _, err := conns[2].Children(dir); err != nil || len(children) != 1 || dir+"/"+children[0] != h.path {
		t.Errorf("children after the waiter gave up: %v (%v), want only the holder's %s", children, err, h.path)
	}
	if err := holder.unlock(h); err != nil {
		t.Fatal(err)
	}
	next, err := (zkMutex{conn: conns[2], dir: dir}).lock(ctx)
	if err != nil || next.waits != 0 {
		t.Errorf("lock after the only holder left: %+v, %v; want it at once", next, err)
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
	if installed := zooKeeperInstalled(zooKeeperJar) == nil; err != nil || cfg.runs("zookeeper") != installed {
		t.Errorf("parseFlags(): %v, zookeeper runs = %v; want %v, as its package is installed or not", err, cfg.runs("zookeeper"), installed)
	}
}
