package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/baton-dev/baton/bench/internal/report"
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
	var res report.Results
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
	c := goredis.NewClient(&goredis.Options{Addr: addr})
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
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		failed("does not answer PING", err)
	}
	return addr, cmd.Process.Pid
}
