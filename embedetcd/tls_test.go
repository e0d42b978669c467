package embedetcd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/testcerts"
	"github.com/baton-dev/baton/tests/testetcd"
)

func TestValidate_TLSSettingsMustAgreeWithTheURLs(t *testing.T) {
	pair := transport.TLSInfo{CertFile: "peer.pem", KeyFile: "peer-key.pem"}
	https := func(c *embedetcd.Config) {
		c.PeerURL = strings.Replace(c.PeerURL, "http://", "https://", 1)
	}
	for _, tc := range []struct {
		what  string
		tweak func(c *embedetcd.Config)
		want  string // "" for valid
	}{
		{"peer TLS on https:// peer URLs", func(c *embedetcd.Config) { https(c); c.PeerTLSInfo = pair }, ""},
		{"peer auto TLS on https:// peer URLs", func(c *embedetcd.Config) { https(c); c.PeerAutoTLS = true }, ""},
		{"a peer CA with its pair", func(c *embedetcd.Config) {
			https(c)
			c.PeerTLSInfo = pair
			c.PeerTLSInfo.TrustedCAFile, c.PeerTLSInfo.ClientCertAuth = "ca.pem", true
		}, ""},
		{"a certificate without its key", func(c *embedetcd.Config) { https(c); c.PeerTLSInfo.CertFile = "p.pem" }, "PeerTLSInfo.CertFile is set without PeerTLSInfo.KeyFile"},
		{"a key without its certificate", func(c *embedetcd.Config) { https(c); c.PeerTLSInfo.KeyFile = "k.pem" }, "PeerTLSInfo.KeyFile is set without PeerTLSInfo.CertFile"},
		{"a CA alone", func(c *embedetcd.Config) { c.PeerTLSInfo.TrustedCAFile = "ca.pem" }, "PeerTLSInfo.TrustedCAFile needs"},
		{"client-cert auth alone", func(c *embedetcd.Config) { c.ClientTLSInfo.ClientCertAuth = true }, "ClientTLSInfo.ClientCertAuth needs"},
		{"auto TLS with a certificate", func(c *embedetcd.Config) { https(c); c.PeerAutoTLS, c.PeerTLSInfo = true, pair }, "PeerAutoTLS generates its own"},
		{"peer TLS on an http:// peer URL", func(c *embedetcd.Config) { c.PeerTLSInfo = pair }, "PeerURL"},
		{"an https:// peer URL without TLS", https, "peer TLS is off"},
		{"an http:// listen URL under peer TLS", func(c *embedetcd.Config) {
			https(c)
			c.PeerTLSInfo, c.ListenPeerURL = pair, "http://0.0.0.0:2380"
		}, "ListenPeerURL"},
		{"an http:// member of the initial cluster under peer TLS", func(c *embedetcd.Config) {
			https(c)
			c.PeerTLSInfo, c.InitialCluster = pair, "test="+c.PeerURL+",other=http://127.0.0.1:1"
		}, "InitialCluster member other"},
		{"client auto TLS on an http:// client URL", func(c *embedetcd.Config) { c.ClientAutoTLS = true }, "ClientURL"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			cfg := testetcd.Config(t)
			tc.tweak(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestStart_AKeyOfAnotherCertificateFailsNamingBothFiles(t *testing.T) {
	ca := testcerts.NewCA(t, "test CA")
	a, b := ca.Server(t, "a", "127.0.0.1"), ca.Server(t, "b", "127.0.0.1")
	cfg := testetcd.Config(t)
	cfg.Dir = filepath.Join(cfg.Dir, "member")
	cfg.PeerURL = strings.Replace(cfg.PeerURL, "http://", "https://", 1)
	cfg.PeerTLSInfo = transport.TLSInfo{CertFile: a.CertFile, KeyFile: b.KeyFile}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := embedetcd.Start(ctx, cfg)
	if err == nil {
		m.Close()
		t.Fatal("started with a key of another certificate")
	}
	if !strings.Contains(err.Error(), a.CertFile) || !strings.Contains(err.Error(), b.KeyFile) || !strings.Contains(err.Error(), "peer TLS") {
		t.Fatalf("error %q does not name peer TLS and both files", err)
	}
	if _, err := os.Stat(cfg.Dir); !os.IsNotExist(err) {
		t.Fatalf("the failed start made the data dir (%v)", err)
	}
}
