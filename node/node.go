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

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/internal/tlsfiles"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
)

// Config describes a node; the fields mirror the command-line flags.
type Config struct {
	HTTPAddr       string
	DataDir        string
	Name           string
	PeerURL        string
	ClientURL      string
	InitialCluster string
	// ListenPeerURL and ListenClientURL override where etcd listens;
	// empty means PeerURL and ClientURL.
	ListenPeerURL, ListenClientURL string
	// InitialClusterState is "new" to form a cluster, "existing" to join
	// one that a "baton member add" made room in. Only the first start on
	// an empty data dir reads it.
	InitialClusterState string
	// EtcdEndpoints, when set, makes the node a client of that etcd
	// cluster instead of embedding a member.
	EtcdEndpoints []string
	// LogLevel is baton's: debug, info, warn or error. etcd's own logs stay
	// at warn unless it is debug.
	LogLevel         string
	HistoryRetention time.Duration
	ShutdownTimeout  time.Duration
	// AccessLog writes one info line per HTTP request (server.Config).
	AccessLog bool
	// RateLimit and RateBurst limit each client address (requests per
	// second, 0 = off; burst 0 = one second's worth).
	RateLimit float64
	RateBurst int
	// CredentialRateLimit and CredentialRateBurst limit each credential.
	CredentialRateLimit float64
	CredentialRateBurst int
	// Caps; 0 means none. See lock.Config.
	MaxWaitersPerLock  int
	MaxLocksPerSession int
	MaxSessions        int
	// MaxLocks, MaxFencedValues and MaxFencedValueBytes bound what clients
	// can make etcd store (lock.Config).
	MaxLocks            int
	MaxFencedValues     int
	MaxFencedValueBytes int
	// EtcdQuotaBytes is the embedded member's backend quota (etcd's
	// --quota-backend-bytes); 0 means etcd's default, 2 GiB. With
	// --etcd-endpoints it tells baton the external cluster's quota.
	EtcdQuotaBytes int64
	// MaxEventStreams caps this node's event streams (lock.Config).
	MaxEventStreams int
	// MaxEventStreamsPerAddress and MaxEventStreamsPerCredential cap the
	// event streams of one client address and of one credential on this
	// node (server.StreamLimits); 0 means no cap.
	MaxEventStreamsPerAddress, MaxEventStreamsPerCredential int
	// AllowedHosts are the Host names the HTTP API answers, any port
	// (server.Config.AllowedHosts; server.AnyHost for any); others get 421
	// host_not_allowed. Empty means server.DefaultAllowedHosts(HTTPAddr):
	// the loopback names on a loopback address, else any.
	AllowedHosts []string
	// AuthFile, when set, turns authentication on with the credentials
	// of this file (see package auth); Reload reads it again.
	AuthFile string
	// Logger overrides the logger built from LogLevel.
	Logger *slog.Logger

	// TLSCertFile and TLSKeyFile, when set, make the HTTP API HTTPS only
	// (TLS 1.2 or later, Go's default cipher suites): a plain HTTP request
	// on HTTPAddr is refused at the handshake. ReloadTLS reads them again.
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile makes the API require a client certificate signed by
	// a CA of this PEM file (read once, at start).
	TLSClientCAFile string

	// PeerCertFile, PeerKeyFile and PeerTrustedCAFile put the embedded
	// member's traffic with other members on TLS; see
	// embedetcd.Config.PeerTLSInfo. With PeerTrustedCAFile every peer must
	// present a certificate that CA signed (etcd's rule). PeerClientCertAuth
	// requires client certificates without a CA too, verified against the
	// system's roots. PeerAutoTLS uses a self-signed certificate instead:
	// encrypted, not authenticated.
	PeerCertFile, PeerKeyFile, PeerTrustedCAFile string
	PeerClientCertAuth                           bool
	PeerAutoTLS                                  bool
	// ClientCertFile, ClientKeyFile, ClientTrustedCAFile and ClientAutoTLS
	// do the same for the embedded member's client URL (etcdctl, "baton
	// member"); with ClientTrustedCAFile every client must present a
	// certificate that CA signed. With AuthFile the client URL is served
	// only with ClientTrustedCAFile (ServesClientTCP).
	ClientCertFile, ClientKeyFile, ClientTrustedCAFile string
	ClientAutoTLS                                      bool
	// ClientJSONGateway serves etcd's HTTP/JSON gateway on the client URL
	// (embedetcd.Config.JSONGateway), for tools that speak etcd's JSON.
	ClientJSONGateway bool
	// EtcdCACertFile, EtcdCertFile and EtcdKeyFile are for EtcdEndpoints
	// (https://): the CA that verifies them (in place of the system's
	// roots), and a client certificate.
	EtcdCACertFile, EtcdCertFile, EtcdKeyFile string
}

