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
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/baton-dev/baton/cli"
	"github.com/baton-dev/baton/internal/gctune"
	"github.com/baton-dev/baton/node"
)

func main() {
	root := newRootCmd()
	if cmd, err := root.ExecuteC(); err != nil {
		cli.Report(cmd, err, os.Stdout, os.Stderr)
		os.Exit(cli.ExitCode(err))
	}
}

// unknownCommand refuses arguments to the root command, which runs a node
// with flags only: an argument is a mistyped command. It says so in one
// line, with the commands it is close to, rather than the node's flags.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	cmd.SilenceUsage = true
	msg := fmt.Sprintf("unknown command %q", args[0])
	if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
		msg += fmt.Sprintf(": did you mean %s?", strings.Join(near, " or "))
	}
	return cli.Usage(errors.New(msg + " (baton --help lists the commands)"))
}

func newRootCmd() *cobra.Command {
	cfg := node.DefaultConfig()
	run := func(cmd *cobra.Command, _ []string) error {
		if err := applyEnv(cmd.Flags()); err != nil {
			return err
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
		Args: unknownCommand,
		// Two edits: a swapped pair of letters ("stauts").
		SuggestionsMinimumDistance: 2,
		RunE:                       run,
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
		addServeFlags(fs, &cfg)
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(serveCmd)
	root.AddCommand(cli.Commands()...)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cli.Usage(err) })
	return root
}

// addServeFlags registers the flags of cfg (node.Config.AddFlags) on fs,
// each help naming the flag's environment twin (applyEnv).
func addServeFlags(fs *pflag.FlagSet, cfg *node.Config) {
	cfg.AddFlags(fs)
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
	gctune.Apply(slog.Default())
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer armFailpoints(n)()
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
