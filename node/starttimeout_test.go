package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/node"
	"github.com/baton-dev/baton/tests/testetcd"
)

// withoutQuorum is a node of a two-member initial cluster whose other
// member never starts: it can only wait for a quorum.
func withoutQuorum(t *testing.T) node.Config {
	cfg := testConfig(t)
	cfg.InitialCluster = "n1=" + cfg.PeerURL + ",n2=http://" + testetcd.FreeAddr(t)
	return cfg
}

// TestStart_GivesUpOnAQuorumAtStartTimeout: a node whose initial cluster
// never reaches a quorum exits once --start-timeout has passed, saying so.
func TestStart_GivesUpOnAQuorumAtStartTimeout(t *testing.T) {
	cfg := withoutQuorum(t)
	cfg.StartTimeout = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	n, err := node.Start(ctx, cfg)
	if err == nil {
		n.Close()
		t.Fatal("a node without a quorum started")
	}
	if took := time.Since(start); !strings.Contains(err.Error(), "not ready within 1s") || took > 30*time.Second {
		t.Fatalf("Start answered %v after %s; want \"not ready within 1s\", soon", err, took)
	}
}

// TestStart_AZeroStartTimeoutWaitsForAQuorumAsLongAsItTakes: with
// --start-timeout 0 the node waits on past the default minute's bound,
// ended here by the caller's context (a supervisor's probe, in
// production), not by a timeout of its own.
func TestStart_AZeroStartTimeoutWaitsForAQuorumAsLongAsItTakes(t *testing.T) {
	cfg := withoutQuorum(t)
	cfg.StartTimeout = 0
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err == nil {
		n.Close()
		t.Fatal("a node without a quorum started")
	}
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "not ready within") {
		t.Fatalf("Start answered %v; want the caller's deadline, not a timeout of its own", err)
	}
}

// TestConfig_ANegativeStartTimeoutIsRefused names the flag.
func TestConfig_ANegativeStartTimeoutIsRefused(t *testing.T) {
	cfg := testConfig(t)
	cfg.StartTimeout = -time.Second
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--start-timeout") {
		t.Fatalf("Validate: %v; want --start-timeout named", err)
	}
}
