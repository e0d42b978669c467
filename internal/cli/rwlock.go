package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-dev/baton/client"
)

// This file holds the read/write lock side of the commands: "baton exec
// --read/--write", "status --rwlock", "list --rwlocks" and "revoke
// --rwlock", each beside its lock side in exec.go and cli.go.

// runRWExec is "baton exec --read/--write": CMD runs under a hold of the
// read/write lock name in mode, under the same heldRun as a lock's.
func runRWExec(ctx context.Context, g *globals, cl *client.Client, name, mode string, argv []string, o client.RWOptions, killAfter time.Duration) error {
	r := startHeldRun(g, "baton exec", argv, killAfter)
	defer r.stop()
	actx, cancel := r.untilSignal(ctx)
	h, err := cl.AcquireRW(actx, name, mode, o)
	cancel()
	if err != nil {
		return rwDetail(name, mode, err)
	}
	env := []string{"BATON_RWLOCK=" + name, "BATON_TOKEN=" + strconv.FormatInt(h.Token(), 10), "BATON_MODE=" + mode}
	return r.run(h, fmt.Sprintf("release %s hold %d of %s", mode, h.Token(), name), h.Release, env)
}

// rwDetail says which holds are in the way of a hold refused, in place of
// the wire error's text; the error still matches client.ErrHeld for the
// exit code.
func rwDetail(name, mode string, err error) error {
	var ce *client.Error
	if !errors.As(err, &ce) || !errors.Is(err, client.ErrHeld) || len(ce.RWHolders) == 0 {
		return err
	}
	hs := make([]string, len(ce.RWHolders))
	for i, h := range ce.RWHolders {
		hs[i] = fmt.Sprintf("%q (%s, token %d)", h.Owner, h.Mode, h.Token)
	}
	return &friendly{msg: fmt.Sprintf("%s: no %s hold: held by %s", name, mode, strings.Join(hs, ", ")), err: err}
}

// rwMode is the mode that exec's --read and --write ask for: "" for
// neither, and a usage error for both, or for either with --permits or
// --lock-delay.
func rwMode(read, write bool, permits int, lockDelay time.Duration) (string, error) {
	switch {
	case read && write:
		return "", usagef("--read and --write exclude each other")
	case !read && !write:
		return "", nil
	case permits > 0:
		return "", usagef("--permits excludes --read and --write")
	case lockDelay != 0:
		return "", usagef("--lock-delay does not apply to a read/write lock (--read, --write)")
	case read:
		return client.Read, nil
	}
	return client.Write, nil
}

func (g *globals) showRWLock(rw *client.RWLockInfo) error {
	if g.json() {
		return g.printJSON(rwlockJSON(rw))
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "name\t%s\n", rw.Name)
	fmt.Fprintf(w, "mode\t%s\n", rw.Mode)
	for _, h := range rw.Holders {
		fmt.Fprintf(w, "%s %d\t%s (%s, expires in %s)\n", h.Mode, h.Token, h.Owner, rwSessionOrTTL(h), time.Until(h.ExpiresAt).Round(time.Second))
	}
	for _, wt := range rw.Waiters {
		fmt.Fprintf(w, "waiter %d\t%s, %s (since %s)\n", wt.Position, wt.Owner, wt.Mode, wt.Since.Local().Format(time.RFC3339))
	}
	return w.Flush()
}

func rwSessionOrTTL(h client.RWHoldInfo) string {
	if h.Session != "" {
		return "session " + h.Session
	}
	return "ttl " + h.TTL.String()
}

// listRWLocks is "baton list --rwlocks".
func (g *globals) listRWLocks(ctx context.Context, cl *client.Client, prefix string, limit int) error {
	all, err := pages(ctx, prefix, limit, cl.RWLocks)
	if err != nil {
		return err
	}
	if g.json() {
		out := make([]map[string]any, len(all))
		for i := range all {
			out[i] = rwlockJSON(&all[i])
		}
		return g.printJSON(out)
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tMODE\tHOLDERS")
	for _, rw := range all {
		hs := make([]string, len(rw.Holders))
		for i, h := range rw.Holders {
			hs[i] = fmt.Sprintf("%s (%d)", h.Owner, h.Token)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", rw.Name, rw.Mode, dash(strings.Join(hs, ", ")))
	}
	return w.Flush()
}

// revokeRW is "baton revoke --rwlock NAME --token N".
func (g *globals) revokeRW(ctx context.Context, cl *client.Client, name string, token int64, reason string) error {
	if token <= 0 {
		return usagef("revoke --rwlock: --token is required: the hold to revoke")
	}
	if err := cl.RevokeRW(ctx, name, token, reason); err != nil {
		return err
	}
	if !g.json() {
		fmt.Fprintf(g.stdout, "revoked hold %d of %s\n", token, name)
	}
	return nil
}

// rwlockJSON is rw with the API's member names.
func rwlockJSON(rw *client.RWLockInfo) map[string]any {
	hs := make([]map[string]any, len(rw.Holders))
	for i := range rw.Holders {
		hs[i] = rwHoldJSON(&rw.Holders[i])
	}
	m := map[string]any{"name": rw.Name, "mode": rw.Mode, "holders": hs}
	if len(rw.Waiters) > 0 {
		ws := make([]map[string]any, len(rw.Waiters))
		for i, w := range rw.Waiters {
			ws[i] = map[string]any{"owner": w.Owner, "position": w.Position, "since": apiTime(w.Since), "mode": w.Mode}
			if w.Session != "" {
				ws[i]["session"] = w.Session
			}
		}
		m["waiters"] = ws
	}
	return m
}

func rwHoldJSON(h *client.RWHoldInfo) map[string]any {
	md := h.Metadata
	if md == nil {
		md = map[string]string{}
	}
	m := map[string]any{
		"name": h.Name, "mode": h.Mode, "owner": h.Owner, "token": h.Token, "ttl": h.TTL.String(),
		"acquired_at": apiTime(h.AcquiredAt), "expires_at": apiTime(h.ExpiresAt), "metadata": md,
	}
	if h.Session != "" {
		m["session"] = h.Session
	}
	return m
}
