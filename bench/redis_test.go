package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/freeport"
)

// TestRun_SmokeRedis runs the redis peer beside the floor against a
// redis-server of its own, for seconds, and checks that its figures are
// there and sane and that every lock it took was released.
func TestRun_SmokeRedis(t *testing.T) {
	addr, pid := startRedis(t)
	cfg := DefaultConfig()
	cfg.Duration = 300 * time.Millisecond
	cfg.Clients = []int{1, 4}
	cfg.Only = []string{"floor", "redis"}
	cfg.Redis = addr
	cfg.JSONPath = filepath.Join(t.TempDir(), "results.json")
	raw := smokeRun(t, cfg, "\nredis ", "appendonly no", "not a like-for-like safety comparison", "redis-server's (pid")
	var res Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if s := res.RedisServer; s == nil || s.Addr != addr || s.Version == "" || s.AOFEnabled || s.PID != pid || s.NoCPU != "" {
		t.Errorf("redis server = %+v, want %s, pid %d, appendonly no", s, addr, pid)
	}
	checkCycles(t, "redis", res.Redis, cfg.Clients, true)
	var serverCPU float64
	for _, c := range res.Redis {
		if c.RaftEntriesPerCycle != 0 || c.Cores.Loadgen <= 0 {
			t.Errorf("redis/%d: raft entries %v, cores %+v", c.Clients, c.RaftEntriesPerCycle, c.Cores)
		}
		serverCPU += c.CPUSecondsPer1k * float64(c.Cycles) / 1000
	}
	// /proc counts in 10ms ticks, so one short row may read 0; the
	// thousands of cycles of both cannot.
	if serverCPU <= 0 {
		t.Errorf("redis-server's CPU time over the rows: %vs", serverCPU)
	}
	// The figure that does not apply is absent, not a 0 to misread.
	var sections struct {
		Redis []map[string]json.RawMessage `json:"redis"`
	}
	if err := json.Unmarshal(raw, &sections); err != nil {
		t.Fatal(err)
	}
	for _, row := range sections.Redis {
		if _, ok := row["raft_entries_per_cycle"]; ok {
			t.Errorf("redis row has raft_entries_per_cycle: %s", row["raft_entries_per_cycle"])
		}
	}

	// Each cycle deleted its key through the compare-and-delete, and
	// nothing else deletes them.
	c := newRedisClient(addr, "")
	defer c.Close()
	if n, err := c.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Errorf("redis holds %d keys after the run (%v), want every lock released", n, err)
	}
}

// startRedis starts a redis-server of its own on a free loopback port,
// writing nothing to disk, and returns its address and pid. Without the
// binary the test is skipped, except in CI, which installs it.
func startRedis(t *testing.T) (addr string, pid int) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed, and CI (.ci/run) should have: %v", err)
		}
		t.Skip("redis-server is not installed (apt-get install redis-server)")
	}
	dir := t.TempDir()
	if addr, err = freeport.Addr(); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	logPath := filepath.Join(dir, "redis.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	failed := func(why string, err error) {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("redis-server %s: %v\n%s", why, err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			failed("never listened", err)
		}
		select {
		case <-exited:
			failed("exited", exitErr)
		case <-time.After(10 * time.Millisecond): // the pace of the polls
		}
	}
	c := newRedisClient(addr, "")
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		failed("does not answer PING", err)
	}
	return addr, cmd.Process.Pid
}

func TestListensHere_FindsTheListeningProcess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := listensHere(os.Getpid(), l.Addr().String()); err != nil {
		t.Errorf("this process listens on %s: %v", l.Addr(), err)
	}
	// The parent process (go test's, or a shell) does not listen there.
	if err := listensHere(os.Getppid(), l.Addr().String()); err == nil {
		t.Errorf("process %d does not listen on %s, but listensHere says it does", os.Getppid(), l.Addr())
	}
	closed, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	if err := listensHere(os.Getpid(), closed); err == nil {
		t.Errorf("nothing listens on %s, but listensHere says this process does", closed)
	}
}

func TestStatCPU_CountsFromTheLastParenthesis(t *testing.T) {
	// A command name with a space and a ')' in it; utime 250 and stime 50
	// ticks are fields 14 and 15.
	stat := []byte("4242 (redis) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 5 0 100 1000000 500 18446744073709551615\n")
	got, err := statCPU(stat)
	if err != nil || got != 3*time.Second {
		t.Errorf("statCPU = %v, %v; want 3s", got, err)
	}
	if _, err := statCPU([]byte("4242 (redis")); err == nil {
		t.Error("statCPU accepted a truncated line")
	}
}

func TestRedisServer_CaveatSaysWhatWasMeasured(t *testing.T) {
	for _, tc := range []struct {
		s    RedisServer
		want []string
	}{
		{RedisServer{Version: "7.0.15", AppendFsync: "everysec"}, []string{"7.0.15 (appendonly no, 0 replicas)", "before any disk has it", "not a like-for-like"}},
		{RedisServer{Version: "7.2.4", AOFEnabled: true, AppendFsync: "everysec", Replicas: 2}, []string{"(appendonly yes, appendfsync everysec, 2 replicas)", "before any disk has it"}},
		{RedisServer{Version: "7.2.4", AOFEnabled: true, AppendFsync: "always"}, []string{"appendfsync always", "fsyncs each write before answering", "still not a like-for-like"}},
		// CONFIG GET refused: the fsync policy is unknown, so no claim that it syncs.
		{RedisServer{Version: "7.2.4", AOFEnabled: true}, []string{"(appendonly yes, appendfsync unknown: CONFIG GET refused, 0 replicas)", "before any disk has it unless appendfsync is always"}},
	} {
		got := tc.s.caveat()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("caveat of %+v = %q, want it to say %q", tc.s, got, w)
			}
		}
	}
}
