package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-dev/baton/client"
)

// kvCmd is `baton kv get|put|rm|ls|watch`: keys of coordination data, as
// a ZooKeeper user keeps configuration and members in znodes.
func kvCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "kv", Short: "Read, write, list and watch keys of coordination data"}
	c.AddCommand(kvGetCmd(g), kvPutCmd(g), kvRmCmd(g), kvLsCmd(g), kvWatchCmd(g))
	return c
}

// keyJSON is a key as -o json prints it: the API's Key.
func keyJSON(k *client.Key) map[string]any {
	out := map[string]any{
		"key": k.Key, "value": k.Value, "revision": k.Revision, "created_revision": k.CreatedRevision, "version": k.Version,
	}
	if k.Session != "" {
		out["session"] = k.Session
	}
	return out
}

func kvGetCmd(g *globals) *cobra.Command {
	var waitRev int64
	var wait time.Duration
	c := &cobra.Command{
		Use:   "get KEY",
		Short: "Print a key's value (-o json: with its revisions); --wait-revision blocks until the key changes after that revision",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var k *client.Key
			if cmd.Flags().Changed("wait-revision") {
				k, err = cl.WaitKey(cmd.Context(), args[0], waitRev, wait)
			} else {
				k, err = cl.GetKey(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			if g.json() {
				return g.printJSON(keyJSON(k))
			}
			_, err = fmt.Fprintln(g.stdout, string(k.Value))
			return err
		},
	}
	c.Flags().Int64Var(&waitRev, "wait-revision", 0, "block until the key's revision passes this one (its next put or delete)")
	c.Flags().DurationVar(&wait, "wait", 0, "how long --wait-revision blocks (default: the node's, 1m)")
	return c
}

// fenceFlags are the flags that fence a key's write.
type fenceFlags struct {
	lock, election, semaphore, rwlock string
	token                             int64
}

func (f *fenceFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.lock, "lock", "", "write only while --token holds this lock")
	c.Flags().StringVar(&f.election, "election", "", "write only while --token leads this election")
	c.Flags().StringVar(&f.semaphore, "semaphore", "", "write only while --token holds a permit of this semaphore")
	c.Flags().StringVar(&f.rwlock, "rwlock", "", "write only while --token is this read/write lock's write hold")
	c.Flags().Int64Var(&f.token, "token", 0, "the fencing token of the hold that --lock, --election, --semaphore or --rwlock names")
}

// fence is the fence the flags ask for, nil for none.
func (f *fenceFlags) fence(cmd *cobra.Command) (*client.Fence, error) {
	var out *client.Fence
	for _, h := range []struct{ kind, name string }{{"lock", f.lock}, {"election", f.election}, {"semaphore", f.semaphore}, {"rwlock", f.rwlock}} {
		if h.name == "" {
			continue
		}
		if out != nil {
			return nil, usagef("give one of --lock, --election, --semaphore and --rwlock")
		}
		out = &client.Fence{Kind: h.kind, Name: h.name, Token: f.token}
	}
	switch {
	case out != nil && !cmd.Flags().Changed("token"):
		return nil, usagef("--%s fences the write with a hold: give its --token", out.Kind)
	case out == nil && cmd.Flags().Changed("token"):
		return nil, usagef("--token fences the write only with the hold it holds: give --lock, --election, --semaphore or --rwlock")
	}
	return out, nil
}

// ifRevision is --if-revision, nil when not given; --create is 0.
func ifRevision(cmd *cobra.Command, rev int64, create bool) (*int64, error) {
	switch {
	case create && cmd.Flags().Changed("if-revision"):
		return nil, usagef("give --create or --if-revision, not both")
	case create:
		return client.Revision(0), nil
	case cmd.Flags().Changed("if-revision"):
		return client.Revision(rev), nil
	}
	return nil, nil
}

