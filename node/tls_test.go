package node_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/testcerts"
	"github.com/baton-dev/baton/node"
	"github.com/baton-dev/baton/tests/testetcd"
)

// httpsConfig is testConfig serving HTTPS with a certificate of ca.
func httpsConfig(t *testing.T, ca *testcerts.CA) node.Config {
	cfg := testConfig(t)
	srv := ca.Server(t, "baton", "127.0.0.1")
	cfg.TLSCertFile, cfg.TLSKeyFile = srv.CertFile, srv.KeyFile
	return cfg
}

func newClient(t *testing.T, endpoint string, tc client.TLSConfig) *client.Client {
	t.Helper()
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{endpoint}, TLSConfig: tc, MaxRetries: -1, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// servedSerial is the serial number of the certificate addr serves.
func servedSerial(t *testing.T, addr string, ca *testcerts.CA) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool()})
	if err != nil {
		t.Fatalf("tls dial %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestNode_HTTPSServesTheGoClientThatTrustsTheCA(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	n := start(t, httpsConfig(t, ca))
	if !strings.HasPrefix(n.URL(), "https://") {
		t.Fatalf("URL %q, want https://", n.URL())
	}
	c := newClient(t, n.URL(), client.TLSConfig{CAFile: ca.File})
	ctx := ctxFor(t, time.Minute)
	l, err := c.AcquireOnce(ctx, "over-https", client.AcquireOptions{Owner: "w1"})
	if err != nil {
		t.Fatalf("acquire over https: %v", err)
	}
	if got, err := c.Get(ctx, "over-https"); err != nil || got.Token != l.Token {
		t.Fatalf("get over https: %+v, %v", got, err)
	}
	if err := c.Release(ctx, "over-https", l.Token); err != nil {
		t.Fatalf("release over https: %v", err)
	}
	// Without the CA the node's certificate is nobody's word.
	if _, err := newClient(t, n.URL(), client.TLSConfig{}).Get(ctx, "over-https"); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("get without the CA: %v, want an unknown-authority error", err)
	}
}

func TestNode_PlainHTTPToTheTLSPortNeverReachesTheAPI(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	n := start(t, httpsConfig(t, ca))
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Post("http://"+n.Addr()+"/v1/locks/plain", "application/json", strings.NewReader(`{"owner":"w"}`))
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// Go's TLS server answers a plain request this, and only this.
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTP request to an HTTPS server") {
			t.Fatalf("plain HTTP to the TLS port: %d %q", resp.StatusCode, body)
		}
	}
	// The plain request took no lock.
	_, err = newClient(t, n.URL(), client.TLSConfig{CAFile: ca.File}).Get(ctxFor(t, time.Minute), "plain")
	if !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("get over https after the plain acquire: %v, want not held", err)
	}
}

func TestNode_ClientCARefusesClientsWithoutACertificateOfIt(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	other := testcerts.NewCA(t, "another CA")
	cfg := httpsConfig(t, ca)
	cfg.TLSClientCAFile = ca.File
	n := start(t, cfg)
	ctx := ctxFor(t, time.Minute)

	me, stranger := ca.Client(t, "ops"), other.Client(t, "stranger")
	for _, tc := range []struct {
		what string
		tls  client.TLSConfig
	}{
		{"no client certificate", client.TLSConfig{CAFile: ca.File}},
		{"a client certificate of another CA", client.TLSConfig{CAFile: ca.File, CertFile: stranger.CertFile, KeyFile: stranger.KeyFile}},
	} {
		_, err := newClient(t, n.URL(), tc.tls).AcquireOnce(ctx, "guarded", client.AcquireOptions{Owner: "intruder"})
		if err == nil || !strings.Contains(err.Error(), "tls") {
			t.Errorf("%s: acquire: %v, want a TLS refusal", tc.what, err)
		}
	}
	// Readiness probes need the certificate too: TLS is per connection.
	if _, err := http.Get("https://" + n.Addr() + "/readyz"); err == nil {
		t.Error("/readyz answered a client without a certificate")
	}

	c := newClient(t, n.URL(), client.TLSConfig{CAFile: ca.File, CertFile: me.CertFile, KeyFile: me.KeyFile})
	l, err := c.AcquireOnce(ctx, "guarded", client.AcquireOptions{Owner: "ops"})
	if err != nil {
		t.Fatalf("acquire with a certificate of the CA: %v", err)
	}
	if l.Owner != "ops" {
		t.Fatalf("lock owner %q: an intruder's acquire got through", l.Owner)
	}
}

