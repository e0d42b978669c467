package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/client"
)

func yieldCmd(g *globals) *cobra.Command {
	var o client.YieldOptions
	var election, semaphore, rwlock bool
	c := &cobra.Command{
		Use:   "yield NAME",
		Short: "Ask the holder of a lock, an election's leader, or a semaphore's or read/write lock's holds to give way",
		Long: `yield asks whoever holds the lock NAME to release it, with --reason, and
ends nothing: the holder hears the request on its event stream ("baton
exec --on-yield SIGNAL" passes it on to its command as that signal) and
decides. With --election it asks the election NAME's leader to resign;
with --semaphore, the holders of the semaphore NAME's permits; with
--rwlock, the holds of the read/write lock NAME; with --token, of those,
only the permit or hold of that token. The request is in the history as
yield_requested. Exits 4 when nothing holds NAME.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if election && semaphore || election && rwlock || semaphore && rwlock {
				return usagef("--election, --semaphore and --rwlock exclude each other")
			}
			if o.Token != 0 && !semaphore && !rwlock {
				return usagef("--token names a semaphore's permit or a read/write lock's hold: it needs --semaphore or --rwlock")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			ask := cl.Yield
			switch {
			case election:
				ask = cl.YieldLeadership
			case semaphore:
				ask = cl.YieldPermits
			case rwlock:
				ask = cl.YieldRW
			}
			return g.printYield(cmd.Context(), ask, args[0], o)
		},
	}
	c.Flags().StringVar(&o.Reason, "reason", "", "why, for the holder and the audit trail")
	c.Flags().StringVar(&o.Owner, "owner", defaultOwner(), "who asks, for the holder and the audit trail")
	c.Flags().BoolVar(&election, "election", false, "NAME is an election: ask its leader")
	c.Flags().BoolVar(&semaphore, "semaphore", false, "NAME is a semaphore: ask its permits' holders")
	c.Flags().BoolVar(&rwlock, "rwlock", false, "NAME is a read/write lock: ask its holds")
	c.Flags().Int64Var(&o.Token, "token", 0, "with --semaphore or --rwlock, ask only the permit or hold of this token")
	return c
}

// printYield asks with ask and says what was asked.
func (g *globals) printYield(ctx context.Context, ask func(context.Context, string, client.YieldOptions) (*client.YieldRequested, error), name string, o client.YieldOptions) error {
	y, err := ask(ctx, name, o)
	if err != nil {
		return err
	}
	if g.json() {
		return g.printJSON(map[string]any{"kind": y.Kind, "name": y.Name, "tokens": y.Tokens, "owner": y.Owner, "reason": y.Reason,
			"requested_at": y.RequestedAt, "revision": y.Revision})
	}
	tokens := make([]string, len(y.Tokens))
	for i, t := range y.Tokens {
		tokens[i] = fmt.Sprint(t)
	}
	fmt.Fprintf(g.stdout, "asked %s %s to yield (token %s) at revision %d\n", y.Kind, y.Name, strings.Join(tokens, ", "), y.Revision)
	return nil
}
