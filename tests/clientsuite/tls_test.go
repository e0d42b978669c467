package clientsuite_test

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/testcerts"
	"github.com/baton-dev/baton/tests/contract"
)

// tlsFront is an HTTPS server over the shared backend that requires a
// client certificate from ca, as a node started with --tls-client-ca does.
// reached counts the requests that got through the handshake.
func tlsFront(t *testing.T, ca *testcerts.CA) (url string, reached *atomic.Int64) {
	t.Helper()
	_, h := backend()
	checked := contract.Wrap(t, h)
	reached = new(atomic.Int64)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		checked.ServeHTTP(w, r)
	}))
	ts.TLS = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{ca.Server(t, "node", "127.0.0.1").TLS(t)},
		ClientCAs:    ca.Pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts.URL, reached
}

func TestClient_OverHTTPSTrustsTheCAFileAndPresentsItsCertificate(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	url, _ := tlsFront(t, ca)
	me := ca.Client(t, "worker")
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{url},
		TLSConfig: client.TLSConfig{CAFile: ca.File, CertFile: me.CertFile, KeyFile: me.KeyFile}})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	ctx := ctxFor(t, time.Minute)
	name := lockName(t, "https")
	got, err := c.AcquireOnce(ctx, name, client.AcquireOptions{Owner: "w1"})
	if err != nil {
		t.Fatalf("acquire over https: %v", err)
	}
	if l, err := c.Get(ctx, name); err != nil || l.Token != got.Token {
		t.Fatalf("get over https: %+v, %v; want token %d", l, err, got.Token)
	}
	if err := c.Release(ctx, name, got.Token); err != nil {
		t.Fatalf("release over https: %v", err)
	}
}

func TestClient_ATLSRefusalIsNotRetriedNorCalledUnavailable(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	other := testcerts.NewCA(t, "another CA")
	url, reached := tlsFront(t, ca)
	stranger := other.Client(t, "stranger")
	for _, tc := range []struct {
		what string
		tls  client.TLSConfig
		want string
	}{
		{"no client certificate", client.TLSConfig{CAFile: ca.File}, "certificate"},
		{"a client certificate from another CA", client.TLSConfig{CAFile: ca.File, CertFile: stranger.CertFile, KeyFile: stranger.KeyFile}, "certificate"},
		{"a server certificate nobody vouches for", client.TLSConfig{CAFile: other.File}, "certificate signed by unknown authority"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			// Many retries and long pauses: a retry would show as a slow call.
			c, err := client.NewWithConfig(client.Config{Endpoints: []string{url}, TLSConfig: tc.tls, MaxRetries: 10, RetryBackoff: 2 * time.Second})
			if err != nil {
				t.Fatalf("new client: %v", err)
			}
			start := time.Now()
			_, err = c.Get(ctxFor(t, time.Minute), "x")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "TLS") {
				t.Fatalf("get: %v, want a TLS error about %q", err, tc.want)
			}
			if errors.Is(err, client.ErrUnavailable) {
				t.Errorf("get: %v matches ErrUnavailable; a TLS refusal is a configuration error", err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("get took %s: the refusal was retried", took)
			}
		})
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d requests reached the handler through a refused handshake", n)
	}
}

func TestClient_PlainHTTPToAnHTTPSNodeIsARefusalNotAnAnswer(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	url, reached := tlsFront(t, ca)
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{strings.Replace(url, "https://", "http://", 1)}, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctxFor(t, time.Minute), "x"); err == nil {
		t.Fatal("get over plain HTTP from an HTTPS node succeeded")
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d plain requests reached the handler", n)
	}
}

func TestDefaultConfig_ReadsTheTLSEnvironment(t *testing.T) {
	t.Setenv("BATON_CACERT", "/etc/baton/ca.pem")
	t.Setenv("BATON_CERT", "/etc/baton/me.pem")
	t.Setenv("BATON_KEY", "/etc/baton/me-key.pem")
	want := client.TLSConfig{CAFile: "/etc/baton/ca.pem", CertFile: "/etc/baton/me.pem", KeyFile: "/etc/baton/me-key.pem"}
	if got := client.DefaultConfig().TLSConfig; got != want {
		t.Errorf("DefaultConfig().TLSConfig = %+v, want %+v", got, want)
	}
}

func TestNewWithConfig_RejectsTLSFilesThatCannotWork(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	me := ca.Client(t, "me")
	other := ca.Client(t, "other")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		what string
		cfg  client.Config
		want string
	}{
		{"a missing CA file", client.Config{TLSConfig: client.TLSConfig{CAFile: missing}}, missing},
		{"a CA file without a certificate", client.Config{TLSConfig: client.TLSConfig{CAFile: notPEM}}, notPEM},
		{"a certificate without its key", client.Config{TLSConfig: client.TLSConfig{CertFile: me.CertFile}}, "needs its key"},
		{"a key without its certificate", client.Config{TLSConfig: client.TLSConfig{KeyFile: me.KeyFile}}, "needs its certificate"},
		{"a key of another certificate", client.Config{TLSConfig: client.TLSConfig{CertFile: me.CertFile, KeyFile: other.KeyFile}}, me.CertFile},
		{"TLS files with an HTTPClient of one's own", client.Config{HTTPClient: &http.Client{}, TLSConfig: client.TLSConfig{CAFile: ca.File}}, "HTTPClient"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			tc.cfg.Endpoints = []string{"https://127.0.0.1:1"}
			if _, err := client.NewWithConfig(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewWithConfig: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
