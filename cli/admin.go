package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// delayCmd is "baton delay clear NAME": an operator lifts a lock-delay
// set by mistake.
func delayCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "delay", Short: "Operators: lift a lock's lock-delay"}
	var reason string
	clear := &cobra.Command{
		Use:   "clear NAME",
		Short: "Let a free lock under lock-delay be acquired at once (audited as delay_cleared)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.ClearDelay(cmd.Context(), args[0], reason); err != nil {
				return err
			}
			if !g.json() {
				fmt.Fprintf(g.stdout, "lock-delay of %s lifted\n", args[0])
			}
			return nil
		},
	}
	clear.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	c.AddCommand(clear)
	return c
}

// fencedCmd is "baton fenced reset RESOURCE": an operator gives back a
// fenced register that a wrong token pushed past every real holder.
func fencedCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "fenced", Short: "Operators: reset a fenced register"}
	var reason string
	reset := &cobra.Command{
		Use:   "reset RESOURCE",
		Short: "Remove a fenced register's value and largest token, so any issued token may write again (audited as fence_reset)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.ResetFenced(cmd.Context(), args[0], reason); err != nil {
				return err
			}
			if !g.json() {
				fmt.Fprintf(g.stdout, "fenced register %s reset\n", args[0])
			}
			return nil
		},
	}
	reset.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	c.AddCommand(reset)
	return c
}
