package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/problem"
)

// Exit codes; see the package doc. A server's answer gets the exit code
// package problem gives its code, so a code added there has one here too.
const (
	ExitOK          = problem.ExitOK
	ExitFailure     = problem.ExitFailure
	ExitUsage       = problem.ExitUsage
	ExitHeld        = problem.ExitHeld
	ExitNotHeld     = problem.ExitNotHeld
	ExitStale       = problem.ExitStale
	ExitUnavailable = problem.ExitUnavailable
	ExitDenied      = problem.ExitDenied
	ExitBusy        = problem.ExitBusy
	ExitLost        = problem.ExitLost
)

// ExitError carries the exit code a command wants. Quiet ones (a child's
// own exit code) need no message: the child spoke for itself.
type ExitError struct {
	Code  int
	Err   error
	Quiet bool
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode maps an error from a command to the process's exit code.
func ExitCode(err error) int {
	var ee *ExitError
	var ce *client.Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ce):
		if i, ok := problem.Lookup(ce.Code); ok {
			return i.Exit
		}
		// A code this build does not know (a newer server's), or an
		// answer without one (a proxy's): its status says what it can.
		switch {
		case ce.Status >= 500:
			return ExitUnavailable
		case ce.Status == 401, ce.Status == 403:
			return ExitDenied
		case ce.Status == 429:
			return ExitBusy
		}
		return ExitFailure
	case errors.Is(err, client.ErrUnavailable):
		return ExitUnavailable // no answer at all
	case errors.Is(err, client.ErrLockLost):
		return ExitLost
	case errors.Is(err, client.ErrInvalid), isUsage(err):
		return ExitUsage
	}
	return ExitFailure
}

type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Usage marks err as a usage error (exit code 2); main uses it for cobra's
// flag errors.
func Usage(err error) error { return usageError{err} }

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d argument(s), got %d; see %s --help", cmd.CommandPath(), n, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// noArgs is noArgs with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments; see %s --help", cmd.CommandPath(), cmd.CommandPath())
	}
	return nil
}

// globals are the flags every client subcommand takes.
type globals struct {
	addr      string
	authToken string
	output    string
	// tls overrides BATON_CACERT, BATON_CERT and BATON_KEY, field by field.
	tls    client.TLSConfig
	stdout io.Writer
	stderr io.Writer
}

func (g *globals) client() (*client.Client, error) {
	cfg := client.DefaultConfig()
	if g.addr != "" {
		cfg.Endpoints = strings.Split(g.addr, ",")
	}
	cfg.TLSConfig = g.tlsConfig(cfg.TLSConfig)
	if g.authToken != "" {
		cfg.Token = g.authToken
	}
	return client.NewWithConfig(cfg)
}

// tlsConfig is env with the flags given on top.
func (g *globals) tlsConfig(env client.TLSConfig) client.TLSConfig {
	for _, f := range []struct{ flag, env *string }{{&g.tls.CAFile, &env.CAFile}, {&g.tls.CertFile, &env.CertFile}, {&g.tls.KeyFile, &env.KeyFile}} {
		if *f.flag != "" {
			*f.env = *f.flag
		}
	}
	return env
}

func (g *globals) json() bool { return g.output == "json" }

