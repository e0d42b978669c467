package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/baton-dev/baton/node"
)

// TestConfig_AddFlagsWriteTheFieldsTheyName: each flag sets its field of
// Config, the engine's through the embedded lock.Config, with no copy in
// between.
func TestConfig_AddFlagsWriteTheFieldsTheyName(t *testing.T) {
	cfg := node.DefaultConfig()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	cfg.AddFlags(fs)
	err := fs.Parse([]string{
		"--max-waiters-per-lock", "7", "--max-event-streams", "8", "--history-retention", "1h",
		"--etcd-quota-bytes", "1024", "--rate-limit", "2.5", "--rate-burst", "3",
		"--credential-rate-burst", "4", "--max-event-streams-per-address", "5",
		"--etcd-endpoints", "https://10.0.0.1:2379,https://10.0.0.2:2379", "--etcd-compaction-retention", "5m",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxWaitersPerLock != 7 || cfg.Trail.MaxEventStreams != 8 || cfg.Trail.HistoryRetention != time.Hour || cfg.BackendQuota != 1024 {
		t.Errorf("engine knobs %d, %d, %s, %d; want 7, 8, 1h, 1024", cfg.MaxWaitersPerLock, cfg.Trail.MaxEventStreams, cfg.Trail.HistoryRetention, cfg.BackendQuota)
	}
	if cfg.Trail.CompactionRetention != 5*time.Minute {
		t.Errorf("CompactionRetention %s, want 5m", cfg.Trail.CompactionRetention)
	}
	if cfg.RateLimit.Rate != 2.5 || cfg.RateLimit.Burst != 3 || cfg.CredentialRateLimit.Burst != 4 || cfg.StreamLimits.PerAddress != 5 {
		t.Errorf("server knobs %+v, %+v, %+v", cfg.RateLimit, cfg.CredentialRateLimit, cfg.StreamLimits)
	}
	if got := strings.Join(cfg.EtcdEndpoints, " "); got != "https://10.0.0.1:2379 https://10.0.0.2:2379" {
		t.Errorf("EtcdEndpoints %q", got)
	}
	if err := fs.Set("etcd-endpoints", ""); err != nil || cfg.EtcdEndpoints != nil {
		t.Errorf("--etcd-endpoints= left %q (%v), want none: the node embeds its member", cfg.EtcdEndpoints, err)
	}
}
