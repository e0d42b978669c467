package node

import (
	"context"
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
	// AuthFile, when set, turns authentication on with the credentials
	// of this file (see package auth); Reload reads it again.
	AuthFile string
	// Logger overrides the logger built from LogLevel.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults of API.md's command-line section.
func DefaultConfig() Config {
	e := embedetcd.NewConfig()
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
	errc     chan error
	once     sync.Once
	closing  atomic.Bool
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
	// The auth file first: a bad one fails the start before etcd starts.
	var store *auth.Store
	if cfg.AuthFile != "" {
		if store, err = auth.Load(cfg.AuthFile); err != nil {
			return nil, err
		}
		warnLooseMode(log, cfg.AuthFile)
	}
	n = &Node{cfg: cfg, log: log, errc: make(chan error, 2), auth: store}
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
		cli, err = clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, DialTimeout: 5 * time.Second, Context: ctx})
		if err != nil {
			return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(cfg.EtcdEndpoints, ","), err)
		}
		n.extCli = cli
	} else {
		ec := embedetcd.NewConfig()
		ec.Name, ec.Dir = cfg.Name, cfg.DataDir
		ec.PeerURL, ec.ClientURL, ec.InitialCluster = cfg.PeerURL, cfg.ClientURL, cfg.InitialCluster
		ec.ClusterState = cfg.InitialClusterState
		ec.ListenPeerURL, ec.ListenClientURL = cfg.ListenPeerURL, cfg.ListenClientURL
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
	lc.Logger = log
	if n.member != nil {
		lc.HasLeader, lc.Stopped, lc.LeaderChanged = n.member.HasLeader, n.member.IsStopped, n.member.LeaderChanged
	}
	if n.eng, err = lock.New(ctx, cli, lc); err != nil {
		return nil, err
	}
	n.srv = server.New(server.Config{Engine: n.eng, Logger: log, Auth: n.auth})
	if n.listener, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	go func() {
		if err := n.srv.Serve(n.listener); err != nil {
			n.errc <- fmt.Errorf("http server: %w", err)
		}
	}()
	log.Info("baton serving", "http", "http://"+n.listener.Addr().String(), "name", cfg.Name,
		"data_dir", cfg.DataDir, "embedded_etcd", n.member != nil, "auth", n.auth != nil)
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
		n.log.Info("baton stopped", "name", n.cfg.Name)
	})
	return errors.Join(errs...)
}

// Reload re-reads what can change while the node runs: the auth file. A
// file that cannot be used leaves the credentials in force as they were,
// and the error names the line at fault (never a token). main calls it on
// SIGHUP.
func (n *Node) Reload() error {
	if n.auth == nil {
		n.log.Info("reload: nothing to reload (no --auth-file)")
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
