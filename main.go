// Command baton is a distributed lock service with fencing tokens, on an
// embedded (or external) etcd cluster. With no subcommand, or with
// "serve", it runs a node; its other subcommands are clients of a running
// node ("baton exec NAME -- CMD" runs CMD only while holding NAME). See
// "baton --help".
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/baton-dev/baton/internal/cli"
	"github.com/baton-dev/baton/node"
)

func main() {
	root := newRootCmd()
	if cmd, err := root.ExecuteC(); err != nil {
		cli.Report(cmd, err, os.Stdout, os.Stderr)
		os.Exit(cli.ExitCode(err))
	}
}

func newRootCmd() *cobra.Command {
	cfg := node.DefaultConfig()
	var endpoints string
	run := func(cmd *cobra.Command, _ []string) error {
		if err := applyEnv(cmd.Flags()); err != nil {
			return err
		}
		if endpoints != "" {
			cfg.EtcdEndpoints = strings.Split(endpoints, ",")
		}
		cmd.SilenceUsage = true
		// A flag combination that cannot work is a usage mistake (exit 2);
		// files that cannot be read fail the start itself (exit 1).
		if f := cmd.Flags().Lookup("peer-client-cert-auth"); f.Changed && !cfg.PeerClientCertAuth && cfg.PeerTrustedCAFile != "" {
			return cli.Usage(errors.New("--peer-client-cert-auth=false cannot be had with --peer-trusted-ca: etcd requires a client certificate from every peer whenever it has a peer CA"))
		}
		if err := cfg.Validate(); err != nil {
			return cli.Usage(err)
		}
		return serve(cmd.Context(), cfg)
	}
	root := &cobra.Command{
		Use:   "baton",
		Short: "A distributed lock service with fencing tokens, on etcd",
		Long: `baton serves locks with fencing tokens over HTTP/JSON. It embeds an etcd
member for Raft consensus (one binary, one command), joins several baton
nodes into one etcd cluster, or uses an existing etcd cluster.

With no subcommand it runs a node, like "baton serve". Every flag has an
environment twin: --http-addr is BATON_HTTP_ADDR, and so on; a flag given on
the command line wins over its environment variable.`,
		Args: cobra.NoArgs,
		RunE: run,
		// main prints errors itself, so exit codes and a command's own
		// exit status stay clean.
		SilenceErrors: true,
	}
	serveCmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a baton node (the default)",
		Args:  cobra.NoArgs,
		RunE:  run,
	}
	for _, fs := range []*pflag.FlagSet{root.Flags(), serveCmd.Flags()} {
		addServeFlags(fs, &cfg, &endpoints)
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(serveCmd)
	root.AddCommand(cli.Commands()...)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cli.Usage(err) })
	return root
}

