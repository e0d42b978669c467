package cli_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/internal/testcerts"
	"github.com/baton-dev/baton/node"
	"github.com/baton-dev/baton/tests/testetcd"
)

// startNode runs a real node in this process with cfg's TLS settings on
// fresh directories and ports.
func startNode(t *testing.T, tweak func(c *node.Config)) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Name = "n1"
	cfg.HTTPAddr = testetcd.FreeAddr(t)
	cfg.PeerURL = "http://" + testetcd.FreeAddr(t)
	cfg.ClientURL = "http://" + testetcd.FreeAddr(t)
	cfg.LogLevel = "warn"
	tweak(&cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func TestCLI_StatusOverHTTPSTrustsTheCAOfTheFlagOrTheEnvironment(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	srv := ca.Server(t, "baton", "127.0.0.1")
	n := startNode(t, func(c *node.Config) { c.TLSCertFile, c.TLSKeyFile = srv.CertFile, srv.KeyFile })
	addr := "BATON_ADDR=" + n.URL()

	if out, errs, code := runEnv(t, []string{addr}, "acquire", "tls-job", "--owner", "me", "--ttl", "1m", "--cacert", ca.File); code != 0 {
		t.Fatalf("acquire with --cacert: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code := runEnv(t, []string{addr, "BATON_CACERT=" + ca.File}, "status", "tls-job", "-o", "json")
	if code != 0 || !strings.Contains(out, `"owner": "me"`) {
		t.Fatalf("status with BATON_CACERT: exit %d\n%s%s", code, out, errs)
	}
	// Without the CA: a TLS error, exit 1, not "unavailable" (6).
	_, errs, code = runEnv(t, []string{addr}, "status", "tls-job")
	if code != 1 || !strings.Contains(errs, "certificate signed by unknown authority") {
		t.Fatalf("status without the CA: exit %d, stderr %q; want 1 and an unknown-authority error", code, errs)
	}
}

func TestCLI_ClientCertificateFlagsOpenANodeThatRequiresOne(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	srv, me := ca.Server(t, "baton", "127.0.0.1"), ca.Client(t, "ops")
	n := startNode(t, func(c *node.Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile = srv.CertFile, srv.KeyFile, ca.File
	})
	env := []string{"BATON_ADDR=" + n.URL(), "BATON_CACERT=" + ca.File}
	if _, errs, code := runEnv(t, env, "list"); code != 1 || !strings.Contains(errs, "TLS") {
		t.Fatalf("list without a client certificate: exit %d, stderr %q; want 1 and a TLS error", code, errs)
	}
	if out, errs, code := runEnv(t, env, "list", "--cert", me.CertFile, "--key", me.KeyFile); code != 0 {
		t.Fatalf("list with --cert and --key: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := runEnv(t, append(env, "BATON_CERT="+me.CertFile, "BATON_KEY="+me.KeyFile), "list"); code != 0 {
		t.Fatalf("list with BATON_CERT and BATON_KEY: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := runEnv(t, env, "list", "--cert", me.CertFile); code == 0 || !strings.Contains(errs, "needs its key") {
		t.Fatalf("--cert without --key: exit %d, stderr %q", code, errs)
	}
}

func TestHealthcheck_ExitsZeroOnAReadyNodeAndOneOnADeadAddress(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	srv := ca.Server(t, "baton", "127.0.0.1")
	plain := startNode(t, func(*node.Config) {})
	secure := startNode(t, func(c *node.Config) { c.TLSCertFile, c.TLSKeyFile = srv.CertFile, srv.KeyFile })
	_, securePort, _ := strings.Cut(secure.Addr(), ":")
	dead := testetcd.FreeAddr(t)

	for _, tc := range []struct {
		what     string
		env      []string
		args     []string
		code     int
		inStderr string
	}{
		{what: "a ready node by --addr", args: []string{"--addr", plain.URL()}},
		{what: "a live node by BATON_ADDR", env: []string{"BATON_ADDR=" + plain.Addr()}, args: []string{"--live"}},
		{what: "an HTTPS node with --cacert", args: []string{"--addr", secure.URL(), "--cacert", ca.File}},
		// What a container sees: its own listen address and TLS settings.
		{what: "the node of BATON_HTTP_ADDR on 0.0.0.0 over TLS", env: []string{
			"BATON_HTTP_ADDR=0.0.0.0:" + securePort, "BATON_TLS_CERT=" + srv.CertFile, "BATON_CACERT=" + ca.File}},
		{what: "a dead address", args: []string{"--addr", "http://" + dead}, code: 1, inStderr: "unhealthy: "},
		{what: "an HTTPS node without its CA", args: []string{"--addr", secure.URL()}, code: 1, inStderr: "unknown authority"},
		{what: "a bad flag", args: []string{"--no-such-flag"}, code: 1, inStderr: "no-such-flag"},
		{what: "a zero timeout", args: []string{"--timeout", "0s"}, code: 1, inStderr: "--timeout"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			out, errs, code := runEnv(t, tc.env, append([]string{"healthcheck"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errs, tc.inStderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errs, tc.code, tc.inStderr)
			}
			if tc.code != 0 && strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", errs)
			}
		})
	}
}

func TestServe_SIGHUPServesTheRenewedCertificate(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	first := ca.Server(t, "baton", "127.0.0.1")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first.CopyTo(t, certFile, keyFile)
	addr := testetcd.FreeAddr(t)
	cmd := exec.Command(binary(t), "serve", "--data-dir", filepath.Join(dir, "data"), "--http-addr", addr,
		"--peer-url", "http://"+testetcd.FreeAddr(t), "--client-url", "http://"+testetcd.FreeAddr(t),
		"--log-level", "warn", "--tls-cert", certFile, "--tls-key", keyFile)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	serial := func() string {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool()})
		if err != nil {
			return ""
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	waitServing := func(what, want string) {
		t.Helper()
		poll.Until(t, time.Minute, what, func() bool {
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				t.Fatalf("baton exited (%v) while waiting for %s\n%s", err, what, logs.String())
			default:
			}
			return serial() == want
		})
	}
	waitServing("the first certificate", first.Cert.SerialNumber.String())

	renewed := ca.Server(t, "baton", "127.0.0.1")
	renewed.CopyTo(t, certFile, keyFile)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitServing("the renewed certificate after SIGHUP", renewed.Cert.SerialNumber.String())

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("baton after SIGTERM: %v\n%s", err, logs.String())
	}
	exited <- nil // for the cleanup
}

func TestMemberAndSnapshot_TalkToATLSClientPortWithTheEtcdTLSFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes over TLS: not in the fast tier")
	}
	ca := testcerts.NewCA(t, "etcd client CA")
	srv, me := ca.Server(t, "etcd", "127.0.0.1"), ca.Client(t, "ops")
	clientURL := "https://" + testetcd.FreeAddr(t)
	startNode(t, func(c *node.Config) {
		c.ClientURL = clientURL
		c.ClientCertFile, c.ClientKeyFile, c.ClientTrustedCAFile = srv.CertFile, srv.KeyFile, ca.File
	})
	out, errs, code := runEnv(t, nil, "member", "list", "--etcd-endpoints", clientURL,
		"--etcd-cacert", ca.File, "--etcd-cert", me.CertFile, "--etcd-key", me.KeyFile)
	if code != 0 || !strings.Contains(out, "n1") {
		t.Fatalf("member list with a client certificate: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runEnv(t, []string{"BATON_ETCD_ENDPOINTS=" + clientURL, "BATON_ETCD_CACERT=" + ca.File,
		"BATON_ETCD_CERT=" + me.CertFile, "BATON_ETCD_KEY=" + me.KeyFile}, "member", "list")
	if code != 0 || !strings.Contains(out, "n1") {
		t.Fatalf("member list with the BATON_ETCD_ variables: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := runEnv(t, nil, "member", "list", "--etcd-endpoints", clientURL, "--etcd-cacert", ca.File, "--timeout", "3s"); code != 6 {
		t.Fatalf("member list without a client certificate: exit %d, stderr %q; want 6", code, errs)
	}
	if _, errs, code := runEnv(t, nil, "member", "list", "--etcd-endpoints", strings.Replace(clientURL, "https", "http", 1), "--etcd-cacert", ca.File); code != 2 || !strings.Contains(errs, "must be https://") {
		t.Fatalf("--etcd-cacert with an http:// endpoint: exit %d, stderr %q; want a usage error", code, errs)
	}
	// snapshot save takes the same flags: a backup of a TLS-only member.
	backup := filepath.Join(t.TempDir(), "backup.db")
	if out, errs, code := runEnv(t, nil, "snapshot", "save", backup, "--etcd-endpoints", clientURL,
		"--etcd-cacert", ca.File, "--etcd-cert", me.CertFile, "--etcd-key", me.KeyFile); code != 0 {
		t.Fatalf("snapshot save with a client certificate: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(backup); err != nil {
		t.Fatalf("snapshot save said it saved, but: %v", err)
	}
	if _, errs, code := runEnv(t, nil, "snapshot", "save", backup, "--etcd-endpoints", clientURL, "--etcd-cert", me.CertFile); code != 2 || !strings.Contains(errs, "go together") {
		t.Fatalf("snapshot save with --etcd-cert but no --etcd-key: exit %d, stderr %q; want a usage error", code, errs)
	}
}

func TestMember_ReachesAnAutoTLSClientPortTrustingItsSelfSignedCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes over TLS: not in the fast tier")
	}
	clientURL := "https://" + testetcd.FreeAddr(t)
	var dataDir string
	startNode(t, func(c *node.Config) {
		c.ClientURL, c.ClientAutoTLS = clientURL, true
		dataDir = c.DataDir
	})
	selfSigned := filepath.Join(dataDir, "fixtures", "client", "cert.pem")
	out, errs, code := runEnv(t, nil, "member", "list", "--etcd-endpoints", clientURL, "--etcd-cacert", selfSigned)
	if code != 0 || !strings.Contains(out, "n1") {
		t.Fatalf("member list trusting the self-signed certificate: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := runEnv(t, nil, "member", "list", "--etcd-endpoints", clientURL, "--timeout", "3s"); code == 0 {
		t.Fatalf("member list without trusting it succeeded: %s", errs)
	}
}
