package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/tlsfiles"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/trail"
)

// Node is a running baton node.
type Node struct {
	cfg      Config
	log      *slog.Logger
	member   *embedetcd.Member // nil with external etcd
	extCli   *clientv3.Client  // nil with the embedded member
	eng      *lock.Engine
	trail    *trail.Trail
	srv      *server.Server
	auth     *auth.Store // nil without AuthFile
	listener net.Listener
	httpCert *tlsfiles.KeyPair // nil without --tls-cert
	errc     chan error
	once     sync.Once
	closing  atomic.Bool
	// started is set once Start succeeded: a start that failed has
	// nothing to report stopped, its error says it all.
	started atomic.Bool
}

// Start starts etcd (or connects to it), the engine and the HTTP server,
// and returns once the node answers requests. On error, everything it
// started is stopped again.
func Start(ctx context.Context, cfg Config) (n *Node, err error) {
	log, err := cfg.logger()
	if err != nil {
		return nil, err
	}
	cfg.Logger = log
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Every file is read before anything starts: a bad one fails the start
	// at once, naming its flag and file.
	files, err := cfg.readFiles(log)
	if err != nil {
		return nil, err
	}
	n = &Node{cfg: cfg, log: log, errc: make(chan error, 2), httpCert: files.httpCert, auth: files.auth}
	// The cleanup holds its own reference to the node: a failing
	// "return nil, err" sets n to nil before deferred calls run.
	started := n
	defer func() {
		if err != nil {
			started.Close()
		}
	}()
	cli, err := n.startEtcd(ctx, files)
	if err != nil {
		return nil, err
	}
	if err := n.startEngine(ctx, cli, files.clientTLS); err != nil {
		return nil, err
	}
	hosts, err := n.serveHTTP(files.httpTLS)
	if err != nil {
		return nil, err
	}
	n.logServing(hosts)
	n.started.Store(true)
	return n, nil
}

// logger is cfg.Logger, or else a text logger to stderr at LogLevel.
func (c Config) logger() (*slog.Logger, error) {
	if c.Logger != nil {
		return c.Logger, nil
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", c.LogLevel)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// startFiles is what Start reads before it starts anything.
type startFiles struct {
	httpCert           *tlsfiles.KeyPair // nil without --tls-cert
	httpTLS, etcdTLS   *tls.Config
	peerTLS, clientTLS transport.TLSInfo
	auth               *auth.Store // nil without --auth-file
}

func (c Config) readFiles(log *slog.Logger) (f startFiles, err error) {
	if f.httpCert, f.httpTLS, err = c.httpTLS(); err != nil {
		return f, err
	}
	if f.etcdTLS, err = c.etcdClientTLS(); err != nil {
		return f, err
	}
	if f.peerTLS, f.clientTLS, err = c.memberTLS(); err != nil {
		return f, err
	}
	if c.AuthFile != "" {
		if f.auth, err = auth.Load(c.AuthFile); err != nil {
			return f, err
		}
		warnLooseMode(log, c.AuthFile)
		c.warnUnverifiedCertificates(log, f.auth.Current())
	}
	return f, nil
}

// startEtcd connects to EtcdEndpoints, or else starts the embedded
// member, and returns the engine's client.
func (n *Node) startEtcd(ctx context.Context, files startFiles) (*clientv3.Client, error) {
	cfg := n.cfg
	if len(cfg.EtcdEndpoints) > 0 {
		cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, DialTimeout: 5 * time.Second, Context: ctx, TLS: files.etcdTLS})
		if err != nil {
			return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(cfg.EtcdEndpoints, ","), err)
		}
		n.extCli = cli
		return cli, nil
	}
	m, err := embedetcd.Start(ctx, n.memberConfig(files))
	if err != nil {
		return nil, err
	}
	n.member = m
	go n.watchMember()
	return m.Client(), nil
}

