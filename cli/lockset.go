package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/client"
)

// This file holds the lock set side of "baton exec": several NAMEs before
// "--" are one set, taken all at once or not at all, under the same
// heldRun as a lock's.

// runSetExec is "baton exec NAME NAME... -- CMD": CMD runs while the set
// of names is held.
func runSetExec(ctx context.Context, g *globals, cl *client.Client, names, argv []string, o client.LockSetOptions, st stopping) error {
	r := startHeldRun(g, "baton exec", argv, st)
	defer r.stop()
	s, _, err := take(ctx, r, nil, func(ctx context.Context) (*client.LockSet, error) { return cl.AcquireSet(ctx, names, o) }, setDetail)
	if err != nil {
		return err
	}
	label := strings.Join(s.Names(), ",")
	env := []string{"BATON_LOCKS=" + label, "BATON_TOKEN=" + strconv.FormatInt(s.Token(), 10)}
	return r.run(s, "release lock set "+label, s.Release, env)
}

// setFlags refuses, for a lock set, the flags that make NAME something
// else than a lock or that a set does not take.
func setFlags(cmd *cobra.Command, read, write bool, lockDelay time.Duration) error {
	switch {
	case cmd.Flags().Changed("permits"), read, write:
		return usagef("--permits, --read and --write take one NAME; several NAMEs are a lock set")
	case lockDelay != 0:
		return usagef("--lock-delay does not apply to a lock set (several NAMEs)")
	}
	return nil
}

// setDetail names every lock in the way of a set refused, in place of the
// wire error's text; the error still matches client.ErrHeld for the exit
// code.
func setDetail(err error) error {
	var ce *client.Error
	if !errors.As(err, &ce) || !errors.Is(err, client.ErrHeld) || len(ce.SetHolders) == 0 {
		return err
	}
	hs := make([]string, len(ce.SetHolders))
	for i, h := range ce.SetHolders {
		hs[i] = fmt.Sprintf("%s is held by %q with token %d until %s", h.Name, h.Owner, h.Token, h.ExpiresAt.Local().Format(time.RFC3339))
	}
	return &friendly{msg: "lock set not taken (all or none): " + strings.Join(hs, "; "), err: err}
}