func kvPutCmd(g *globals) *cobra.Command {
	var rev int64
	var create, text bool
	var session string
	var ff fenceFlags
	c := &cobra.Command{
		Use:   "put KEY VALUE",
		Short: "Write a key: VALUE is JSON (- reads it from standard input; --string stores it as a JSON string)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := kvValue(args[1], text)
			if err != nil {
				return err
			}
			o := client.PutKeyOptions{Session: session}
			if o.IfRevision, err = ifRevision(cmd, rev, create); err != nil {
				return err
			}
			if o.Fence, err = ff.fence(cmd); err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			k, err := cl.PutKey(cmd.Context(), args[0], value, o)
			if err != nil {
				return err
			}
			if g.json() {
				return g.printJSON(keyJSON(k))
			}
			_, err = fmt.Fprintf(g.stdout, "put %s at revision %d (version %d)\n", k.Key, k.Revision, k.Version)
			return err
		},
	}
	c.Flags().Int64Var(&rev, "if-revision", 0, "write only if the key's revision is this one (compare-and-set)")
	c.Flags().BoolVar(&create, "create", false, "write only if the key does not exist")
	c.Flags().StringVar(&session, "session", "", "bind the key to this session: it is deleted when the session ends")
	c.Flags().BoolVar(&text, "string", false, "store VALUE as a JSON string, as it is typed")
	ff.add(c)
	return c
}

// kvValue is the JSON a put stores: arg, or standard input for "-"; as
// a JSON string with text.
func kvValue(arg string, text bool) (json.RawMessage, error) {
	if arg == "-" {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
		if err != nil {
			return nil, fmt.Errorf("read the value from standard input: %w", err)
		}
		arg = strings.TrimSuffix(string(b), "\n")
	}
	if text {
		b, _ := json.Marshal(arg)
		return b, nil
	}
	if !json.Valid([]byte(arg)) {
		return nil, usagef("VALUE must be JSON, such as '{\"host\":\"db-1\"}', 42 or '\"text\"'; --string stores it as typed")
	}
	return json.RawMessage(arg), nil
}

func kvRmCmd(g *globals) *cobra.Command {
	var rev int64
	var ff fenceFlags
	c := &cobra.Command{
		Use:   "rm KEY",
		Short: "Delete a key",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var o client.DeleteKeyOptions
			var err error
			if o.IfRevision, err = ifRevision(cmd, rev, false); err != nil {
				return err
			}
			if o.Fence, err = ff.fence(cmd); err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteKey(cmd.Context(), args[0], o); err != nil {
				return err
			}
			if g.json() {
				return g.printJSON(map[string]any{"key": args[0], "deleted": true})
			}
			_, err = fmt.Fprintf(g.stdout, "deleted %s\n", args[0])
			return err
		},
	}
	c.Flags().Int64Var(&rev, "if-revision", 0, "delete only if the key's revision is this one")
	ff.add(c)
	return c
}

func kvLsCmd(g *globals) *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List keys and their values, in key order (PREFIX: config/ lists the keys under config)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usagef("--limit must be at least 1, not %d", limit)
			}
			prefix := optionalArg(args)
			cl, err := g.client()
			if err != nil {
				return err
			}
			keys, _, err := listKeys(cmd.Context(), cl, prefix, limit)
			if err != nil {
				return err
			}
			if g.json() {
				out := make([]map[string]any, len(keys))
				for i := range keys {
					out[i] = keyJSON(&keys[i])
				}
				return g.printJSON(out)
			}
			w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KEY\tREVISION\tVERSION\tSESSION\tVALUE")
			for _, k := range keys {
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", k.Key, k.Revision, k.Version, k.Session, fit(string(k.Value), 60))
			}
			return w.Flush()
		},
	}
	c.Flags().IntVar(&limit, "limit", 1000, "at most this many keys")
	return c
}

