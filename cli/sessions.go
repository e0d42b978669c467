package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// sessionsListCmd is `baton sessions list`: live sessions by owner, as
// `baton list` shows locks. Listed sessions carry no locks (the API does
// not read them for a listing); `baton sessions get ID` shows them.
func sessionsListCmd(g *globals) *cobra.Command {
	var prefix string
	var limit int
	c := &cobra.Command{
		Use:   "list",
		Short: "List live sessions, sorted by owner",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usagef("--limit must be at least 1, not %d", limit)
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			all, err := pages(cmd.Context(), prefix, limit, cl.Sessions)
			if err != nil {
				return err
			}
			if g.json() {
				out := make([]map[string]any, len(all))
				for i, s := range all {
					out[i] = map[string]any{
						"id": s.ID, "owner": s.Owner, "ttl": s.TTL.String(),
						"created_at": apiTime(s.CreatedAt), "expires_at": apiTime(s.ExpiresAt),
					}
				}
				return g.printJSON(out)
			}
			w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tOWNER\tTTL\tEXPIRES IN")
			for _, s := range all {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.ID, s.Owner, s.TTL, time.Until(s.ExpiresAt).Round(time.Second))
			}
			return w.Flush()
		},
	}
	c.Flags().StringVar(&prefix, "prefix", "", "only sessions whose owner starts with this")
	c.Flags().IntVar(&limit, "limit", 1000, "at most this many sessions")
	return c
}