// ServesClientTCP reports whether the embedded member listens on
// ClientURL. The client port speaks etcd's API with none of baton's
// authentication, so with AuthFile it is served only to clients with a
// certificate of ClientTrustedCAFile; without one, and with an empty
// ClientURL, the member serves its client API on the unix socket
// embedetcd.SocketPath(DataDir) alone, for tools on this machine.
func (c Config) ServesClientTCP() bool {
	return c.ClientURL != "" && (c.AuthFile == "" || c.ClientTrustedCAFile != "")
}

// DefaultConfig returns the defaults of API.md's command-line section.
func DefaultConfig() Config {
	e := embedetcd.NewConfig()
	lc := lock.DefaultConfig()
	return Config{
		HTTPAddr:            "127.0.0.1:8080",
		DataDir:             "./baton-data",
		Name:                e.Name,
		PeerURL:             e.PeerURL,
		ClientURL:           e.ClientURL,
		InitialClusterState: e.ClusterState,
		LogLevel:            "info",
		HistoryRetention:    lock.DefaultConfig().HistoryRetention,
		ShutdownTimeout:     10 * time.Second,
		AccessLog:           true,
		MaxWaitersPerLock:   lc.MaxWaitersPerLock,
		MaxLocksPerSession:  lc.MaxLocksPerSession,
		MaxSessions:         lc.MaxSessions,
		MaxEventStreams:     lc.MaxEventStreams,

		MaxEventStreamsPerAddress:    server.DefaultStreamsPerAddress,
		MaxEventStreamsPerCredential: server.DefaultStreamsPerCredential,
		MaxLocks:                     lc.MaxLocks,
		MaxFencedValues:              lc.MaxFencedValues,
		MaxFencedValueBytes:          lc.MaxFencedValueBytes,
		EtcdQuotaBytes:               2 << 30,
	}
}

