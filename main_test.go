package main

import (
	"os"
	"testing"

	"github.com/spf13/pflag"

	"github.com/baton-dev/baton/internal/testcluster"
	"github.com/baton-dev/baton/node"
)

// bin is baton built once for the tests that run it as a process.
var bin string

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, &bin)) }

func TestEnvName_IsTheFlagsTwin(t *testing.T) {
	for flag, env := range map[string]string{
		"http-addr":       "BATON_HTTP_ADDR",
		"data-dir":        "BATON_DATA_DIR",
		"initial-cluster": "BATON_INITIAL_CLUSTER",
		"etcd-endpoints":  "BATON_ETCD_ENDPOINTS",
	} {
		if got := envName(flag); got != env {
			t.Errorf("envName(%q) = %q, want %q", flag, got, env)
		}
	}
}

func TestApplyEnv_FlagsWinOverEnvironment(t *testing.T) {
	t.Setenv("BATON_HTTP_ADDR", "127.0.0.1:9999")
	t.Setenv("BATON_DATA_DIR", "/from/env")
	t.Setenv("BATON_HISTORY_RETENTION", "1h")
	cfg := node.DefaultConfig()
	var endpoints string
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addServeFlags(fs, &cfg, &endpoints)
	if err := fs.Parse([]string{"--data-dir", "/from/flag"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != "127.0.0.1:9999" {
		t.Errorf("HTTPAddr = %q, want the environment's", cfg.HTTPAddr)
	}
	if cfg.DataDir != "/from/flag" {
		t.Errorf("DataDir = %q, want the flag's", cfg.DataDir)
	}
	if cfg.HistoryRetention.String() != "1h0m0s" {
		t.Errorf("HistoryRetention = %s, want 1h", cfg.HistoryRetention)
	}
}

func TestApplyEnv_RejectsBadValues(t *testing.T) {
	t.Setenv("BATON_HISTORY_RETENTION", "soon")
	cfg := node.DefaultConfig()
	var endpoints string
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addServeFlags(fs, &cfg, &endpoints)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs); err == nil {
		t.Fatal("applyEnv accepted BATON_HISTORY_RETENTION=soon")
	}
}