func (g *globals) printJSON(v any) error {
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Commands returns the client subcommands, sharing --addr and --output.
func Commands() []*cobra.Command {
	g := &globals{stdout: os.Stdout, stderr: os.Stderr}
	cmds := []*cobra.Command{
		acquireCmd(g), releaseCmd(g), renewCmd(g), statusCmd(g), listCmd(g),
		historyCmd(g), revokeCmd(g), yieldCmd(g), watchCmd(g), sessionsCmd(g), execCmd(g),
		electCmd(g), leaderCmd(g), transferCmd(g), maintenanceCmd(g), delayCmd(g), fencedCmd(g), kvCmd(g), membersCmd(g), whoamiCmd(g),
	}
	for _, c := range cmds {
		addGlobals(c, g)
	}
	return append(cmds, memberCmd(g), snapshotCmd(g), healthcheckCmd(g), authCmd(g))
}

func addGlobals(c *cobra.Command, g *globals) {
	addNodeFlags(c, g, "baton address(es), comma-separated (env BATON_ADDR; default http://127.0.0.1:8080)")
	g.addOutput(c, nil)
}

// addNodeFlags gives c and its subcommands what reaches a node's HTTP
// API: --addr, with addrUsage, the TLS flags and --auth-token.
func addNodeFlags(c *cobra.Command, g *globals, addrUsage string) {
	c.PersistentFlags().StringVar(&g.addr, "addr", "", addrUsage)
	addTLSFlags(c, g)
	// Not --token: release and renew take the fencing token by that name.
	c.PersistentFlags().StringVar(&g.authToken, "auth-token", "", "bearer token for a baton that runs with --auth-file (env BATON_AUTH_TOKEN, or a file named by BATON_TOKEN_FILE; the environment keeps it out of ps)")
}

// addOutput gives c and its subcommands -o/--output, and checks it and
// then check (which may be nil) before any of them runs.
func (g *globals) addOutput(c *cobra.Command, check func() error) {
	c.PersistentFlags().StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	c.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if g.output != "table" && g.output != "json" {
			return usagef("--output must be table or json, not %q", g.output)
		}
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		// Arguments are valid by now: a failure from here on is not a
		// usage mistake, so no usage text (subcommands included).
		cmd.SilenceUsage = true
		g.stdout, g.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
		return nil
	}
	c.SilenceUsage = true
}

func parseMeta(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	md := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--meta takes KEY=VALUE, not %q", kv)
		}
		md[k] = v
	}
	return md, nil
}

func acquireCmd(g *globals) *cobra.Command {
	var o client.AcquireOptions
	var meta []string
	c := &cobra.Command{
		Use:   "acquire NAME",
		Short: "Take a lock once and print its fencing token (it is not renewed)",
		Long: `Take a lock and print it with its fencing token. The lock is not renewed:
it ends after its TTL unless renewed ("baton renew") or released ("baton
release"). To hold a lock while a command runs, use "baton exec".`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			md, err := parseMeta(meta)
			if err != nil {
				return err
			}
			o.Metadata = md
			cl, err := g.client()
			if err != nil {
				return err
			}
			l, err := cl.AcquireOnce(cmd.Context(), args[0], o)
			if err != nil {
				return heldDetail(err)
			}
			return g.showLock(l)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Owner, "owner", defaultOwner(), "owner label for people and the audit trail")
	f.DurationVar(&o.TTL, "ttl", 0, "lease TTL (default 30s; not with --session)")
	f.DurationVar(&o.Wait, "wait", 0, "queue for the lock this long if it is held")
	f.DurationVar(&o.LockDelay, "lock-delay", 0, "forbid re-acquiring for this long after an expiry or revoke")
	f.StringVar(&o.Session, "session", "", "acquire within this session")
	f.StringArrayVar(&meta, "meta", nil, "metadata KEY=VALUE (repeatable)")
	return c
}

// heldDetail says who holds the lock, in place of the wire error's text;
// the error still matches client.ErrHeld for the exit code.
func heldDetail(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Holder != nil {
		h := ce.Holder
		return &friendly{msg: fmt.Sprintf("%s is held by %q with token %d until %s", h.Name, h.Owner, h.Token, h.ExpiresAt.Local().Format(time.RFC3339)), err: err}
	}
	return err
}

type friendly struct {
	msg string
	err error
}

func (f *friendly) Error() string { return f.msg }
func (f *friendly) Unwrap() error { return f.err }

// defaultOwner labels this process: user@host:pid, so that two processes
// on one host (two cron jobs, two workers) tell apart in lists and in
// the audit trail.
func defaultOwner() string {
	host, _ := os.Hostname()
	owner := host + ":" + strconv.Itoa(os.Getpid())
	if u := os.Getenv("USER"); u != "" {
		owner = u + "@" + owner
	}
	return owner
}

