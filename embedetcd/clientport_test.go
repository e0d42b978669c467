package embedetcd_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/tests/testetcd"
)

// TestStart_WithoutAClientURLTheSocketInThePrivateDataDirIsTheOnlyWayIn:
// no TCP client listener, yet etcd clients on the machine (etcdctl,
// "baton member") reach the member through its socket.
func TestStart_WithoutAClientURLTheSocketInThePrivateDataDirIsTheOnlyWayIn(t *testing.T) {
	cfg := testetcd.Config(t)
	if err := os.Chmod(cfg.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.ClientURL, cfg.ClientSocket = "", true
	m := testetcd.StartConfig(t, cfg)

	if n := len(m.Etcd().Clients); n != 1 {
		t.Fatalf("%d client listeners, want 1 (the socket)", n)
	}
	if got := m.Etcd().Clients[0].Addr().Network(); got != "unix" {
		t.Fatalf("client listener on %s, want unix", got)
	}
	fi, err := os.Stat(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Fatalf("data dir mode %v, want 0700: the socket is as private as its directory", perm)
	}
	sock, err := os.Stat(filepath.Join(cfg.Dir, embedetcd.SocketName))
	if err != nil || sock.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no socket in the data dir: %v %v", sock, err)
	}
	if perm := sock.Mode().Perm(); perm != 0o600 {
		t.Fatalf("socket mode %v, want 0600", perm)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.Client().Put(ctx, "k", "in-process"); err != nil {
		t.Fatalf("in-process put: %v", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{embedetcd.SocketURL(cfg.Dir)}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "in-process" {
		t.Fatalf("get over the socket: %v %v", resp, err)
	}
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ml.Members[0].ClientURLs; len(got) != 1 || got[0] != embedetcd.SocketURL(cfg.Dir) {
		t.Fatalf("member advertises client URLs %v, want only its socket %s", got, embedetcd.SocketURL(cfg.Dir))
	}
}

func TestValidate_NoClientURLMeansNoTCPSettingsAndAShortSocketPath(t *testing.T) {
	for _, tc := range []struct {
		what  string
		tweak func(c *embedetcd.Config)
		want  string
	}{
		{"no client URL", func(c *embedetcd.Config) { c.ClientURL = "" }, ""},
		{"the socket alone", func(c *embedetcd.Config) { c.ClientURL, c.ClientSocket = "", true }, ""},
		{"a listen URL without a client URL", func(c *embedetcd.Config) { c.ClientURL, c.ListenClientURL = "", "http://0.0.0.0:2379" }, "ListenClientURL is set without ClientURL"},
		{"client TLS without a client URL", func(c *embedetcd.Config) { c.ClientURL, c.ClientAutoTLS = "", true }, "need a ClientURL"},
		{"a socket path too long", func(c *embedetcd.Config) { c.ClientSocket, c.Dir = true, "/"+strings.Repeat("d", 100) }, "over the 103"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			cfg := testetcd.Config(t)
			tc.tweak(&cfg)
			err := cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}

// send asks the member's client port over plain HTTP for path, with host
// as the Host header, origin as Origin (when not empty) and body as a
// text/plain body: what a page on any site may send without a preflight.
func send(t *testing.T, method, addr, path, host, origin, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "text/plain")
	if origin != "" {
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

const evil = "http://evil.example"

// TestClientPort_AnswersNoBrowserPageAndOnlyLoopbackHostsOnLoopback: a
// page on any site that a browser on the member's machine opens must not
// read or change etcd through the client port, by CORS, by a request
// that needs no preflight, or by DNS rebinding.
func TestClientPort_AnswersNoBrowserPageAndOnlyLoopbackHostsOnLoopback(t *testing.T) {
	cfg := testetcd.Config(t)
	m := testetcd.StartConfig(t, cfg)
	addr := strings.TrimPrefix(cfg.ClientURL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, method := range []string{"OPTIONS", "GET"} {
		resp := send(t, method, addr, "/version", addr, evil, "")
		if acao := resp.Header.Values("Access-Control-Allow-Origin"); len(acao) != 0 {
			t.Errorf("%s /version with Origin %s: Access-Control-Allow-Origin %q, want none", method, evil, acao)
		}
	}
	// etcd's JSON gateway would run this delete (it reads JSON whatever
	// the Content-Type); without it there is nothing to run it.
	if _, err := m.Client().Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	send(t, "POST", addr, "/v3/kv/deleterange", addr, evil, `{"key":"aw=="}`)
	if resp, err := m.Client().Get(ctx, "k"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("a cross-site text/plain POST to /v3/kv/deleterange: key k %v (%v), want it still there", resp, err)
	}

	for host, want := range map[string]int{
		"evil.example":                  http.StatusMisdirectedRequest,
		"evil.example:" + port:          http.StatusMisdirectedRequest,
		"rebound.attacker.test:" + port: http.StatusMisdirectedRequest,
		"127.0.0.1:" + port:             http.StatusOK,
		"localhost:" + port:             http.StatusOK,
		"localhost":                     http.StatusOK,
		"[::1]:" + port:                 http.StatusOK,
	} {
		if resp := send(t, "GET", addr, "/version", host, "", ""); resp.StatusCode != want {
			t.Errorf("GET /version with Host %q: %s, want %d", host, resp.Status, want)
		}
	}
}

// TestClientPort_WithTheJSONGatewayStillAnswersNoForeignOrigin: asked
// for, the gateway serves etcd's JSON, and a page still cannot read it.
func TestClientPort_WithTheJSONGatewayStillAnswersNoForeignOrigin(t *testing.T) {
	cfg := testetcd.Config(t)
	cfg.JSONGateway = true
	testetcd.StartConfig(t, cfg)
	addr := strings.TrimPrefix(cfg.ClientURL, "http://")
	if resp := send(t, "POST", addr, "/v3/kv/range", addr, "", `{"key":"aw=="}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("a range through the gateway: %s, want 200", resp.Status)
	}
	for _, method := range []string{"OPTIONS", "POST"} {
		resp := send(t, method, addr, "/v3/kv/range", addr, evil, `{"key":"aw=="}`)
		if acao := resp.Header.Values("Access-Control-Allow-Origin"); len(acao) != 0 {
			t.Errorf("%s /v3/kv/range with Origin %s: Access-Control-Allow-Origin %q, want none", method, evil, acao)
		}
	}
}

// TestClientPort_FollowsTheAllowedHostsItIsGiven: baton passes its own
// --allowed-hosts down, so the client port answers the names the HTTP API
// answers.
func TestClientPort_FollowsTheAllowedHostsItIsGiven(t *testing.T) {
	cfg := testetcd.Config(t)
	cfg.AllowedHosts = []string{"baton.internal", "[::1]"}
	testetcd.StartConfig(t, cfg)
	addr := strings.TrimPrefix(cfg.ClientURL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	for host, want := range map[string]int{
		"baton.internal:" + port: http.StatusOK,
		"[::1]:" + port:          http.StatusOK,
		"localhost:" + port:      http.StatusMisdirectedRequest,
		"evil.example:" + port:   http.StatusMisdirectedRequest,
	} {
		if resp := send(t, "GET", addr, "/version", host, "", ""); resp.StatusCode != want {
			t.Errorf("GET /version with Host %q: %s, want %d", host, resp.Status, want)
		}
	}
}
