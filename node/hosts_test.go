package node_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/node"
)

// getAs sends GET path to the node at addr, naming host as Host, and
// returns the status and the problem code, if any.
func getAs(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", path, host, err)
	}
	defer resp.Body.Close()
	var p struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&p)
	return resp.StatusCode, p.Code
}

// TestNode_OnLoopbackAnswersTheLoopbackNamesOnly: the default of a node on
// 127.0.0.1, the default address, defeats DNS rebinding: a page's own name
// resolving to 127.0.0.1 gets 421, the node's loopback names get answers.
func TestNode_OnLoopbackAnswersTheLoopbackNamesOnly(t *testing.T) {
	n := start(t, testConfig(t))
	_, port, _ := net.SplitHostPort(n.Addr())
	if st, code := getAs(t, n.Addr(), "rebind.evil.example:"+port, "/v1/cluster"); st != http.StatusMisdirectedRequest || code != "host_not_allowed" {
		t.Errorf("a foreign Host: %d %q, want 421 host_not_allowed", st, code)
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port} {
		if st, _ := getAs(t, n.Addr(), host, "/v1/cluster"); st != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, st)
		}
	}
	if st, _ := getAs(t, n.Addr(), "10.0.0.1:"+port, "/readyz"); st != http.StatusOK {
		t.Errorf("a probe by another name: %d, want 200 (probes answer any Host)", st)
	}
}

// TestNode_OnAllInterfacesAnswersAnyHostByDefault: a node on another
// address is reached by names the operator chose.
func TestNode_OnAllInterfacesAnswersAnyHostByDefault(t *testing.T) {
	cfg := testConfig(t)
	_, port, _ := net.SplitHostPort(cfg.HTTPAddr)
	cfg.HTTPAddr = "0.0.0.0:" + port
	start(t, cfg)
	for _, host := range []string{"baton.example.com", "10.0.0.1:" + port, "127.0.0.1:" + port} {
		if st, _ := getAs(t, "127.0.0.1:"+port, host, "/v1/cluster"); st != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, st)
		}
	}
}

func TestNode_AllowedHostsReplaceTheDefault(t *testing.T) {
	cfg := testConfig(t)
	cfg.AllowedHosts = []string{"baton.example.com"}
	n := start(t, cfg)
	if st, _ := getAs(t, n.Addr(), "baton.example.com", "/v1/cluster"); st != http.StatusOK {
		t.Errorf("the listed Host: %d, want 200", st)
	}
	if st, code := getAs(t, n.Addr(), n.Addr(), "/v1/cluster"); st != http.StatusMisdirectedRequest || code != "host_not_allowed" {
		t.Errorf("the loopback address, not listed: %d %q, want 421 host_not_allowed", st, code)
	}
}

func TestNode_AnAllowedHostWithAPortIsRefusedAtStart(t *testing.T) {
	cfg := testConfig(t)
	cfg.AllowedHosts = []string{"localhost", "baton.example.com:8080"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := node.Start(ctx, cfg); err == nil || n != nil || !strings.Contains(err.Error(), "--allowed-hosts") || !strings.Contains(err.Error(), "port") {
		t.Fatalf("start with --allowed-hosts baton.example.com:8080: node %v, err %v; want an error naming the flag and the port", n, err)
	}
}