func releaseCmd(g *globals) *cobra.Command {
	var token int64
	c := &cobra.Command{
		Use:   "release NAME --token N",
		Short: "Release a lock held with the given token",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if token <= 0 {
				return usagef("--token is required")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.Release(cmd.Context(), args[0], token); err != nil {
				return err
			}
			if !g.json() {
				fmt.Fprintf(g.stdout, "released %s (token %d)\n", args[0], token)
			}
			return nil
		},
	}
	c.Flags().Int64Var(&token, "token", 0, "the fencing token of the hold")
	return c
}

func renewCmd(g *globals) *cobra.Command {
	var token int64
	c := &cobra.Command{
		Use:   "renew NAME --token N",
		Short: "Renew a lock's lease",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if token <= 0 {
				return usagef("--token is required")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			l, err := cl.Renew(cmd.Context(), args[0], token)
			if err != nil {
				return err
			}
			return g.showLock(l)
		},
	}
	c.Flags().Int64Var(&token, "token", 0, "the fencing token of the hold")
	return c
}

func statusCmd(g *globals) *cobra.Command {
	var semaphore, rwlock bool
	c := &cobra.Command{
		Use:   "status NAME [--semaphore | --rwlock]",
		Short: "Show a lock's holder and queue, a semaphore's permits or a read/write lock's holds",
		Long: `status prints the lock NAME's holder and its queue (exit code 4 when
nobody holds it). With --semaphore, NAME is a semaphore: status prints its
limit, the permits held with their tokens, and its waiters (exit code 4
when no permit is held). With --rwlock, NAME is a read/write lock: status
prints its mode, its holds with their tokens, and its waiters with the
mode each waits for (exit code 4 when nothing holds it).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if semaphore && rwlock {
				return usagef("--semaphore and --rwlock exclude each other")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			if rwlock {
				rw, err := cl.RWLock(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return rwlockSeats.show(g, rw)
			}
			if semaphore {
				s, err := cl.Semaphore(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return semaphoreSeats.show(g, s)
			}
			l, err := cl.Get(cmd.Context(), args[0])
			if errors.Is(err, client.ErrNotHeld) {
				return otherKindHint(cmd.Context(), cl, args[0], err)
			}
			if err != nil {
				return err
			}
			return g.showLock(l)
		},
	}
	c.Flags().BoolVar(&semaphore, "semaphore", false, "NAME is a semaphore: show its permits")
	c.Flags().BoolVar(&rwlock, "rwlock", false, "NAME is a read/write lock: show its holds")
	return c
}

// otherKindHint is notHeld, the answer for a lock NAME nobody holds,
// saying so when a semaphore or a read/write lock of that name is held:
// kinds have names of their own, and status without --semaphore or
// --rwlock asks for the lock.
func otherKindHint(ctx context.Context, cl *client.Client, name string, notHeld error) error {
	if s, err := cl.Semaphore(ctx, name); err == nil && len(s.Holders) > 0 {
		permits := "permits"
		if len(s.Holders) == 1 {
			permits = "permit"
		}
		return &friendly{msg: fmt.Sprintf("no lock %s is held, but a semaphore %s has %d %s held: baton status %s --semaphore", name, name, len(s.Holders), permits, name), err: notHeld}
	}
	if rw, err := cl.RWLock(ctx, name); err == nil && len(rw.Holders) > 0 {
		return &friendly{msg: fmt.Sprintf("no lock %s is held, but a read/write lock %s is: baton status %s --rwlock", name, name, name), err: notHeld}
	}
	return notHeld
}

// writeHold writes the rows a lock's hold and a leadership share: its
// session, lease, since when (as began says) and metadata.
func writeHold(w io.Writer, session string, ttl time.Duration, began string, at, expires time.Time, md map[string]string) {
	if session != "" {
		fmt.Fprintf(w, "session\t%s\n", session)
	}
	fmt.Fprintf(w, "ttl\t%s\n", ttl)
	fmt.Fprintf(w, "%s\t%s\n", began, at.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "expires\t%s (in %s)\n", expires.Local().Format(time.RFC3339), time.Until(expires).Round(time.Second))
	for _, k := range sortedKeys(md) {
		fmt.Fprintf(w, "meta %s\t%s\n", k, md[k])
	}
}

func (g *globals) showLock(l *client.LockInfo) error {
	if g.json() {
		return g.printJSON(lockJSON(l))
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "name\t%s\n", l.Name)
	fmt.Fprintf(w, "owner\t%s\n", l.Owner)
	fmt.Fprintf(w, "token\t%d\n", l.Token)
	writeHold(w, l.Session, l.TTL, "acquired", l.AcquiredAt, l.ExpiresAt, l.Metadata)
	for _, wt := range l.Waiters {
		fmt.Fprintf(w, "waiter %d\t%s (since %s)\n", wt.Position, wt.Owner, wt.Since.Local().Format(time.RFC3339))
	}
	return w.Flush()
}

// -o json prints what the HTTP API sends: the same member names, Go
// duration strings, and RFC 3339 UTC times with milliseconds.

func apiTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func lockJSON(l *client.LockInfo) map[string]any {
	m := map[string]any{
		"name": l.Name, "owner": l.Owner, "token": l.Token, "ttl": l.TTL.String(),
		"acquired_at": apiTime(l.AcquiredAt), "expires_at": apiTime(l.ExpiresAt), "metadata": l.Metadata,
	}
	if l.Session != "" {
		m["session"] = l.Session
	}
	if len(l.Waiters) > 0 {
		ws := make([]map[string]any, len(l.Waiters))
		for i, w := range l.Waiters {
			ws[i] = map[string]any{"owner": w.Owner, "position": w.Position, "since": apiTime(w.Since)}
			if w.Session != "" {
				ws[i]["session"] = w.Session
			}
		}
		m["waiters"] = ws
	}
	return m
}

// eventThing is what an event is about, for a table's LOCK column: a
// lock's name, or another kind's as kind:name (election:billing).
func eventThing(e *client.Event) string {
	if e.Kind == "" || e.Kind == "lock" {
		return e.Lock
	}
	return e.Kind + ":" + e.Name
}

func eventJSON(e *client.Event) map[string]any {
	m := map[string]any{"revision": e.Revision, "time": apiTime(e.Time), "type": e.Type, "kind": e.Kind, "name": e.Name,
		"lock": e.Lock, "owner": e.Owner}
	if e.Token != 0 {
		m["token"] = e.Token
	}
	if e.Term != 0 {
		m["term"] = e.Term
	}
	if len(e.Value) > 0 {
		m["value"] = e.Value
	}
	if e.Session != "" {
		m["session"] = e.Session
	}
	if e.Detail != "" {
		m["detail"] = e.Detail
	}
	if e.Reason != "" {
		m["reason"] = e.Reason
	}
	if e.Limit != 0 {
		m["limit"] = e.Limit
	}
	if e.Mode != "" {
		m["mode"] = e.Mode
	}
	return m
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// pages reads a listing page by page (at most 1,000 a page, the server's
// bound) until limit items or the last page.
func pages[T any](ctx context.Context, prefix string, limit int, page func(context.Context, client.ListOptions) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	for {
		items, next, err := page(ctx, client.ListOptions{Prefix: prefix, Cursor: cursor, Limit: min(limit-len(all), 1000)})
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" || len(all) >= limit {
			return all, nil
		}
		cursor = next
	}
}

func listCmd(g *globals) *cobra.Command {
	var prefix string
	var limit int
	var semaphores, rwlocks bool
	c := &cobra.Command{
		Use:   "list [--semaphores | --rwlocks]",
		Short: "List held locks and their queues, semaphores and their permits, or read/write locks and their holds",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if semaphores && rwlocks {
				return usagef("--semaphores and --rwlocks exclude each other")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			if semaphores {
				return semaphoreSeats.list(cmd.Context(), g, prefix, limit, cl.Semaphores)
			}
			if rwlocks {
				return rwlockSeats.list(cmd.Context(), g, prefix, limit, cl.RWLocks)
			}
			all, err := pages(cmd.Context(), prefix, limit, cl.Locks)
			if err != nil {
				return err
			}
			// The list answer carries no queues (they cost the server a
			// read per lock), so each lock's comes from its own GET.
			fillWaiters(cmd.Context(), cl, all)
			if g.json() {
				out := make([]map[string]any, len(all))
				for i := range all {
					out[i] = lockJSON(&all[i])
				}
				return g.printJSON(out)
			}
			w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tOWNER\tTOKEN\tSESSION\tEXPIRES IN\tWAITERS")
			for _, l := range all {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", l.Name, l.Owner, l.Token, dash(l.Session), time.Until(l.ExpiresAt).Round(time.Second), waitersCell(l.Waiters))
			}
			return w.Flush()
		},
	}
	c.Flags().StringVar(&prefix, "prefix", "", "only locks (semaphores, read/write locks) whose name starts with this")
	c.Flags().IntVar(&limit, "limit", 1000, "at most this many locks (semaphores, read/write locks)")
	c.Flags().BoolVar(&semaphores, "semaphores", false, "list the semaphores that have permits held instead")
	c.Flags().BoolVar(&rwlocks, "rwlocks", false, "list the read/write locks that are held instead")
	return c
}

// fillWaiters sets each lock's queue, a few GETs at a time. A lock that
// ended since the list, or a GET that failed, keeps none: the list is a
// snapshot either way.
func fillWaiters(ctx context.Context, cl *client.Client, locks []client.LockInfo) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range locks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if l, err := cl.Get(ctx, locks[i].Name); err == nil && l.Token == locks[i].Token {
				locks[i].Waiters = l.Waiters
			}
		}()
	}
	wg.Wait()
}

// waitersCell is the queue in one cell: how many, and who is first.
func waitersCell(ws []client.Waiter) string {
	switch len(ws) {
	case 0:
		return "-"
	case 1:
		return "1 (" + ws[0].Owner + ")"
	}
	return fmt.Sprintf("%d (%s, …)", len(ws), ws[0].Owner)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func historyCmd(g *globals) *cobra.Command {
	var o client.HistoryOptions
	var types, election, semaphore, rwlock string
	c := &cobra.Command{
		Use:   "history",
		Short: "Show the audit trail, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if types != "" {
				o.Types = strings.Split(types, ",")
			}
			var err error
			if o.Kind, o.Name, err = eventFilter(election, semaphore, rwlock); err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			evs, _, err := cl.History(cmd.Context(), o)
			if err != nil {
				return err
			}
			if g.json() {
				out := make([]map[string]any, len(evs))
				for i := range evs {
					out[i] = eventJSON(&evs[i])
				}
				return g.printJSON(out)
			}
			w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "REVISION\tTIME\tTYPE\tLOCK\tOWNER\tTOKEN\tDETAIL")
			for _, e := range evs {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", e.Revision, e.Time.Local().Format(time.RFC3339), e.Type, eventThing(&e), e.Owner, e.Token, eventDetail(&e))
			}
			return w.Flush()
		},
	}
	f := c.Flags()
	f.StringVar(&o.Lock, "lock", "", "only this lock's events")
	f.StringVar(&election, "election", "", "only this election's events")
	f.StringVar(&semaphore, "semaphore", "", "only this semaphore's events (its permits')")
	f.StringVar(&rwlock, "rwlock", "", "only this read/write lock's events (its holds')")
	f.StringVar(&o.Owner, "owner", "", "only this owner's events")
	f.StringVar(&types, "type", "", "only these types, comma-separated")
	f.IntVar(&o.Limit, "limit", 50, "how many events")
	f.Int64Var(&o.Before, "before", 0, "only events before this revision")
	return c
}

func revokeCmd(g *globals) *cobra.Command {
	var reason string
	var election, semaphore, rwlock bool
	var token int64
	c := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Forcibly release a lock, depose an election's leader, or end a semaphore's permit or a read/write lock's hold (operators)",
		Long: `revoke ends the hold of the lock NAME, whoever holds it, recorded with
--reason. With --election it deposes the election NAME's leader; with
--semaphore it ends the permit of the semaphore NAME that --token names
(status --semaphore lists them); with --rwlock, the hold of the read/write
lock NAME that --token names (status --rwlock lists them).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if election && semaphore || election && rwlock || semaphore && rwlock {
				return usagef("--election, --semaphore and --rwlock exclude each other")
			}
			if token != 0 && !semaphore && !rwlock {
				return usagef("--token names a semaphore's permit or a read/write lock's hold: it needs --semaphore or --rwlock")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			if semaphore {
				return semaphoreSeats.revoke(cmd.Context(), g, args[0], token, reason, cl.RevokePermit)
			}
			if rwlock {
				return rwlockSeats.revoke(cmd.Context(), g, args[0], token, reason, cl.RevokeRW)
			}
			what := args[0]
			if election {
				what = "the leadership of " + args[0]
				err = cl.RevokeLeadership(cmd.Context(), args[0], reason)
			} else {
				err = cl.Revoke(cmd.Context(), args[0], reason)
			}
			if err != nil {
				return err
			}
			if !g.json() {
				fmt.Fprintf(g.stdout, "revoked %s\n", what)
			}
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	c.Flags().BoolVar(&election, "election", false, "NAME is an election: depose its leader")
	c.Flags().BoolVar(&semaphore, "semaphore", false, "NAME is a semaphore: end the permit --token names")
	c.Flags().BoolVar(&rwlock, "rwlock", false, "NAME is a read/write lock: end the hold --token names")
	c.Flags().Int64Var(&token, "token", 0, "with --semaphore or --rwlock, the token of the permit or hold to end")
	return c
}

func watchCmd(g *globals) *cobra.Command {
	var o client.EventsOptions
	var election, semaphore, rwlock string
	c := &cobra.Command{
		Use:   "watch",
		Short: "Stream events as they happen (until interrupted)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Kind, o.Name, err = eventFilter(election, semaphore, rwlock); err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			evs, errc := cl.Events(ctx, o)
			enc := json.NewEncoder(g.stdout)
			if !g.json() {
				fmt.Fprintln(g.stdout, watchLine("REVISION", "TIME", "TYPE", "LOCK", "OWNER", "TOKEN", "DETAIL"))
			}
			for ev := range evs {
				if g.json() {
					if err := enc.Encode(eventJSON(&ev)); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintln(g.stdout, watchLine(strconv.FormatInt(ev.Revision, 10), ev.Time.Local().Format(time.RFC3339),
					ev.Type, eventThing(&ev), ev.Owner, strconv.FormatInt(ev.Token, 10), eventDetail(&ev)))
			}
			if err := <-errc; err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&o.Lock, "lock", "", "only this lock's events")
	c.Flags().StringVar(&election, "election", "", "only this election's events")
	c.Flags().StringVar(&semaphore, "semaphore", "", "only this semaphore's events (its permits')")
	c.Flags().StringVar(&rwlock, "rwlock", "", "only this read/write lock's events (its holds')")
	c.Flags().Int64Var(&o.Since, "since", 0, "replay events after this revision first")
	return c
}

// watchLine is one line of watch's table. Events arrive one at a time,
// so the columns have fixed widths (a tabwriter aligns only what it has
// seen): wide enough for the usual values, and a longer one is cut with
// "…" rather than push the columns after it out of line. The detail,
// last, is never cut.
// eventDetail is what the DETAIL column says of e: its detail, or the
// reason, which a yield_requested and a gap carry instead.
func eventDetail(e *client.Event) string {
	if e.Detail == "" {
		return e.Reason
	}
	return e.Detail
}

func watchLine(rev, at, typ, lock, owner, token, detail string) string {
	return strings.TrimRight(fmt.Sprintf("%-9s %-25s %-15s %-24s %-20s %-9s %s",
		fit(rev, 9), fit(at, 25), fit(typ, 15), fit(lock, 24), fit(owner, 20), fit(token, 9), detail), " ")
}

// fit cuts s to n runes, ending in "…" when cut.
func fit(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func sessionsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "sessions", Short: "Create, list, show, renew and delete sessions"}
	var ttl time.Duration
	var owner string
	create := &cobra.Command{
		Use: "create", Short: "Create a session", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			s, err := cl.CreateSession(cmd.Context(), owner, ttl)
			if err != nil {
				return err
			}
			return g.showSession(s)
		},
	}
	create.Flags().DurationVar(&ttl, "ttl", 0, "session TTL (default 30s)")
	create.Flags().StringVar(&owner, "owner", defaultOwner(), "owner label")
	get := sessionShowCmd(g, "get ID", "Show a session", (*client.Client).GetSession)
	renew := sessionShowCmd(g, "renew ID", "Renew a session", (*client.Client).RenewSession)
	del := &cobra.Command{
		Use: "delete ID", Short: "Delete a session, releasing its locks", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteSession(cmd.Context(), args[0]); err != nil {
				return err
			}
			if !g.json() {
				fmt.Fprintf(g.stdout, "deleted session %s\n", args[0])
			}
			return nil
		},
	}
	c.AddCommand(create, get, renew, del, sessionsListCmd(g))
	return c
}