func kvWatchCmd(g *globals) *cobra.Command {
	var since int64
	c := &cobra.Command{
		Use:   "watch [PREFIX]",
		Short: "Stream the puts and deletes of keys (under PREFIX) as they happen, until interrupted",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix := optionalArg(args)
			cl, err := g.client()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			enc := json.NewEncoder(g.stdout)
			for ev, err := range cl.WatchKeys(ctx, prefix, since) {
				if err != nil {
					return err
				}
				if g.json() {
					out := keyJSON(&ev.Key)
					out["type"] = ev.Type
					if err := enc.Encode(out); err != nil {
						return err
					}
					continue
				}
				line := fmt.Sprintf("%-9s %-7s %s", strconv.FormatInt(ev.Revision, 10), ev.Type, ev.Key.Key)
				switch ev.Type {
				case "put":
					line += " " + string(ev.Value)
				case "gap":
					line += fmt.Sprintf(" changes of revisions %d to %d were lost: list the keys again", ev.FromRevision, ev.ToRevision)
				}
				if _, err := fmt.Fprintln(g.stdout, line); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().Int64Var(&since, "since", 0, "replay the changes after this revision first")
	return c
}

// membersCmd is `baton members PREFIX [--watch]`: the recipe of a group
// whose members are keys bound to their sessions under PREFIX, as
// ZooKeeper's ephemeral nodes under a parent. A member that stops
// renewing its session leaves the group when the session ends.
func membersCmd(g *globals) *cobra.Command {
	var watch bool
	c := &cobra.Command{
		Use:   "members PREFIX [--watch]",
		Short: "Show a group's members: the keys under PREFIX bound to a session (--watch: again at every change, until interrupted)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix := args[0]
			cl, err := g.client()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			group, rev, err := listGroup(ctx, cl, prefix)
			if err != nil {
				return err
			}
			if err := g.printGroup(prefix, group); err != nil || !watch {
				return err
			}
			for ev, err := range cl.WatchKeys(ctx, prefix, rev) {
				if err != nil {
					return err
				}
				switch {
				case ev.Type == "gap":
					if group, _, err = listGroup(ctx, cl, prefix); err != nil {
						return err
					}
				case ev.Type == "put" && ev.Session != "":
					group[ev.Key.Key] = ev.Key
				case ev.Type == "put", ev.Type == "delete":
					if _, ok := group[ev.Key.Key]; !ok {
						continue // no member's change
					}
					delete(group, ev.Key.Key)
				}
				if err := g.printGroup(prefix, group); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&watch, "watch", false, "print the group again at every change, until interrupted")
	return c
}

// maxGroup bounds the keys a group's listing reads.
const maxGroup = 100000

// listKeys reads up to limit keys under prefix, a page at a time, and
// the revision the first page was read at: a watch from it misses no
// change of the later pages' keys.
func listKeys(ctx context.Context, cl *client.Client, prefix string, limit int) ([]client.Key, int64, error) {
	var keys []client.Key
	var rev int64
	for cursor := ""; len(keys) < limit; {
		p, err := cl.Keys(ctx, prefix, client.ListOptions{Cursor: cursor, Limit: min(limit-len(keys), 1000)})
		if err != nil {
			return nil, 0, err
		}
		if rev == 0 {
			rev = p.Revision
		}
		keys = append(keys, p.Keys...)
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	return keys, rev, nil
}

// listGroup reads the members under prefix and the revision of the read.
func listGroup(ctx context.Context, cl *client.Client, prefix string) (map[string]client.Key, int64, error) {
	keys, rev, err := listKeys(ctx, cl, prefix, maxGroup)
	if err != nil {
		return nil, 0, err
	}
	group := map[string]client.Key{}
	for _, k := range keys {
		if k.Session != "" {
			group[k.Key] = k
		}
	}
	return group, rev, nil
}

// printGroup prints a group's members, in key order.
func (g *globals) printGroup(prefix string, group map[string]client.Key) error {
	keys := slices.Sorted(maps.Keys(group))
	if g.json() {
		out := make([]map[string]any, len(keys))
		for i, k := range keys {
			m := group[k]
			out[i] = keyJSON(&m)
		}
		return json.NewEncoder(g.stdout).Encode(map[string]any{"group": prefix, "members": out})
	}
	w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%s: %d member(s) at %s\n", prefix, len(keys), time.Now().Format(time.TimeOnly))
	for _, k := range keys {
		m := group[k]
		fmt.Fprintf(w, "  %s\t%s\t%s\n", strings.TrimPrefix(k, prefix), m.Session, fit(string(m.Value), 60))
	}
	return w.Flush()
}

// optionalArg is a command's one optional argument, "" when not given.
func optionalArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