// Node is a running baton node.
type Node struct {
	cfg      Config
	log      *slog.Logger
	member   *embedetcd.Member // nil with external etcd
	extCli   *clientv3.Client  // nil with the embedded member
	eng      *lock.Engine
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
	log := cfg.Logger
	if log == nil {
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
			return nil, fmt.Errorf("log level %q: want debug, info, warn or error", cfg.LogLevel)
		}
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Every file is read before anything starts: a bad one fails the start
	// at once, naming its flag and file.
	httpCert, httpTLS, err := cfg.httpTLS()
	if err != nil {
		return nil, err
	}
	etcdTLS, err := cfg.etcdClientTLS()
	if err != nil {
		return nil, err
	}
	peerTLS, clientTLS, err := cfg.memberTLS()
	if err != nil {
		return nil, err
	}
	var store *auth.Store
	if cfg.AuthFile != "" {
		if store, err = auth.Load(cfg.AuthFile); err != nil {
			return nil, err
		}
		warnLooseMode(log, cfg.AuthFile)
	}
	n = &Node{cfg: cfg, log: log, errc: make(chan error, 2), httpCert: httpCert, auth: store}
	// Fix (found by testcluster, a node whose start failed panicked):
	// "return nil, err" sets n to nil before deferred calls run, so the
	// cleanup must hold its own reference.
	started := n
	defer func() {
		if err != nil {
			started.Close()
		}
	}()

	var cli *clientv3.Client
	if len(cfg.EtcdEndpoints) > 0 {
		cli, err = clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, DialTimeout: 5 * time.Second, Context: ctx, TLS: etcdTLS})
		if err != nil {
			return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(cfg.EtcdEndpoints, ","), err)
		}
		n.extCli = cli
	} else {
		ec := embedetcd.NewConfig()
		ec.Name, ec.Dir = cfg.Name, cfg.DataDir
		ec.PeerURL, ec.InitialCluster = cfg.PeerURL, cfg.InitialCluster
		ec.ClusterState = cfg.InitialClusterState
		ec.ListenPeerURL = cfg.ListenPeerURL
		ec.PeerTLSInfo, ec.PeerAutoTLS = peerTLS, cfg.PeerAutoTLS
		ec.JSONGateway = cfg.ClientJSONGateway
		ec.AllowedHosts = cfg.AllowedHosts
		if cfg.ServesClientTCP() {
			ec.ClientURL, ec.ListenClientURL = cfg.ClientURL, cfg.ListenClientURL
			ec.ClientTLSInfo, ec.ClientAutoTLS = clientTLS, cfg.ClientAutoTLS
		} else {
			ec.ClientURL, ec.ClientSocket = "", true
			why := "--client-url is empty"
			if cfg.ClientURL != "" {
				why = "with --auth-file it is served only with --client-trusted-ca"
			}
			log.Info("etcd client port not served over TCP; baton member and snapshot save reach this member through its socket",
				"reason", why, "socket", embedetcd.SocketURL(cfg.DataDir))
		}
		ec.QuotaBackendBytes = cfg.EtcdQuotaBytes
		if cfg.LogLevel == "debug" {
			ec.LogLevel = "debug"
		}
		n.member, err = embedetcd.Start(ctx, ec)
		if err != nil {
			return nil, err
		}
		cli = n.member.Client()
		go n.watchMember()
	}

	lc := lock.DefaultConfig()
	lc.HistoryRetention = cfg.HistoryRetention
	lc.MaxWaitersPerLock, lc.MaxLocksPerSession = cfg.MaxWaitersPerLock, cfg.MaxLocksPerSession
	lc.MaxSessions, lc.MaxEventStreams = cfg.MaxSessions, cfg.MaxEventStreams
	lc.MaxLocks, lc.MaxFencedValues, lc.MaxFencedValueBytes = cfg.MaxLocks, cfg.MaxFencedValues, cfg.MaxFencedValueBytes
	lc.BackendQuota = cfg.EtcdQuotaBytes
	lc.Logger = log
	if n.member != nil {
		lc.Embedded, lc.DialMember = n.member, dialMember(clientTLS)
	}
	if n.eng, err = lock.New(ctx, cli, lc); err != nil {
		return nil, err
	}
	hosts := cfg.AllowedHosts
	if len(hosts) == 0 {
		hosts = server.DefaultAllowedHosts(cfg.HTTPAddr)
	}
	n.srv = server.New(server.Config{
		Engine: n.eng, Logger: log, AccessLog: cfg.AccessLog, Auth: n.auth, AllowedHosts: hosts,
		RateLimit:           server.RateLimit{Rate: cfg.RateLimit, Burst: cfg.RateBurst},
		CredentialRateLimit: server.RateLimit{Rate: cfg.CredentialRateLimit, Burst: cfg.CredentialRateBurst},
		StreamLimits:        server.StreamLimits{PerAddress: cfg.MaxEventStreamsPerAddress, PerCredential: cfg.MaxEventStreamsPerCredential},
	})
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
	allowed := strings.Join(hosts, ",")
	if allowed == "" {
		allowed = server.AnyHost
	}
	log.Info("baton serving", "http", n.URL(), "name", cfg.Name,
		"data_dir", cfg.DataDir, "embedded_etcd", n.member != nil, "auth", n.auth != nil, "allowed_hosts", allowed)
	if httpCert != nil {
		leaf := httpCert.Leaf()
		log.Info("https certificate", "cert_file", cfg.TLSCertFile, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter,
			"client_cert_required", cfg.TLSClientCAFile != "")
	}
	n.started.Store(true)
	return n, nil
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
			if err := n.srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("drain http: %w", err))
			}
			cancel()
		} else if n.listener != nil {
			n.listener.Close()
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
	n.log.Info("reload: credentials swapped", "file", n.auth.Path(), "read", c.Count(auth.Read), "write", c.Count(auth.Write), "admin", c.Count(auth.Admin))
	return nil
}

// warnLooseMode warns when others than the file's owner may read an auth
// file: its tokens are passwords.
func warnLooseMode(log *slog.Logger, path string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("auth file is readable by others than its owner; chmod 600 it", "file", path, "mode", fi.Mode().Perm().String())
	}
}