// sessionShowCmd is a subcommand that calls call with a session ID and
// shows the session it returns.
func sessionShowCmd(g *globals, use, short string, call func(*client.Client, context.Context, string) (*client.Session, error)) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			s, err := call(cl, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.showSession(s)
		},
	}
}

func (g *globals) showSession(s *client.Session) error {
	if g.json() {
		m := map[string]any{
			"id": s.ID, "owner": s.Owner, "ttl": s.TTL.String(), "created_at": apiTime(s.CreatedAt),
			"expires_at": apiTime(s.ExpiresAt), "locks": nonNil(s.Locks),
		}
		// As the API: each kind but locks absent when none.
		for k, names := range map[string][]string{"elections": s.Elections, "semaphores": s.Semaphores, "rwlocks": s.RWLocks} {
			if len(names) > 0 {
				m[k] = names
			}
		}
		return g.printJSON(m)
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "id\t%s\nowner\t%s\nttl\t%s\nexpires\t%s\nlocks\t%s\n", s.ID, s.Owner, s.TTL,
		s.ExpiresAt.Local().Format(time.RFC3339), dash(strings.Join(s.Locks, ", ")))
	for _, k := range []struct {
		label string
		names []string
	}{{"elections", s.Elections}, {"semaphores", s.Semaphores}, {"rwlocks", s.RWLocks}} {
		if len(k.names) > 0 {
			fmt.Fprintf(w, "%s\t%s\n", k.label, strings.Join(k.names, ", "))
		}
	}
	return w.Flush()
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return notifyContext(parent)
}

// addTLSFlags adds the client side of HTTPS: --cacert, --cert, --key.
func addTLSFlags(c *cobra.Command, g *globals) {
	f := c.PersistentFlags()
	f.StringVar(&g.tls.CAFile, "cacert", "", "PEM CA(s) to trust for https:// addresses, besides the system's (env BATON_CACERT)")
	f.StringVar(&g.tls.CertFile, "cert", "", "PEM client certificate, for nodes started with --tls-client-ca (env BATON_CERT)")
	f.StringVar(&g.tls.KeyFile, "key", "", "PEM private key of --cert (env BATON_KEY)")
}
