package node_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/testcerts"
	"github.com/baton-dev/baton/node"
)

const writeToken = "write-token-0123456789abcdef"

// withAuth turns authentication on for cfg with one write credential.
func withAuth(t *testing.T, cfg *node.Config) {
	t.Helper()
	cfg.AuthFile = filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(cfg.AuthFile, []byte("write "+writeToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func authorized(t *testing.T, method, url string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Authorization", "Bearer "+writeToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// etcdGet reads key through an etcd client of endpoint with tc, within 3 s.
func etcdGet(endpoint string, tc *transport.TLSInfo) error {
	cfg := clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 3 * time.Second}
	if tc != nil {
		c, err := tc.ClientConfig()
		if err != nil {
			return err
		}
		cfg.TLS = c
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "any")
	return err
}

// TestNode_AuthWithoutAClientCAServesNoClientTCPListener: etcd's API on
// the client port knows no baton credential, so with --auth-file and no
// --client-trusted-ca nothing listens there, while the HTTP API serves and
// the socket in the data dir lets local tools in.
func TestNode_AuthWithoutAClientCAServesNoClientTCPListener(t *testing.T) {
	cfg := testConfig(t)
	withAuth(t, &cfg)
	n := start(t, cfg)

	addr := strings.TrimPrefix(cfg.ClientURL, "http://")
	if c, err := net.DialTimeout("tcp", addr, 3*time.Second); err == nil {
		c.Close()
		t.Fatalf("dialled the client URL %s of a node with --auth-file and no --client-trusted-ca", addr)
	}
	if code := authorized(t, "POST", n.URL()+"/v1/locks/a"); code != http.StatusCreated {
		t.Fatalf("acquire with the write token: %d, want 201", code)
	}
	if code := call(t, "GET", n.URL()+"/v1/locks", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("list without a token: %d, want 401", code)
	}
	if err := etcdGet(embedetcd.SocketURL(cfg.DataDir), nil); err != nil {
		t.Fatalf("etcd through the data dir's socket: %v", err)
	}
}

// TestNode_AuthWithAClientCAServesTheClientPortToCertificatesOnly: the
// port is an etcd admin door, opened by a certificate of that CA alone.
func TestNode_AuthWithAClientCAServesTheClientPortToCertificatesOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes over TLS: not in the fast tier")
	}
	ca := testcerts.NewCA(t, "etcd client CA")
	srv, me := ca.Server(t, "etcd", "127.0.0.1"), ca.Client(t, "ops")
	cfg := testConfig(t)
	withAuth(t, &cfg)
	cfg.ClientURL = strings.Replace(cfg.ClientURL, "http://", "https://", 1)
	cfg.ClientCertFile, cfg.ClientKeyFile, cfg.ClientTrustedCAFile = srv.CertFile, srv.KeyFile, ca.File
	start(t, cfg)

	if err := etcdGet(cfg.ClientURL, &transport.TLSInfo{TrustedCAFile: ca.File}); err == nil {
		t.Fatal("the client port served a client without a certificate")
	}
	if err := etcdGet(cfg.ClientURL, &transport.TLSInfo{TrustedCAFile: ca.File, CertFile: me.CertFile, KeyFile: me.KeyFile}); err != nil {
		t.Fatalf("the client port refused a certificate of its CA: %v", err)
	}
	if _, err := os.Stat(embedetcd.SocketPath(cfg.DataDir)); !os.IsNotExist(err) {
		t.Fatalf("a socket beside a served client port (%v)", err)
	}
}

func TestValidate_AuthRefusesClientListenerFlagsWithoutAClientCA(t *testing.T) {
	ca := testcerts.NewCA(t, "etcd client CA")
	srv := ca.Server(t, "etcd", "127.0.0.1")
	for _, tc := range []struct {
		what  string
		tweak func(c *node.Config)
		want  string
	}{
		{"the default client URL", func(c *node.Config) {}, ""},
		{"a listen URL", func(c *node.Config) { c.ListenClientURL = "http://0.0.0.0:2379" }, "--listen-client-url configures a client TCP listener"},
		{"a certificate but no CA", func(c *node.Config) {
			c.ClientURL = strings.Replace(c.ClientURL, "http://", "https://", 1)
			c.ClientCertFile, c.ClientKeyFile = srv.CertFile, srv.KeyFile
		}, "--client-cert configures a client TCP listener"},
		{"auto TLS", func(c *node.Config) {
			c.ClientURL = strings.Replace(c.ClientURL, "http://", "https://", 1)
			c.ClientAutoTLS = true
		}, "--client-auto-tls"},
		{"a certificate and a CA", func(c *node.Config) {
			c.ClientURL = strings.Replace(c.ClientURL, "http://", "https://", 1)
			c.ClientCertFile, c.ClientKeyFile, c.ClientTrustedCAFile = srv.CertFile, srv.KeyFile, ca.File
		}, ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			cfg := testConfig(t)
			withAuth(t, &cfg)
			tc.tweak(&cfg)
			err := cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}
