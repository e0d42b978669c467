package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// LoopbackHosts are the Host names a node listening on a loopback address
// answers by default (DefaultAllowedHosts), with any port.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "[::1]"}

// AnyHost in an allowed-hosts list answers every Host.
const AnyHost = "*"

// DefaultAllowedHosts is the Host rule of a node whose HTTP API listens at
// addr (host:port): LoopbackHosts when the host is a loopback address or
// "localhost", else nil (any Host). A page of any site can make a browser
// on the node's machine call a loopback address, and DNS rebinding makes
// it a page of the same origin as the node (its name now resolving to
// 127.0.0.1): the browser then sends that name as Host, which a loopback
// node never has reason to answer. A node on another address is reached
// by names the operator chose, which the node cannot know.
func DefaultAllowedHosts(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return LoopbackHosts
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return LoopbackHosts
	}
	return nil
}

// CheckAllowedHosts reports the first entry of an allowed-hosts list that
// can never match a Host: an empty one, one with a port (every port of a
// name is answered), a scheme or a path, or a wildcard pattern (AnyHost
// alone is the one wildcard).
func CheckAllowedHosts(hosts []string) error {
	for _, h := range hosts {
		switch {
		case h == AnyHost:
		case strings.Contains(h, "*"):
			return fmt.Errorf("allowed host %q: the only wildcard is %s alone, for any Host; list each name", h, AnyHost)
		case h == "" || strings.ContainsAny(h, "/ \t,@?#"):
			return fmt.Errorf("allowed host %q is no host name: give names such as baton.example.com or 10.0.0.1, or %s for any", h, AnyHost)
		case hostName(h) != strings.ToLower(strings.Trim(h, "[]")):
			return fmt.Errorf("allowed host %q has a port: give the name alone, every port of it is answered", h)
		}
	}
	return nil
}

// allowHosts answers 421 host_not_allowed to a request whose Host (its
// name, whatever the port) is not in hosts, before anything else reads
// it. An empty list, or one holding AnyHost, answers every Host.
//
// The probes /healthz and /readyz answer any Host: orchestrators and load
// balancers probe by IP address, and often by one the operator did not
// list, and a probe that fails for its Host restarts a healthy node. They
// change nothing and tell a page no more than that a node is up, which
// reaching the port tells already.
func allowHosts(hosts []string, log *slog.Logger) echo.MiddlewareFunc {
	allowed := map[string]bool{}
	for _, h := range hosts {
		if h == AnyHost {
			allowed = nil
			break
		}
		allowed[hostName(h)] = true
	}
	if len(allowed) == 0 {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			switch req.URL.Path {
			case "/healthz", "/readyz":
				return next(c)
			}
			if allowed[hostName(req.Host)] {
				return next(c)
			}
			log.Info("request refused", "status", http.StatusMisdirectedRequest, "method", req.Method, "path", clip(req.URL.Path), "remote", c.RealIP(),
				"reason", "host_not_allowed", "host", clip(req.Host))
			// The detail does not list the names answered: a node reached
			// by its IP would tell anyone the names it serves under.
			return fmt.Errorf("%w: this node does not answer the Host %q; reach it by a name of its --allowed-hosts", ErrHostNotAllowed, clip(req.Host))
		}
	}
}

// hostName is the name of a Host header value or an allowed-hosts entry,
// lower case, without port and without the brackets of an IPv6 address:
// "[::1]:8080" and "[::1]" are "::1", "LocalHost:80" is "localhost".
func hostName(h string) string {
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return strings.ToLower(h)
}