func TestNode_ReloadTLSServesTheNewCertificateAndKeepsTheOldOnABadFile(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	cfg := httpsConfig(t, ca)
	n := start(t, cfg)
	before := servedSerial(t, n.Addr(), ca)

	renewed := ca.Server(t, "baton", "127.0.0.1")
	renewed.CopyTo(t, cfg.TLSCertFile, cfg.TLSKeyFile)
	if err := n.ReloadTLS(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := servedSerial(t, n.Addr(), ca); got != renewed.Cert.SerialNumber.String() || got == before {
		t.Fatalf("serial after reload %s, want the renewed %s (was %s)", got, renewed.Cert.SerialNumber, before)
	}

	if err := os.WriteFile(cfg.TLSKeyFile, []byte("half-written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.ReloadTLS(); err == nil || !strings.Contains(err.Error(), cfg.TLSKeyFile) {
		t.Fatalf("reload of a bad key: %v, want an error naming %s", err, cfg.TLSKeyFile)
	}
	if got := servedSerial(t, n.Addr(), ca); got != renewed.Cert.SerialNumber.String() {
		t.Fatalf("after a failed reload the node serves %s, want the pair in use, %s", got, renewed.Cert.SerialNumber)
	}
}

func TestNode_StartErrorsNameTheFlagAndStartNothing(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	srv, other := ca.Server(t, "baton", "127.0.0.1"), ca.Server(t, "other", "127.0.0.1")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	https := func(c *node.Config) {
		c.PeerURL = strings.Replace(c.PeerURL, "http://", "https://", 1)
	}
	for _, tc := range []struct {
		what  string
		tweak func(c *node.Config)
		want  []string
	}{
		{"a certificate without its key", func(c *node.Config) { c.TLSCertFile = srv.CertFile }, []string{"--tls-cert needs --tls-key"}},
		{"a key without its certificate", func(c *node.Config) { c.TLSKeyFile = srv.KeyFile }, []string{"--tls-key needs --tls-cert"}},
		{"a client CA without a certificate", func(c *node.Config) { c.TLSClientCAFile = ca.File }, []string{"--tls-client-ca needs --tls-cert"}},
		{"a missing certificate file", func(c *node.Config) { c.TLSCertFile, c.TLSKeyFile = missing, srv.KeyFile }, []string{"--tls-cert", missing}},
		{"a key of another certificate", func(c *node.Config) { c.TLSCertFile, c.TLSKeyFile = srv.CertFile, other.KeyFile }, []string{"--tls-cert", srv.CertFile, other.KeyFile}},
		{"a client CA file that is not PEM", func(c *node.Config) {
			c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile = srv.CertFile, srv.KeyFile, notPEM
		}, []string{"--tls-client-ca", notPEM}},
		{"a peer certificate without its key", func(c *node.Config) { https(c); c.PeerCertFile = srv.CertFile }, []string{"--peer-cert needs --peer-key"}},
		{"a peer CA without a certificate", func(c *node.Config) { c.PeerTrustedCAFile = ca.File }, []string{"--peer-trusted-ca needs --peer-cert"}},
		{"peer TLS on an http:// peer URL", func(c *node.Config) { c.PeerCertFile, c.PeerKeyFile = srv.CertFile, srv.KeyFile }, []string{"--peer-url", "must be https://"}},
		{"peer auto TLS on an http:// peer URL", func(c *node.Config) { c.PeerAutoTLS = true }, []string{"--peer-url", "--peer-auto-tls"}},
		{"an https:// peer URL without peer TLS", https, []string{"--peer-url", "peer TLS is off"}},
		{"peer auto TLS and a peer certificate", func(c *node.Config) {
			https(c)
			c.PeerAutoTLS, c.PeerCertFile, c.PeerKeyFile = true, srv.CertFile, srv.KeyFile
		}, []string{"--peer-cert and --peer-auto-tls"}},
		{"an http:// member in the initial cluster with peer TLS", func(c *node.Config) {
			https(c)
			c.PeerCertFile, c.PeerKeyFile = srv.CertFile, srv.KeyFile
			c.InitialCluster = "n1=" + c.PeerURL + ",n2=http://127.0.0.1:1"
		}, []string{"--initial-cluster member n2"}},
		{"a missing peer CA file", func(c *node.Config) {
			https(c)
			c.PeerCertFile, c.PeerKeyFile, c.PeerTrustedCAFile = srv.CertFile, srv.KeyFile, missing
		}, []string{"--peer-trusted-ca", missing}},
		{"peer client-cert auth without a certificate", func(c *node.Config) { c.PeerClientCertAuth = true }, []string{"--peer-client-cert-auth"}},
		{"client TLS on an http:// client URL", func(c *node.Config) { c.ClientCertFile, c.ClientKeyFile = srv.CertFile, srv.KeyFile }, []string{"--client-url", "must be https://"}},
		{"an etcd CA without --etcd-endpoints", func(c *node.Config) { c.EtcdCACertFile = ca.File }, []string{"--etcd-cacert"}},
		{"an etcd CA with an http:// endpoint", func(c *node.Config) {
			c.EtcdEndpoints, c.EtcdCACertFile = []string{"http://127.0.0.1:1"}, ca.File
		}, []string{"--etcd-endpoints", "must be https://"}},
		{"peer TLS with --etcd-endpoints", func(c *node.Config) {
			c.EtcdEndpoints, c.PeerCertFile, c.PeerKeyFile = []string{"https://127.0.0.1:1"}, srv.CertFile, srv.KeyFile
		}, []string{"--peer-cert configures the embedded etcd member"}},
		{"a compaction retention too short", func(c *node.Config) { c.Trail.CompactionRetention = 10 * time.Second }, []string{"--etcd-compaction-retention must be at least 30s"}},
		{"a compaction retention with --etcd-endpoints", func(c *node.Config) {
			c.EtcdEndpoints, c.Trail.CompactionRetention = []string{"https://127.0.0.1:1"}, 5*time.Minute
		}, []string{"--etcd-compaction-retention configures the embedded etcd member"}},
		{"an etcd client certificate without its key", func(c *node.Config) {
			c.EtcdEndpoints, c.EtcdCertFile = []string{"https://127.0.0.1:1"}, srv.CertFile
		}, []string{"--etcd-cert needs --etcd-key"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.DataDir = filepath.Join(cfg.DataDir, "never")
			tc.tweak(&cfg)
			n, err := node.Start(ctxFor(t, time.Minute), cfg)
			if err == nil {
				n.Close()
				t.Fatal("started")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, serr := os.Stat(cfg.DataDir); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("the failed start made its data dir (%v): it started something", serr)
			}
		})
	}
}

// clusterConfigs returns configurations of a cluster of n members on
// https:// peer URLs, each given to tweak with its index.
func clusterConfigs(t *testing.T, n int, tweak func(i int, c *node.Config)) []node.Config {
	cfgs := make([]node.Config, n)
	var ic []string
	for i := range cfgs {
		c := testConfig(t)
		c.Name = fmt.Sprintf("n%d", i+1)
		c.PeerURL = "https://" + testetcd.FreeAddr(t)
		ic = append(ic, c.Name+"="+c.PeerURL)
		cfgs[i] = c
	}
	for i := range cfgs {
		cfgs[i].InitialCluster = strings.Join(ic, ",")
		tweak(i, &cfgs[i])
	}
	return cfgs
}

// startAll starts the nodes together (each waits for a quorum) and stops
// them when the test ends.
func startAll(t *testing.T, cfgs []node.Config) []*node.Node {
	t.Helper()
	nodes := make([]*node.Node, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nodes[i], errs[i] = node.Start(ctx, cfgs[i])
		})
	}
	wg.Wait()
	for i, n := range nodes {
		if n != nil {
			t.Cleanup(func() { n.Close() })
		}
		if errs[i] != nil {
			t.Fatalf("start %s: %v", cfgs[i].Name, errs[i])
		}
	}
	return nodes
}

