// Package testetcd starts real embedded etcd members for tests, in
// t.TempDir() on free loopback ports, stopped by t.Cleanup.
//
//	m := testetcd.Start(t)
//	cli := m.Client()
package testetcd

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/baton-dev/baton/embedetcd"
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

// Start starts a member with Config(t).
func Start(t testing.TB) *embedetcd.Member {
	t.Helper()
	return StartConfig(t, Config(t))
}

// StartConfig starts a member with cfg and stops it when the test ends.
// A member alone in its cluster, with no raft timing of its own, gets a
// 10 ms heartbeat and a 100 ms election timeout: it has no peer to lose,
// and it then elects itself in milliseconds rather than in up to a
// second, which most tests would spend waiting.
func StartConfig(t testing.TB, cfg embedetcd.Config) *embedetcd.Member {
	t.Helper()
	if cfg.InitialCluster == "" && cfg.HeartbeatInterval == 0 && cfg.ElectionTimeout == 0 {
		cfg.HeartbeatInterval, cfg.ElectionTimeout = 10*time.Millisecond, 100*time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := embedetcd.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago. Another process may take it before we do; on a test machine that
// is rare enough, and a clash fails loudly at listen time.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}
