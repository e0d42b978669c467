// Package testetcd starts real embedded etcd members for tests, in
// t.TempDir() on free loopback ports, stopped by t.Cleanup.
//
//	m := testetcd.Start(t)
//	cli := m.Client()
package testetcd

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/freeport"
)

// Config returns a single-member configuration in a fresh temporary
// directory on free ports.
func Config(t testing.TB) embedetcd.Config {
	t.Helper()
	cfg := embedetcd.NewConfig()
	cfg.Name = "test"
	cfg.Dir = t.TempDir()
	cfg.PeerURL = fmt.Sprintf("http://%s", FreeAddr(t))
	cfg.ClientURL = fmt.Sprintf("http://%s", FreeAddr(t))
	cfg.LogLevel = "error"
	return cfg
}

// Start starts a member with Config(t). A port that FreeAddr found free
// can be taken by another process, or by a connection's local end,
// before etcd listens on it: then Start tries again on new ports.
func Start(t testing.TB) *embedetcd.Member {
	t.Helper()
	for attempt := 1; ; attempt++ {
		m, err := start(Config(t))
		if err == nil {
			t.Cleanup(m.Close)
			return m
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 3 {
			t.Fatalf("start etcd: %v", err)
		}
		t.Logf("start etcd: %v; again on other ports", err)
	}
}

// StartConfig starts a member with cfg and stops it when the test ends.
// A member alone in its cluster, with no raft timing of its own, gets a
// 10 ms heartbeat and a 100 ms election timeout: it has no peer to lose,
// and it then elects itself in milliseconds rather than in up to a
// second, which most tests would spend waiting.
func StartConfig(t testing.TB, cfg embedetcd.Config) *embedetcd.Member {
	t.Helper()
	m, err := start(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// start starts a member with cfg, with StartConfig's raft timing.
func start(cfg embedetcd.Config) (*embedetcd.Member, error) {
	if cfg.InitialCluster == "" && cfg.HeartbeatInterval == 0 && cfg.ElectionTimeout == 0 {
		cfg.HeartbeatInterval, cfg.ElectionTimeout = 10*time.Millisecond, 100*time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return embedetcd.Start(ctx, cfg)
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago (freeport.Addr). Another process may take it before the caller
// listens: Start then tries again, and other callers fail loudly at
// listen time.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	return addr
}