// lockAcrossNodes takes a lock on the first node and reads it on the last:
// only a working cluster (raft over the peer links) can answer that.
func lockAcrossNodes(t *testing.T, nodes []*node.Node, name string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	first, last := newClient(t, nodes[0].URL(), client.TLSConfig{}), newClient(t, nodes[len(nodes)-1].URL(), client.TLSConfig{})
	l, err := first.AcquireOnce(ctx, name, client.AcquireOptions{Owner: "w1", TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire on %s: %v", nodes[0].URL(), err)
	}
	got, err := last.Get(ctx, name)
	if err != nil || got.Token != l.Token || got.Owner != "w1" {
		t.Fatalf("the lock seen from %s: %+v, %v; want token %d", nodes[len(nodes)-1].URL(), got, err, l.Token)
	}
}

func TestCluster_PeerTLSWithACAFormsServesALockAndShutsOutAnotherCAsMember(t *testing.T) {
	if testing.Short() {
		t.Skip("forms clusters: not in the fast tier")
	}
	ca := testcerts.NewCA(t, "baton peers CA")
	cfgs := clusterConfigs(t, 3, func(i int, c *node.Config) {
		p := ca.Server(t, c.Name, "127.0.0.1")
		c.PeerCertFile, c.PeerKeyFile, c.PeerTrustedCAFile = p.CertFile, p.KeyFile, ca.File
	})
	nodes := startAll(t, cfgs)
	lockAcrossNodes(t, nodes, "peer-tls")

	// The peer port speaks TLS only, and only to holders of the CA's
	// certificates.
	peerAddr := strings.TrimPrefix(cfgs[0].PeerURL, "https://")
	if err := peerGet(peerAddr, ca, nil); err == nil {
		t.Fatal("the peer port served a request without a client certificate")
	}
	good := ca.Client(t, "probe").TLS(t)
	if err := peerGet(peerAddr, ca, &good); err != nil {
		t.Fatalf("the peer port refused a certificate of the CA: %v", err)
	}

	// A fourth member whose certificate another CA signed, and which
	// itself trusts the cluster's CA, asks to join: the others refuse its
	// certificate, so it never learns the cluster, let alone joins.
	evil := testcerts.NewCA(t, "another CA")
	rogue := clusterConfigs(t, 1, func(_ int, c *node.Config) {
		c.Name = "rogue"
		p := evil.Server(t, "rogue", "127.0.0.1")
		c.PeerCertFile, c.PeerKeyFile, c.PeerTrustedCAFile = p.CertFile, p.KeyFile, ca.File
	})[0]
	cli := etcdClient(t, nodes[0])
	ctx := ctxFor(t, time.Minute)
	// etcd refuses a member add until the member asked has been connected
	// to a quorum for a few seconds (its strict reconfiguration check).
	var added *clientv3.MemberAddResponse
	for {
		var err error
		if added, err = cli.MemberAddAsLearner(ctx, []string{rogue.PeerURL}); err == nil {
			break
		}
		if !errors.Is(err, rpctypes.ErrUnhealthy) || ctx.Err() != nil {
			t.Fatalf("member add: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // a retry's pace, not a wait for a condition
	}
	var ic []string
	for _, m := range added.Members {
		name := m.Name
		if m.ID == added.Member.ID {
			name = "rogue"
		}
		ic = append(ic, name+"="+m.PeerURLs[0])
	}
	rogue.InitialCluster, rogue.InitialClusterState = strings.Join(ic, ","), "existing"
	n, err := node.Start(ctxFor(t, 90*time.Second), rogue)
	if err == nil {
		n.Close()
		t.Fatal("a member with another CA's certificate started in the cluster")
	}
	t.Logf("the rogue member's start failed as it must: %v", err)
	members, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members.Members {
		if m.ID == added.Member.ID && m.Name != "" {
			t.Fatalf("the rogue member started and named itself %q in the cluster", m.Name)
		}
	}
	lockAcrossNodes(t, nodes, "peer-tls-after")
}

// peerGet GETs /version from the peer port at addr over TLS, presenting
// cert (nil: none). It returns what stopped the request, if anything.
func peerGet(addr string, ca *testcerts.CA, cert *tls.Certificate) error {
	tc := &tls.Config{RootCAs: ca.Pool()}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + addr + "/version")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// etcdClient is a client of n's etcd client URL (plain, on loopback).
func etcdClient(t *testing.T, n *node.Node) *clientv3.Client {
	t.Helper()
	st, err := newClient(t, n.URL(), client.TLSConfig{}).Cluster(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, m := range st.Members {
		eps = append(eps, m.ClientURLs...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestCluster_PeerAutoTLSFormsAClusterOnSelfSignedCertificates(t *testing.T) {
	if testing.Short() {
		t.Skip("forms a cluster: not in the fast tier")
	}
	cfgs := clusterConfigs(t, 3, func(_ int, c *node.Config) { c.PeerAutoTLS = true })
	nodes := startAll(t, cfgs)
	lockAcrossNodes(t, nodes, "auto-tls")

	// The peer port serves a certificate etcd made for itself: encrypted,
	// and anyone may connect, since nobody's certificate is checked.
	u, err := url.Parse(cfgs[0].PeerURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("tls dial the peer port: %v", err)
	}
	cert := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if cert.Issuer.String() != cert.Subject.String() || !cert.IsCA {
		t.Errorf("peer certificate issued by %q to %q: want etcd's self-signed one", cert.Issuer, cert.Subject)
	}
	if _, err := http.Get("http://" + u.Host + "/version"); err == nil {
		t.Error("the peer port answered plain HTTP")
	}
}

func TestNode_ExternalEtcdOverTLSWithAClientCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a member and a node over TLS: not in the fast tier")
	}
	ca := testcerts.NewCA(t, "etcd client CA")
	// A node whose member serves its client port over TLS, and requires
	// a certificate of the CA there.
	cfg := testConfig(t)
	srv := ca.Server(t, "etcd", "127.0.0.1")
	cfg.ClientURL = "https://" + testetcd.FreeAddr(t)
	cfg.ClientCertFile, cfg.ClientKeyFile, cfg.ClientTrustedCAFile = srv.CertFile, srv.KeyFile, ca.File
	owner := start(t, cfg)

	// A node without a member of its own, on that etcd.
	me := ca.Client(t, "baton")
	ext := testConfig(t)
	ext.EtcdEndpoints = []string{cfg.ClientURL}
	ext.EtcdCACertFile, ext.EtcdCertFile, ext.EtcdKeyFile = ca.File, me.CertFile, me.KeyFile
	guest := start(t, ext)
	lockAcrossNodes(t, []*node.Node{guest, owner}, "external-tls")

	// Without a certificate of the CA the client port serves nothing.
	bare, err := clientv3.New(clientv3.Config{Endpoints: []string{cfg.ClientURL}, DialTimeout: 5 * time.Second, TLS: &tls.Config{RootCAs: ca.Pool()}})
	if err == nil {
		defer bare.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := bare.Get(ctx, "x"); err == nil {
			t.Error("the client port served a client without a certificate")
		}
	}
}
