package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/client"
)

func electCmd(g *globals) *cobra.Command {
	var o client.CampaignOptions
	var value string
	var st stopping
	var onYield string
	var bind bool
	c := &cobra.Command{
		Use:   "elect [flags] NAME -- CMD [ARGS...]",
		Short: "Run a command only while leading an election",
		Long: `elect campaigns for the election NAME, runs CMD while it leads (renewing
the leadership in the background), and resigns when CMD exits, exiting with
CMD's exit code; the first candidate in line then leads. CMD gets
BATON_ELECTION (the name), BATON_TOKEN (the fencing token) and BATON_TERM
(the leadership's term) in its environment: pass the token to whatever the
leader writes to.

--value is what the leader publishes to observers ("baton leader"): JSON
when it parses as JSON, else a string.

Signals and the loss of leadership are handled as "baton exec" handles
them: signals are forwarded to CMD; if the leadership is lost while CMD runs
(revoked, expired, resigned elsewhere, renewal refused, or baton unreachable
for longer than the TTL), elect sends CMD SIGTERM, then SIGKILL after
--kill-after, and exits with code 10, within a second of a revoke or an
expiry. If someone leads and --wait runs out, elect exits with code 3
without running CMD. With --on-yield SIGNAL, a request that the leader
yield ("baton yield --election NAME") sends CMD that signal, as for exec.
With --bind [--grace D], the leadership is taken in a session tied to
elect's own stream, as for exec: if elect dies, the next candidate leads
about --grace later, not a TTL later.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || cmd.ArgsLenAtDash() != 1 {
				return usagef("usage: baton elect [flags] NAME -- CMD [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if st, err = bindOf(st, bind, cmd); err != nil {
				return err
			}
			if st.onYield, err = yieldSignal(onYield); err != nil {
				return err
			}
			if cmd.Flags().Changed("value") {
				o.Value = jsonOrString(value)
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			return runElect(cmd.Context(), g, cl, args[0], args[1:], o, st)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Candidate, "candidate", defaultOwner(), "candidate label for people and the audit trail")
	f.StringVar(&value, "value", "", "the leader's value for observers: JSON, or else a string")
	f.DurationVar(&o.TTL, "ttl", 30*time.Second, "leadership TTL; it is renewed at about a third of it")
	f.DurationVar(&o.Wait, "wait", 0, "wait in line this long if someone leads (default: fail at once)")
	f.DurationVar(&o.LockDelay, "lock-delay", 0, "nobody leads for this long after an expiry or revoke")
	f.DurationVar(&st.killAfter, "kill-after", 10*time.Second, "after leadership is lost, wait this long after SIGTERM before SIGKILL")
	f.StringVar(&onYield, "on-yield", "", "when the leader is asked to yield (baton yield --election), send CMD this signal: INT, TERM, HUP, QUIT, USR1 or USR2")
	bindFlags(f, &st, &bind)
	return c
}

// jsonOrString is v as JSON when it is JSON, else as a JSON string.
func jsonOrString(v string) json.RawMessage {
	if json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

func runElect(ctx context.Context, g *globals, cl *client.Client, name string, argv []string, o client.CampaignOptions, st stopping) error {
	r := startHeldRun(g, "baton elect", argv, st)
	defer r.stop()
	ld, end, err := take(ctx, r, &sessionWait{cl, o.Wait, o.Candidate, &o.Session, &o.TTL},
		func(ctx context.Context) (*client.Leadership, error) { return cl.Campaign(ctx, name, o) }, leaderDetail)
	if err != nil {
		return err
	}
	defer end()
	env := []string{
		"BATON_ELECTION=" + name, "BATON_TOKEN=" + strconv.FormatInt(ld.Token(), 10), "BATON_TERM=" + strconv.FormatInt(ld.Term(), 10),
	}
	return r.run(ld, "resign from "+name, ld.Resign, env)
}

// leaderDetail says who leads, in place of the wire error's text; the
// error still matches client.ErrElectionHeld for the exit code.
func leaderDetail(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Leader != nil {
		l := ce.Leader
		return &friendly{msg: fmt.Sprintf("%s is led by %q with token %d (term %d) until %s", l.Name, l.Candidate, l.Token, l.Term, l.ExpiresAt.Local().Format(time.RFC3339)), err: err}
	}
	return err
}

func leaderCmd(g *globals) *cobra.Command {
	var watch bool
	c := &cobra.Command{
		Use:   "leader NAME [--watch]",
		Short: "Show an election's leader, or follow its changes",
		Long: `leader prints who leads the election NAME (exit code 4 when nobody does),
with the candidates waiting in line. With --watch it prints the state and
then each change, a line (or, with -o json, an object) each, until
interrupted: a leader elected, a new value proclaimed, or nobody leading.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if watch {
				return g.watchLeader(cmd.Context(), cl, args[0])
			}
			l, err := cl.Leader(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.showLeader(l)
		},
	}
	c.Flags().BoolVar(&watch, "watch", false, "follow the election's changes until interrupted")
	return c
}