// memberConfig is the embedded member's configuration.
func (n *Node) memberConfig(files startFiles) embedetcd.Config {
	cfg := n.cfg
	ec := embedetcd.NewConfig()
	ec.Name, ec.Dir = cfg.Name, cfg.DataDir
	ec.PeerURL, ec.InitialCluster = cfg.PeerURL, cfg.InitialCluster
	ec.ClusterState = cfg.InitialClusterState
	ec.ListenPeerURL = cfg.ListenPeerURL
	ec.PeerTLSInfo, ec.PeerAutoTLS = files.peerTLS, cfg.PeerAutoTLS
	ec.JSONGateway = cfg.ClientJSONGateway
	ec.AllowedHosts = cfg.AllowedHosts
	if cfg.ServesClientTCP() {
		ec.ClientURL, ec.ListenClientURL = cfg.ClientURL, cfg.ListenClientURL
		ec.ClientTLSInfo, ec.ClientAutoTLS = files.clientTLS, cfg.ClientAutoTLS
	} else {
		ec.ClientURL, ec.ClientSocket = "", true
		why := "--client-url is empty"
		if cfg.ClientURL != "" {
			why = "with --auth-file it is served only with --client-trusted-ca"
		}
		n.log.Info("etcd client port not served over TCP; baton member and snapshot save reach this member through its socket",
			"reason", why, "socket", embedetcd.SocketURL(cfg.DataDir))
	}
	ec.QuotaBackendBytes = cfg.BackendQuota
	ec.StartTimeout = cfg.StartTimeout
	ec.CompactionRetention = 0 // the engine compacts (startEngine)
	if cfg.LogLevel == "debug" {
		ec.LogLevel = "debug"
	}
	return ec
}

// startEngine starts the lock engine on cli with the node's lock.Config,
// telling it whether it runs on the node's own member, and the audit
// trail beside it.
func (n *Node) startEngine(ctx context.Context, cli *clientv3.Client, clientTLS transport.TLSInfo) (err error) {
	lc := n.cfg.Config
	lc.Embedded, lc.DialMember = nil, nil
	if n.member != nil {
		lc.Embedded, lc.DialMember = n.member, dialMember(clientTLS)
	}
	if n.eng, err = lock.New(ctx, cli, lc); err != nil {
		return err
	}
	tc := n.cfg.Trail
	tc.BackendQuota, tc.Logger = lc.BackendQuota, lc.Logger
	if n.member == nil {
		tc.CompactionRetention = 0 // external etcd compacts itself
	}
	n.trail, err = trail.New(ctx, n.eng, tc)
	return err
}

// serveHTTP starts the HTTP server on HTTPAddr (over TLS with httpTLS)
// and returns the Host names it answers; none means any.
func (n *Node) serveHTTP(httpTLS *tls.Config) ([]string, error) {
	cfg := n.cfg
	hosts := cfg.AllowedHosts
	if len(hosts) == 0 {
		hosts = server.DefaultAllowedHosts(cfg.HTTPAddr)
	}
	n.srv = server.New(server.Config{
		Engine: n.eng, Trail: n.trail, Logger: n.log, AccessLog: cfg.AccessLog, Auth: n.auth, AllowedHosts: hosts,
		RateLimit: cfg.RateLimit, CredentialRateLimit: cfg.CredentialRateLimit, StreamLimits: cfg.StreamLimits,
	})
	var err error
	if n.listener, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	if httpTLS != nil {
		n.listener = tls.NewListener(n.listener, httpTLS)
	}
	go func() {
		if err := n.srv.Serve(n.listener); err != nil {
			n.errc <- fmt.Errorf("http server: %w", err)
		}
	}()
	return hosts, nil
}

func (n *Node) logServing(hosts []string) {
	allowed := strings.Join(hosts, ",")
	if allowed == "" {
		allowed = server.AnyHost
	}
	n.log.Info("baton serving", "http", n.URL(), "name", n.cfg.Name,
		"data_dir", n.cfg.DataDir, "embedded_etcd", n.member != nil, "auth", n.auth != nil, "allowed_hosts", allowed)
	if n.httpCert != nil {
		leaf := n.httpCert.Leaf()
		n.log.Info("https certificate", "cert_file", n.cfg.TLSCertFile, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter,
			"client_cert_required", n.cfg.TLSClientCAFile != "")
	}
}

// ErrRemoved is what Err reports when this node's member was removed from
// the cluster ("baton member remove"): the node has nothing left to serve.
var ErrRemoved = errors.New("this node's etcd member was removed from the cluster")

// watchMember reports the embedded member's end on errc, unless Close
// caused it: a member that stopped on its own leaves a node that could
// only answer 503.
func (n *Node) watchMember() {
	select {
	case err := <-n.member.Err():
		if err != nil && !n.closing.Load() {
			n.errc <- fmt.Errorf("embedded etcd: %w", err)
		}
	case <-n.member.Stopped():
		switch {
		case n.closing.Load():
		case n.member.Removed():
			n.errc <- ErrRemoved
		default:
			n.errc <- errors.New("embedded etcd stopped on its own; see its log above")
		}
	}
}

