package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/client"
)

// healthcheckCmd probes one node, for a container's HEALTHCHECK. Every
// failure exits 1, usage mistakes included: Docker reserves exit code 2.
func healthcheckCmd(g *globals) *cobra.Command {
	var live bool
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if a node is ready (GET /readyz), 1 if not: a container HEALTHCHECK",
		Long: `healthcheck asks one node for GET /readyz (with --live, GET /healthz) and
exits 0 on 200, or 1 with one line on stderr otherwise.

The node is --addr, else BATON_ADDR, else the node's own listen address:
BATON_HTTP_ADDR with 0.0.0.0 (or no host) read as 127.0.0.1, over https://
when BATON_TLS_CERT is set. So inside a container it checks the baton of
that container with no flags at all. With HTTPS, trust the node's CA with
--cacert (BATON_CACERT), and give a client certificate with --cert and --key
(BATON_CERT, BATON_KEY) when the node asks for one (--tls-client-ca); the
node's certificate must then name the address checked (127.0.0.1 inside a
container).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &ExitError{Code: ExitFailure, Err: errors.New("healthcheck takes no arguments")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return &ExitError{Code: ExitFailure, Err: errors.New("--timeout must be positive")}
			}
			base, err := healthAddr(g.addr)
			if err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			path := "/readyz"
			if live {
				path = "/healthz"
			}
			env := client.DefaultConfig().TLSConfig
			return probe(cmd.Context(), base+path, g.tlsConfig(env), timeout)
		},
	}
	c.Flags().StringVar(&g.addr, "addr", "", "the node to check (env BATON_ADDR; default: BATON_HTTP_ADDR as seen from the same host, else http://127.0.0.1:8080)")
	c.Flags().BoolVar(&live, "live", false, "check liveness (/healthz: the process answers) instead of readiness (/readyz: it can serve locks)")
	c.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	addTLSFlags(c, g)
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: ExitFailure, Err: err} })
	c.SilenceUsage = true
	return c
}

// healthAddr is the base URL to check: flag, BATON_ADDR, BATON_HTTP_ADDR
// (what this host's node listens on), DefaultAddr.
func healthAddr(flag string) (string, error) {
	addr, fromListen := flag, false
	if addr == "" {
		addr = strings.TrimSpace(os.Getenv("BATON_ADDR"))
	}
	if addr == "" {
		addr, fromListen = strings.TrimSpace(os.Getenv("BATON_HTTP_ADDR")), true
	}
	if addr == "" {
		return client.DefaultAddr, nil
	}
	if strings.Contains(addr, ",") {
		return "", fmt.Errorf("healthcheck checks one node, not %q", addr)
	}
	if fromListen {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("BATON_HTTP_ADDR %q: %w", addr, err)
		}
		// A wildcard listen address is reached on loopback, which is
		// where a check from the same host or container comes from.
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		scheme := "http://"
		if os.Getenv("BATON_TLS_CERT") != "" {
			scheme = "https://"
		}
		return scheme + net.JoinHostPort(host, port), nil
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return strings.TrimSuffix(addr, "/"), nil
}

// probe GETs url and returns nil on 200, else an exit-1 error of one line.
func probe(ctx context.Context, url string, tlsc client.TLSConfig, timeout time.Duration) error {
	fail := func(format string, args ...any) error {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("unhealthy: "+format, args...)}
	}
	tc, err := client.SetupTLSConfig(tlsc)
	if err != nil {
		return fail("%v", err)
	}
	// A transport of its own without proxies (a proxy from the environment
	// must not stand between a container and itself), speaking HTTP/1.1:
	// over HTTP/2 a refused handshake loses its reason.
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tc}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fail("%v", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fail("%v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	// The problem's detail says why (no leader, etcd not answering).
	var p struct {
		Detail string `json:"detail"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if json.Unmarshal(b, &p) == nil && p.Detail != "" {
		return fail("GET %s: %s: %s", url, resp.Status, p.Detail)
	}
	return fail("GET %s: %s", url, resp.Status)
}
