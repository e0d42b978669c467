package cli

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/client"
)

// whoamiCmd says who the token speaks for and what it may do, as GET
// /v1/whoami answers.
func whoamiCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show who the token speaks for, its rules by name prefix, and its quotas with their usage",
		Long: `whoami asks the node who the bearer token (--auth-token, BATON_AUTH_TOKEN)
speaks for: the credential's name (never the token), its rules (a role on the
names under each prefix; the longest prefix of a name decides) and, when it
has quotas, each quota with what it counts now. A node without --auth-file
says that authentication is off: every request may do everything.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			w, err := cl.Whoami(cmd.Context())
			if err != nil {
				return err
			}
			if g.json() {
				return g.printJSON(w)
			}
			return printWhoami(g, w)
		},
	}
}

func printWhoami(g *globals, w *client.Whoami) error {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	if !w.Authentication {
		fmt.Fprintf(tw, "authentication\toff: every request may do everything\n")
	} else {
		fmt.Fprintf(tw, "credential\t%s\n", w.Credential)
	}
	for i, r := range w.Rules {
		label := ""
		if i == 0 {
			label = "rules"
		}
		prefix := strconv.Quote(r.Prefix)
		if r.Prefix == "" {
			prefix += " (every name)"
		}
		fmt.Fprintf(tw, "%s\t%s: %s\n", label, prefix, r.Role)
	}
	if q := w.Quotas; q != nil {
		u := w.Usage
		if u == nil {
			u = &client.QuotaUsage{}
		}
		var parts []string
		for _, x := range []struct {
			name  string
			limit int
			used  *int
		}{{"holds", q.Holds, u.Holds}, {"sessions", q.Sessions, u.Sessions}, {"waiters", q.Waiters, u.Waiters}, {"streams", q.Streams, nil}} {
			switch {
			case x.limit == 0:
			case x.used != nil:
				parts = append(parts, fmt.Sprintf("%s %d of %d", x.name, *x.used, x.limit))
			default:
				parts = append(parts, fmt.Sprintf("%s %d", x.name, x.limit))
			}
		}
		if q.Rate > 0 {
			parts = append(parts, fmt.Sprintf("rate %g/s", q.Rate))
		}
		if q.Burst > 0 {
			parts = append(parts, fmt.Sprintf("burst %d", q.Burst))
		}
		fmt.Fprintf(tw, "quotas\t%s\n", strings.Join(parts, ", "))
	}
	return tw.Flush()
}
