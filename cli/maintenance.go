package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// maintenanceCmd holds operators' repairs, through the HTTP API (role
// admin).
func maintenanceCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "maintenance", Short: "Operators' repairs of a baton cluster (role admin)"}
	rec := &cobra.Command{
		Use:   "recover",
		Short: "Free the data store's space after it filled up, and let writes in again",
		Long: `recover is the way out when baton's data store (etcd) has reached its quota
(--etcd-quota-bytes): every write then answers 507 insufficient_storage and
/readyz answers 503 nospace. The node compacts etcd's history to the current
revision, defragments every member one at a time (each member pauses while
its file is rewritten), and disarms etcd's NOSPACE alarm. If what is kept
still fills the quota, it says what holds the space and leaves the alarm
raised (exit code 1). See docs/OPERATIONS.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			r, err := cl.Recover(cmd.Context())
			if err != nil {
				return err
			}
			if g.json() {
				return g.printJSON(map[string]any{
					"compacted_revision": r.CompactedRevision, "defragmented": nonNil(r.Defragmented), "alarms": nonNil(r.Alarms),
					"db_size": r.DBSize, "quota": r.Quota,
				})
			}
			w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "compacted to revision\t%d\n", r.CompactedRevision)
			fmt.Fprintf(w, "defragmented\t%s\n", dash(strings.Join(r.Defragmented, ", ")))
			fmt.Fprintf(w, "data store\t%d of %d bytes (%.0f%%)\n", r.DBSize, r.Quota, 100*float64(r.DBSize)/float64(max(r.Quota, 1)))
			fmt.Fprintf(w, "alarms\t%s\n", dashNone(strings.Join(r.Alarms, ", ")))
			return w.Flush()
		},
	}
	c.AddCommand(rec)
	return c
}

func dashNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