// Addr is the address the HTTP server listens on.
func (n *Node) Addr() string { return n.listener.Addr().String() }

// URL is the HTTP API's base URL: https://ADDR with --tls-cert, else http://ADDR.
func (n *Node) URL() string {
	if n.httpCert != nil {
		return "https://" + n.Addr()
	}
	return "http://" + n.Addr()
}

// ReloadTLS reads the HTTP API's certificate and key files again; main
// calls it on SIGHUP. Connections made from then on get the new pair;
// on error the pair in use stays and the error names the file. It does
// nothing when the API serves plain HTTP. The client CA is read only at
// start, and etcd's own certificates need no reload: etcd reads those
// files at every handshake.
func (n *Node) ReloadTLS() error {
	if n.httpCert == nil {
		return nil
	}
	if err := n.httpCert.Reload(); err != nil {
		n.log.Error("tls reload failed, keeping the certificate in use", "err", err)
		return fmt.Errorf("reload --tls-cert/--tls-key: %w", err)
	}
	leaf := n.httpCert.Leaf()
	n.log.Info("tls certificate reloaded", "cert_file", n.cfg.TLSCertFile, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	return nil
}

// Engine returns the node's lock engine.
func (n *Node) Engine() *lock.Engine { return n.eng }

// Trail returns the node's audit trail.
func (n *Node) Trail() *trail.Trail { return n.trail }

// Err reports a fatal error of the HTTP server or the embedded member.
func (n *Node) Err() <-chan error { return n.errc }

// Close shuts down in reverse order of start: it drains HTTP requests
// (waiting acquires are ended so they do not hold the drain up), stops the
// engine's background work, then etcd. Calling it again is a no-op.
func (n *Node) Close() error {
	var errs []error
	n.once.Do(func() {
		n.closing.Store(true)
		if n.srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
			if n.eng != nil {
				n.eng.StopWaiting()
			}
			if n.trail != nil {
				n.trail.StopStreams()
			}
			if err := n.srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("drain http: %w", err))
			}
			cancel()
		} else if n.listener != nil {
			n.listener.Close()
		}
		if n.trail != nil {
			n.trail.Close()
		}
		if n.eng != nil {
			n.eng.Close()
		}
		if n.member != nil {
			n.member.Close()
		}
		if n.extCli != nil {
			n.extCli.Close()
		}
		if n.started.Load() {
			n.log.Info("baton stopped", "name", n.cfg.Name)
		}
	})
	return errors.Join(errs...)
}

// Reload re-reads what can change while the node runs: the auth file and
// the HTTPS certificate (ReloadTLS). A file that cannot be used leaves what
// is in force as it was, and the error names the file or the line at fault
// (never a token). main calls it on SIGHUP.
func (n *Node) Reload() error {
	return errors.Join(n.reloadAuth(), n.ReloadTLS())
}

func (n *Node) reloadAuth() error {
	if n.auth == nil {
		return nil
	}
	c, err := n.auth.Reload()
	if err != nil {
		n.log.Error("reload: auth file rejected, the credentials in force stay", "err", err)
		return err
	}
	warnLooseMode(n.log, n.auth.Path())
	n.cfg.warnUnverifiedCertificates(n.log, c)
	attrs := []any{"file", n.auth.Path(), "read", c.Count(auth.Read), "write", c.Count(auth.Write), "admin", c.Count(auth.Admin)}
	if k := c.JWTKeys(); k > 0 {
		attrs = append(attrs, "jwt_keys", k)
	}
	if k := c.Certificates(); k > 0 {
		attrs = append(attrs, "certificates", k)
	}
	n.log.Info("reload: credentials swapped", attrs...)
	return nil
}

// warnUnverifiedCertificates warns when the policy names credentials by
// client certificates that the API never asks for: without
// --tls-client-ca no request carries a verified one.
func (c Config) warnUnverifiedCertificates(log *slog.Logger, creds *auth.Credentials) {
	if creds.Certificates() > 0 && c.TLSClientCAFile == "" {
		log.Warn("the auth file lists client certificates, but the API verifies none: they prove no credential without --tls-client-ca", "file", c.AuthFile)
	}
}

// warnLooseMode warns when others than the file's owner may read an auth
// file: its tokens are passwords.
func warnLooseMode(log *slog.Logger, path string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("auth file is readable by others than its owner; chmod 600 it", "file", path, "mode", fi.Mode().Perm().String())
	}
}
