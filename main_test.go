package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/baton-dev/baton/cli"
	"github.com/baton-dev/baton/node"
	"github.com/baton-dev/baton/tests/testcluster"
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
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addServeFlags(fs, &cfg)
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
	if cfg.Trail.HistoryRetention.String() != "1h0m0s" {
		t.Errorf("HistoryRetention = %s, want 1h", cfg.Trail.HistoryRetention)
	}
}

func TestApplyEnv_RejectsBadValues(t *testing.T) {
	t.Setenv("BATON_HISTORY_RETENTION", "soon")
	cfg := node.DefaultConfig()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addServeFlags(fs, &cfg)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs); err == nil {
		t.Fatal("applyEnv accepted BATON_HISTORY_RETENTION=soon")
	}
}

func TestAccessLogFlag_IsOnByDefaultAndOffByItsEnvironmentTwin(t *testing.T) {
	cfg := node.DefaultConfig()
	if !cfg.AccessLog {
		t.Fatal("the access log is off by default")
	}
	t.Setenv("BATON_ACCESS_LOG", "false")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addServeFlags(fs, &cfg)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if cfg.AccessLog {
		t.Fatal("BATON_ACCESS_LOG=false left the access log on")
	}
}

func TestServe_TLSFlagCombinationsThatCannotWorkAreUsageErrorsNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--tls-cert", "cert.pem"}, want: "--tls-cert needs --tls-key"},
		{args: []string{"--tls-key", "key.pem"}, want: "--tls-key needs --tls-cert"},
		{args: []string{"--tls-client-ca", "ca.pem"}, want: "--tls-client-ca needs --tls-cert"},
		{env: map[string]string{"BATON_TLS_CERT": "cert.pem"}, want: "--tls-cert needs --tls-key"},
		{args: []string{"--peer-cert", "p.pem", "--peer-key", "p-key.pem"}, want: "--peer-url"},
		{args: []string{"--peer-auto-tls"}, want: "--peer-url"},
		{args: []string{"--peer-url", "https://127.0.0.1:2380"}, want: "peer TLS is off"},
		{args: []string{"--peer-url", "https://127.0.0.1:2380", "--peer-cert", "p.pem", "--peer-key", "k.pem", "--peer-trusted-ca", "ca.pem",
			"--peer-client-cert-auth=false"}, want: "--peer-client-cert-auth=false"},
		{args: []string{"--peer-trusted-ca", "ca.pem"}, want: "--peer-trusted-ca needs --peer-cert"},
		{args: []string{"--client-auto-tls"}, want: "--client-url"},
		{args: []string{"--etcd-cacert", "ca.pem"}, want: "--etcd-cacert is for --etcd-endpoints"},
		{args: []string{"--etcd-endpoints", "http://10.0.0.1:2379", "--etcd-cacert", "ca.pem"}, want: "must be https://"},
		{args: []string{"--etcd-endpoints", "https://10.0.0.1:2379", "--peer-auto-tls"}, want: "--peer-auto-tls configures the embedded etcd member"},
		{args: []string{"--etcd-endpoints", "https://10.0.0.1:2379", "--client-json-gateway"}, want: "--client-json-gateway configures the embedded etcd member"},
		{args: []string{"--auth-file", "auth", "--listen-client-url", "http://0.0.0.0:2379"}, want: "--listen-client-url configures a client TCP listener"},
		{args: []string{"--client-url", "", "--listen-client-url", "http://0.0.0.0:2379"}, want: "--client-url is empty"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			root := newRootCmd()
			root.SetArgs(append([]string{"serve", "--data-dir", filepath.Join(t.TempDir(), "never")}, tc.args...))
			root.SetOut(io.Discard)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve %v: %v, want an error saying %q", tc.args, err, tc.want)
			}
			if code := cli.ExitCode(err); code != cli.ExitUsage {
				t.Errorf("exit code %d, want %d (usage)", code, cli.ExitUsage)
			}
		})
	}
}

func TestAllowedHostsFlag_IsAListFromTheFlagOrItsEnvironmentTwin(t *testing.T) {
	parse := func(args ...string) node.Config {
		t.Helper()
		cfg := node.DefaultConfig()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addServeFlags(fs, &cfg)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := applyEnv(fs); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got := parse().AllowedHosts; len(got) != 0 {
		t.Errorf("AllowedHosts %q by default, want none (the node derives them from --http-addr)", got)
	}
	t.Setenv("BATON_ALLOWED_HOSTS", "baton.example.com,10.0.0.7")
	if got := strings.Join(parse().AllowedHosts, " "); got != "baton.example.com 10.0.0.7" {
		t.Errorf("from BATON_ALLOWED_HOSTS: %q", got)
	}
	if got := strings.Join(parse("--allowed-hosts", "*").AllowedHosts, " "); got != "*" {
		t.Errorf("the flag over the environment: %q, want *", got)
	}
}

func TestServe_AnAllowedHostWithAPortIsAUsageError(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"serve", "--data-dir", filepath.Join(t.TempDir(), "never"), "--allowed-hosts", "localhost,baton.example.com:8080"})
	root.SetOut(io.Discard)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "--allowed-hosts") || !strings.Contains(err.Error(), "port") {
		t.Fatalf("serve --allowed-hosts baton.example.com:8080: %v, want an error naming the flag and the port", err)
	}
	if code := cli.ExitCode(err); code != cli.ExitUsage {
		t.Errorf("exit code %d, want %d (usage)", code, cli.ExitUsage)
	}
}

// TestRoot_AMistypedCommandIsOneUsageLineWithASuggestion: "baton stauts
// foo" names the command it did not know and the one it is close to, in
// one line, prints no flag help, and exits 2.
func TestRoot_AMistypedCommandIsOneUsageLineWithASuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts", "foo"}, `unknown command "stauts": did you mean status?`},
		{[]string{"nonsense"}, `unknown command "nonsense" (baton --help lists the commands)`},
	} {
		root := newRootCmd()
		var out strings.Builder
		root.SetArgs(tc.args)
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("baton %v: %v, want an error saying %q", tc.args, err, tc.want)
		}
		if code := cli.ExitCode(err); code != cli.ExitUsage {
			t.Errorf("baton %v: exit code %d, want %d (usage)", tc.args, code, cli.ExitUsage)
		}
		if out.Len() > 0 {
			t.Errorf("baton %v printed %d bytes of help beside the error:\n%s", tc.args, out.Len(), out.String())
		}
	}
}