func transferCmd(g *globals) *cobra.Command {
	var token int64
	var to string
	c := &cobra.Command{
		Use:   "transfer NAME --token N --to CANDIDATE",
		Short: "Hand an election's leadership to a candidate waiting in line",
		Long: `transfer ends the leadership of the election NAME that --token holds in
favour of --to, a candidate waiting in line (as it campaigned: "baton elect
--candidate"): in one transaction it leads, ahead of the line, with the
next term, and prints the new leadership as "baton leader" does. Exit
code 4 when --to does not wait in line (the leader still leads) or the
token no longer leads; 3 inside the leadership's at-least window.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if token <= 0 {
				return usagef("--token is required")
			}
			if to == "" {
				return usagef("--to is required: the waiting candidate to lead next")
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			l, err := cl.TransferLeadership(cmd.Context(), args[0], token, to)
			if err != nil {
				return err
			}
			return g.showLeader(l)
		},
	}
	c.Flags().Int64Var(&token, "token", 0, "the fencing token of the leadership")
	c.Flags().StringVar(&to, "to", "", "the candidate to lead next; it must be waiting in line")
	return c
}

func (g *globals) showLeader(l *client.LeaderInfo) error {
	if g.json() {
		return g.printJSON(leaderJSON(l))
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "name\t%s\n", l.Name)
	fmt.Fprintf(w, "candidate\t%s\n", l.Candidate)
	fmt.Fprintf(w, "value\t%s\n", l.Value)
	fmt.Fprintf(w, "token\t%d\n", l.Token)
	fmt.Fprintf(w, "term\t%d\n", l.Term)
	writeHold(w, l.Session, l.TTL, "elected", l.ElectedAt, l.ExpiresAt, l.Metadata)
	for _, c := range l.Candidates {
		fmt.Fprintf(w, "candidate %d\t%s (since %s)\n", c.Position, c.Candidate, c.Since.Local().Format(time.RFC3339))
	}
	return w.Flush()
}

// watchLeader prints the election's state and then every change.
func (g *globals) watchLeader(ctx context.Context, cl *client.Client, name string) error {
	ctx, stop := signalContext(ctx)
	defer stop()
	chc, errc := cl.Observe(ctx, name)
	enc := json.NewEncoder(g.stdout)
	if !g.json() {
		fmt.Fprintln(g.stdout, leaderLine("REVISION", "LEADER", "TERM", "TOKEN", "VALUE"))
	}
	for ch := range chc {
		if g.json() {
			var l any // null: nobody leads
			if ch.Leader != nil {
				l = leaderJSON(ch.Leader)
			}
			if err := enc.Encode(map[string]any{"revision": ch.Revision, "leader": l}); err != nil {
				return err
			}
			continue
		}
		rev := strconv.FormatInt(ch.Revision, 10)
		if ch.Leader == nil {
			fmt.Fprintln(g.stdout, leaderLine(rev, "-", "-", "-", "(nobody leads)"))
			continue
		}
		l := ch.Leader
		fmt.Fprintln(g.stdout, leaderLine(rev, l.Candidate, strconv.FormatInt(l.Term, 10), strconv.FormatInt(l.Token, 10), string(l.Value)))
	}
	if err := <-errc; err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// leaderLine is one line of leader --watch's table, in fixed columns as
// watch's are; the value, last, is never cut.
func leaderLine(rev, leader, term, token, value string) string {
	return fmt.Sprintf("%-9s %-24s %-6s %-9s %s", fit(rev, 9), fit(leader, 24), fit(term, 6), fit(token, 9), value)
}

// leaderJSON is l with the API's member names.
func leaderJSON(l *client.LeaderInfo) map[string]any {
	value := l.Value
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	md := l.Metadata
	if md == nil {
		md = map[string]string{}
	}
	m := map[string]any{"name": l.Name, "candidate": l.Candidate, "value": value, "token": l.Token, "term": l.Term, "metadata": md}
	if l.Session != "" {
		m["session"] = l.Session
	}
	if l.TTL > 0 {
		m["ttl"] = l.TTL.String()
	}
	if !l.ElectedAt.IsZero() {
		m["elected_at"] = apiTime(l.ElectedAt)
	}
	if !l.ExpiresAt.IsZero() {
		m["expires_at"] = apiTime(l.ExpiresAt)
	}
	if len(l.Candidates) > 0 {
		cs := make([]map[string]any, len(l.Candidates))
		for i, c := range l.Candidates {
			cs[i] = map[string]any{"candidate": c.Candidate, "position": c.Position, "since": apiTime(c.Since)}
			if c.Session != "" {
				cs[i]["session"] = c.Session
			}
		}
		m["candidates"] = cs
	}
	return m
}
