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

// This file holds the semaphore side of the commands: "baton exec
// --permits", "status --semaphore", "list --semaphores" and "revoke
// --semaphore", each beside its lock side in exec.go and cli.go.

// runPermitExec is "baton exec --permits N": CMD runs holding one of the
// N permits of the semaphore name, under the same heldRun as a lock's.
func runPermitExec(ctx context.Context, g *globals, cl *client.Client, name string, limit int, argv []string, o client.PermitOptions, killAfter time.Duration) error {
	r := startHeldRun(g, "baton exec", argv, killAfter)
	defer r.stop()
	actx, cancel := r.untilSignal(ctx)
	p, err := cl.AcquirePermit(actx, name, limit, o)
	cancel()
	if err != nil {
		return permitDetail(name, err)
	}
	env := []string{
		"BATON_SEMAPHORE=" + name, "BATON_TOKEN=" + strconv.FormatInt(p.Token(), 10), "BATON_LIMIT=" + strconv.Itoa(p.Limit()),
	}
	return r.run(p, fmt.Sprintf("release permit %d of %s", p.Token(), name), p.Release, env)
}

// permitDetail says who holds the permits of a full semaphore, or under
// which limit they are held, in place of the wire error's text; the error
// still matches its sentinel for the exit code.
func permitDetail(name string, err error) error {
	var ce *client.Error
	switch {
	case !errors.As(err, &ce):
		return err
	case errors.Is(err, client.ErrSemaphoreFull) && len(ce.Holders) > 0:
		hs := make([]string, len(ce.Holders))
		for i, h := range ce.Holders {
			hs[i] = fmt.Sprintf("%q with token %d", h.Owner, h.Token)
		}
		return &friendly{msg: fmt.Sprintf("%s is full: its %d permits are held by %s", name, ce.Holders[0].Limit, strings.Join(hs, ", ")), err: err}
	case errors.Is(err, client.ErrLimitMismatch) && ce.Limit > 0:
		return &friendly{msg: fmt.Sprintf("%s's permits are held under limit %d: pass --permits %d", name, ce.Limit, ce.Limit), err: err}
	}
	return err
}

func (g *globals) showSemaphore(s *client.SemaphoreInfo) error {
	if g.json() {
		return g.printJSON(semaphoreJSON(s))
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "name\t%s\n", s.Name)
	fmt.Fprintf(w, "limit\t%d\n", s.Limit)
	fmt.Fprintf(w, "held\t%d of %d\n", len(s.Holders), s.Limit)
	for _, h := range s.Holders {
		fmt.Fprintf(w, "permit %d\t%s (%s, expires in %s)\n", h.Token, h.Owner, sessionOrTTL(h), time.Until(h.ExpiresAt).Round(time.Second))
	}
	for _, wt := range s.Waiters {
		fmt.Fprintf(w, "waiter %d\t%s (since %s)\n", wt.Position, wt.Owner, wt.Since.Local().Format(time.RFC3339))
	}
	return w.Flush()
}

func sessionOrTTL(p client.PermitInfo) string {
	if p.Session != "" {
		return "session " + p.Session
	}
	return "ttl " + p.TTL.String()
}

// listSemaphores is "baton list --semaphores".
func (g *globals) listSemaphores(ctx context.Context, cl *client.Client, prefix string, limit int) error {
	all, err := pages(ctx, prefix, limit, cl.Semaphores)
	if err != nil {
		return err
	}
	if g.json() {
		out := make([]map[string]any, len(all))
		for i := range all {
			out[i] = semaphoreJSON(&all[i])
		}
		return g.printJSON(out)
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tHELD\tHOLDERS")
	for _, s := range all {
		hs := make([]string, len(s.Holders))
		for i, h := range s.Holders {
			hs[i] = fmt.Sprintf("%s (%d)", h.Owner, h.Token)
		}
		fmt.Fprintf(w, "%s\t%d/%d\t%s\n", s.Name, len(s.Holders), s.Limit, dash(strings.Join(hs, ", ")))
	}
	return w.Flush()
}

// revokePermit is "baton revoke --semaphore NAME --token N".
func (g *globals) revokePermit(ctx context.Context, cl *client.Client, name string, token int64, reason string) error {
	if token <= 0 {
		return usagef("revoke --semaphore: --token is required: the permit to revoke")
	}
	if err := cl.RevokePermit(ctx, name, token, reason); err != nil {
		return err
	}
	if !g.json() {
		fmt.Fprintf(g.stdout, "revoked permit %d of %s\n", token, name)
	}
	return nil
}

// eventFilter is the kind and name that history's and watch's
// --election, --semaphore and --rwlock ask for; at most one of them may
// be given.
func eventFilter(election, semaphore, rwlock string) (kind, name string, err error) {
	for _, f := range []struct{ kind, name string }{{"election", election}, {"semaphore", semaphore}, {"rwlock", rwlock}} {
		if f.name == "" {
			continue
		}
		if kind != "" {
			return "", "", usagef("--election, --semaphore and --rwlock exclude each other")
		}
		kind, name = f.kind, f.name
	}
	return kind, name, nil
}

// semaphoreJSON is s with the API's member names.
func semaphoreJSON(s *client.SemaphoreInfo) map[string]any {
	hs := make([]map[string]any, len(s.Holders))
	for i := range s.Holders {
		hs[i] = permitJSON(&s.Holders[i])
	}
	m := map[string]any{"name": s.Name, "limit": s.Limit, "holders": hs}
	if len(s.Waiters) > 0 {
		ws := make([]map[string]any, len(s.Waiters))
		for i, w := range s.Waiters {
			ws[i] = map[string]any{"owner": w.Owner, "position": w.Position, "since": apiTime(w.Since)}
			if w.Session != "" {
				ws[i]["session"] = w.Session
			}
		}
		m["waiters"] = ws
	}
	return m
}

func permitJSON(p *client.PermitInfo) map[string]any {
	md := p.Metadata
	if md == nil {
		md = map[string]string{}
	}
	m := map[string]any{
		"name": p.Name, "owner": p.Owner, "token": p.Token, "limit": p.Limit, "ttl": p.TTL.String(),
		"acquired_at": apiTime(p.AcquiredAt), "expires_at": apiTime(p.ExpiresAt), "metadata": md,
	}
	if p.Session != "" {
		m["session"] = p.Session
	}
	return m
}
