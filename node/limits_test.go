package node_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/node"
	"github.com/baton-dev/baton/server"
)

func TestNode_LimitsReachTheEngineAndTheServer(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxWaitersPerLock, cfg.MaxLocksPerSession, cfg.MaxSessions, cfg.Trail.MaxEventStreams = 7, 8, 9, 10
	cfg.MaxLocks, cfg.MaxFencedValues, cfg.MaxFencedValueBytes, cfg.BackendQuota = 11, 12, 13, 64<<20
	cfg.RateLimit = server.RateLimit{Rate: 0.01, Burst: 2}
	n := start(t, cfg)
	got := n.Engine().Config()
	if got.MaxWaitersPerLock != 7 || got.MaxLocksPerSession != 8 || got.MaxSessions != 9 {
		t.Fatalf("engine caps %d/%d/%d, want 7/8/9", got.MaxWaitersPerLock, got.MaxLocksPerSession, got.MaxSessions)
	}
	if tc := n.Trail().Config(); tc.MaxEventStreams != 10 || tc.BackendQuota != 64<<20 {
		t.Fatalf("trail's stream cap %d and quota %d, want 10 and 64 MiB", tc.MaxEventStreams, tc.BackendQuota)
	}
	if got.MaxLocks != 11 || got.MaxFencedValues != 12 || got.MaxFencedValueBytes != 13 || got.BackendQuota != 64<<20 || got.Embedded == nil {
		t.Fatalf("engine storage caps %d/%d/%d, quota %d, member %v; want 11/12/13, 64 MiB and the embedded member",
			got.MaxLocks, got.MaxFencedValues, got.MaxFencedValueBytes, got.BackendQuota, got.Embedded)
	}
	url := "http://" + n.Addr() + "/v1/cluster"
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		if st := call(t, "GET", url, nil, nil); st != want {
			t.Fatalf("request %d: %d, want %d (burst 2)", i+1, st, want)
		}
	}
}

func TestNode_DefaultsLeaveRatesUnlimitedAndCapsOnButLocksPerSession(t *testing.T) {
	cfg := node.DefaultConfig()
	if cfg.RateLimit.Rate != 0 || cfg.CredentialRateLimit.Rate != 0 {
		t.Fatalf("rate limits %v/%v by default, want off", cfg.RateLimit, cfg.CredentialRateLimit)
	}
	// The bench's scale scenario holds 1,000 sessions of 100 locks and its
	// contention scenario queues 64 waiters: the defaults must allow them.
	if cfg.MaxSessions < 1000 || cfg.MaxLocks < 1000*100 || cfg.MaxWaitersPerLock < 64 || cfg.Trail.MaxEventStreams < 1 {
		t.Fatalf("caps %+v too low for the bench", cfg)
	}
	// Off: it would cost every session cycle a write (lock.Config).
	if cfg.MaxLocksPerSession != 0 {
		t.Fatalf("MaxLocksPerSession %d by default, want 0 (off)", cfg.MaxLocksPerSession)
	}
}

func TestNode_NegativeRateLimitIsRefused(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimit.Rate = -1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := node.Start(ctx, cfg); err == nil || n != nil || !strings.Contains(err.Error(), "rate-limit") {
		t.Fatalf("start with --rate-limit -1: node %v, err %v; want a clear error", n, err)
	}
}