func addServeFlags(fs *pflag.FlagSet, cfg *node.Config, endpoints *string) {
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "address of the HTTP API, dashboard and metrics")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of etcd's data (WAL, snapshots)")
	fs.StringVar(&cfg.Name, "name", cfg.Name, "this node's etcd member name")
	fs.StringVar(&cfg.PeerURL, "peer-url", cfg.PeerURL, "etcd peer URL other members reach this node at (also where it listens, unless --listen-peer-url)")
	fs.StringVar(&cfg.ClientURL, "client-url", cfg.ClientURL, "etcd client URL for etcd tools and \"baton member\" (also where it listens, unless --listen-client-url); with --auth-file served only with --client-trusted-ca; empty, or not served: only the socket DATA-DIR/etcd.sock")
	fs.StringVar(&cfg.ListenPeerURL, "listen-peer-url", "", "where etcd listens for peers, if not at --peer-url (e.g. http://0.0.0.0:2380 in a container)")
	fs.StringVar(&cfg.ListenClientURL, "listen-client-url", "", "where etcd listens for clients, if not at --client-url")
	fs.StringVar(&cfg.InitialCluster, "initial-cluster", cfg.InitialCluster, "NAME=PEER-URL,… of every member, to form a cluster (default: this node alone)")
	fs.StringVar(&cfg.InitialClusterState, "initial-cluster-state", cfg.InitialClusterState, `"new" to form a cluster, "existing" to join a running one after "baton member add"`)
	fs.StringVar(endpoints, "etcd-endpoints", "", "comma-separated client URLs of an existing etcd cluster to use instead of embedding one")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn or error (etcd's own logs stay at warn unless debug)")
	fs.DurationVar(&cfg.HistoryRetention, "history-retention", cfg.HistoryRetention, "how long audit events are kept")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long a shutdown waits for requests in flight")
	fs.BoolVar(&cfg.AccessLog, "access-log", cfg.AccessLog, `one "http request" line per request at info level (request ID, route, status, duration, credential ID; never tokens or query strings); --access-log=false to turn off`)
	fs.StringVar(&cfg.TLSCertFile, "tls-cert", "", "PEM certificate (chain) to serve the HTTP API over HTTPS only, TLS 1.2+; reread on SIGHUP")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&cfg.TLSClientCAFile, "tls-client-ca", "", "PEM CA(s): HTTPS clients must present a certificate signed by one")
	fs.StringVar(&cfg.PeerCertFile, "peer-cert", "", "PEM certificate for TLS between etcd members (server and client use; peer URLs must be https://)")
	fs.StringVar(&cfg.PeerKeyFile, "peer-key", "", "PEM private key of --peer-cert")
	fs.StringVar(&cfg.PeerTrustedCAFile, "peer-trusted-ca", "", "PEM CA that signs the members' peer certificates; every peer must then present one")
	fs.BoolVar(&cfg.PeerClientCertAuth, "peer-client-cert-auth", false, "require peers' client certificates: always on with --peer-trusted-ca (etcd's rule); without it, verified against the system's roots")
	fs.BoolVar(&cfg.PeerAutoTLS, "peer-auto-tls", false, "encrypt peer traffic with self-signed certificates: no authentication of peers")
	fs.StringVar(&cfg.ClientCertFile, "client-cert", "", "PEM certificate to serve the etcd client URL over TLS (https://)")
	fs.StringVar(&cfg.ClientKeyFile, "client-key", "", "PEM private key of --client-cert")
	fs.StringVar(&cfg.ClientTrustedCAFile, "client-trusted-ca", "", "PEM CA: etcd clients must present a certificate signed by it")
	fs.BoolVar(&cfg.ClientAutoTLS, "client-auto-tls", false, "serve the etcd client URL with a self-signed certificate (DATA-DIR/fixtures/client/cert.pem)")
	fs.BoolVar(&cfg.ClientJSONGateway, "client-json-gateway", false, "also serve etcd's HTTP/JSON gateway (/v3/...) on the etcd client URL; off because any web page could POST to it (etcdctl and baton member use gRPC)")
	fs.StringVar(&cfg.EtcdCACertFile, "etcd-cacert", "", "PEM CA that verifies https:// --etcd-endpoints (in place of the system's roots)")
	fs.StringVar(&cfg.EtcdCertFile, "etcd-cert", "", "PEM client certificate for --etcd-endpoints")
	fs.StringVar(&cfg.EtcdKeyFile, "etcd-key", "", "PEM private key of --etcd-cert")
	fs.Float64Var(&cfg.RateLimit, "rate-limit", cfg.RateLimit, "requests per second each client address may send (IPv6: each /64); over it, 429 rate_limited; 0 = off")
	fs.IntVar(&cfg.RateBurst, "rate-burst", cfg.RateBurst, "requests a client address may send at once; 0 = one second's worth of --rate-limit")
	fs.Float64Var(&cfg.CredentialRateLimit, "credential-rate-limit", cfg.CredentialRateLimit, "requests per second each credential may send; 0 = off")
	fs.IntVar(&cfg.CredentialRateBurst, "credential-rate-burst", cfg.CredentialRateBurst, "requests a credential may send at once; 0 = one second's worth of --credential-rate-limit")
	fs.IntVar(&cfg.MaxWaitersPerLock, "max-waiters-per-lock", cfg.MaxWaitersPerLock, "acquires that may queue for one lock; more get 429 too_many_waiters; 0 = no cap")
	fs.IntVar(&cfg.MaxLocksPerSession, "max-locks-per-session", cfg.MaxLocksPerSession, "locks one session may hold; more get 409 too_many_locks_in_session; 0 = no cap")
	fs.IntVar(&cfg.MaxSessions, "max-sessions", cfg.MaxSessions, "sessions the cluster may hold; more get 429 too_many_sessions; 0 = no cap")
	fs.IntVar(&cfg.MaxLocks, "max-locks", cfg.MaxLocks, "locks the cluster may hold; more get 429 too_many_locks; 0 = no cap")
	fs.IntVar(&cfg.MaxFencedValues, "max-fenced-values", cfg.MaxFencedValues, "fenced values (resources) the cluster may hold; a write that would make one more gets 429 too_many_fenced_values; 0 = no cap")
	fs.IntVar(&cfg.MaxFencedValueBytes, "max-fenced-value-bytes", cfg.MaxFencedValueBytes, "largest fenced value, in bytes of JSON; larger ones get 413 value_too_large")
	fs.Int64Var(&cfg.EtcdQuotaBytes, "etcd-quota-bytes", cfg.EtcdQuotaBytes, "etcd's backend quota in bytes (8 GiB at most is advised): past it every write gets 507 insufficient_storage until \"baton maintenance recover\"; with --etcd-endpoints, the external cluster's quota; 0 = etcd's default (2 GiB)")
	fs.IntVar(&cfg.MaxEventStreams, "max-event-streams", cfg.MaxEventStreams, "event streams (GET /v1/events) this node serves at once; more get 503 too_many_streams; 0 = no cap")
	fs.IntVar(&cfg.MaxEventStreamsPerAddress, "max-event-streams-per-address", cfg.MaxEventStreamsPerAddress, "event streams one client address (an IPv6 /64) holds open on this node; more get 429 too_many_streams; 0 = no cap")
	fs.IntVar(&cfg.MaxEventStreamsPerCredential, "max-event-streams-per-credential", cfg.MaxEventStreamsPerCredential, "event streams one credential holds open on this node (with --auth-file); more get 429 too_many_streams; 0 = no cap")
	fs.StringSliceVar(&cfg.AllowedHosts, "allowed-hosts", cfg.AllowedHosts, "comma-separated Host names (no port; any port is answered) the HTTP API answers, * for any; others get 421 host_not_allowed; default: localhost, 127.0.0.1 and [::1] when --http-addr is a loopback address (against DNS rebinding), else any")
	fs.StringVar(&cfg.AuthFile, "auth-file", cfg.AuthFile, "file of bearer-token credentials, one \"ROLE TOKEN\" a line (roles read, write, admin); turns authentication on for /v1 and /metrics; re-read on SIGHUP")
	fs.VisitAll(func(f *pflag.Flag) {
		f.Usage += " (env " + envName(f.Name) + ")"
	})
}

// envName is a flag's environment twin: --http-addr ↔ BATON_HTTP_ADDR.
func envName(flag string) string {
	return "BATON_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// environment twin, so flags win over the environment.
func applyEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, serr)
			}
		}
	})
	return err
}

func serve(ctx context.Context, cfg node.Config) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP re-reads what can change without a restart: the auth file and
	// the HTTPS certificate. A bad file is logged and changes nothing. It
	// is caught from before the start, since its default action would end
	// the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
wait:
	for {
		select {
		case <-hup:
			_ = n.Reload() // Reload logs the outcome; on error the old files stay in use
		case <-ctx.Done():
			break wait
		case err = <-n.Err():
			if errors.Is(err, node.ErrRemoved) {
				// The operator asked for it ("baton member remove"): a clean
				// stop, not a failure for a supervisor to restart.
				fmt.Fprintln(os.Stderr, "baton:", err, "- stopping")
				err = nil
			}
			break wait
		}
	}
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	return err
}
