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
	if err := root.Execute(); err != nil {
		var ee *cli.ExitError
		if !errors.As(err, &ee) || !ee.Quiet {
			fmt.Fprintln(os.Stderr, "baton:", err)
		}
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
	fs.StringVar(&cfg.ClientURL, "client-url", cfg.ClientURL, "etcd client URL for etcd tools and \"baton member\" (also where it listens, unless --listen-client-url)")
	fs.StringVar(&cfg.ListenPeerURL, "listen-peer-url", "", "where etcd listens for peers, if not at --peer-url (e.g. http://0.0.0.0:2380 in a container)")
	fs.StringVar(&cfg.ListenClientURL, "listen-client-url", "", "where etcd listens for clients, if not at --client-url")
	fs.StringVar(&cfg.InitialCluster, "initial-cluster", cfg.InitialCluster, "NAME=PEER-URL,… of every member, to form a cluster (default: this node alone)")
	fs.StringVar(&cfg.InitialClusterState, "initial-cluster-state", cfg.InitialClusterState, `"new" to form a cluster, "existing" to join a running one after "baton member add"`)
	fs.StringVar(endpoints, "etcd-endpoints", "", "comma-separated client URLs of an existing etcd cluster to use instead of embedding one")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn or error (etcd's own logs stay at warn unless debug)")
	fs.DurationVar(&cfg.HistoryRetention, "history-retention", cfg.HistoryRetention, "how long audit events are kept")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long a shutdown waits for requests in flight")
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
	// SIGHUP re-reads what can change without a restart (the auth file);
	// a bad file is logged and changes nothing. It is caught from before
	// the start, so one sent as soon as the node answers cannot kill it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
	rctx, stopReloads := context.WithCancel(ctx)
	reloads := make(chan struct{})
	go func() {
		defer close(reloads)
		for {
			select {
			case <-hup:
				_ = n.Reload() // Reload logs the outcome
			case <-rctx.Done():
				return
			}
		}
	}()
	select {
	case <-ctx.Done():
	case err = <-n.Err():
		if errors.Is(err, node.ErrRemoved) {
			// The operator asked for it ("baton member remove"): a clean
			// stop, not a failure for a supervisor to restart.
			fmt.Fprintln(os.Stderr, "baton:", err, "- stopping")
			err = nil
		}
	}
	stopReloads()
	<-reloads // no reload once Close runs
	if cerr := n.Close(); err == nil {
		err = cerr
	}
	return err
}
