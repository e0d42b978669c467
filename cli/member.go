package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
)

// memberCmd changes the membership of the etcd cluster under baton. It
// talks to etcd's client port, not to baton's HTTP API: membership is
// etcd's, and a cluster that lost a member may have no baton answering.
func memberCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "member",
		Short: "List, add and remove the etcd members of a baton cluster",
		Long: `member changes the etcd cluster that baton nodes form, through etcd's client
port (a node's --client-url, or unix://DATA-DIR/etcd.sock on the node's machine
when it serves no client TCP port, as with --auth-file and no
--client-trusted-ca). With --addr (or BATON_ADDR), as the other commands take,
it asks that baton node for its members' client URLs; --etcd-endpoints names
them itself, and works when no baton answers. It refuses an etcd that holds
no baton data. To grow a cluster: "baton member add NAME
PEER-URL" on any node, then start the new node with the flags it prints
(they include --initial-cluster-state existing). To shrink it: "baton member
remove NAME", then stop that node. Change one member at a time, and only
while every other member is up: adding a voting member raises the quorum
before the new node has started.`,
	}
	m := &memberClient{g: g}
	m.etcd.add(c.PersistentFlags(), "etcd client URL(s) of running members, comma-separated (env BATON_ETCD_ENDPOINTS; default: those --addr's node names; without --addr or BATON_ADDR, the socket unix://DATA-DIR/etcd.sock of a node on this machine that serves no client TCP port, DATA-DIR from BATON_DATA_DIR or ./baton-data; else http://127.0.0.1:2379)")
	addNodeFlags(c, g, "a baton node of the cluster, asked for its members' etcd client URLs (env BATON_ADDR; ignored beside BATON_ETCD_ENDPOINTS)")
	c.PersistentFlags().DurationVar(&m.timeout, "timeout", 10*time.Second, "how long to wait for etcd's answer")
	g.addOutput(c, func() error {
		if m.timeout <= 0 {
			return usagef("--timeout must be positive")
		}
		fromFlag := m.etcd.endpoints != ""
		if fromFlag && g.addr != "" {
			return usagef("give --addr or --etcd-endpoints, not both")
		}
		// Flags before the environment, and a variable of etcd's before
		// one of baton's HTTP API.
		m.viaNode = g.addr != "" || !fromFlag && os.Getenv("BATON_ETCD_ENDPOINTS") == "" && strings.TrimSpace(os.Getenv("BATON_ADDR")) != ""
		if m.viaNode {
			return nil // resolved once the node has named its members (dial)
		}
		return m.etcd.resolve()
	})
	c.AddCommand(m.listCmd(), m.addCmd(), m.removeCmd())
	return c
}

// memberClient is what the member subcommands share: how to reach etcd,
// and how long to wait for it.
type memberClient struct {
	g       *globals
	etcd    etcdFlags
	timeout time.Duration
	// viaNode says the endpoints are to be asked of the baton node that
	// --addr or BATON_ADDR names.
	viaNode bool
}

func (m *memberClient) dial(ctx context.Context) (*clientv3.Client, error) {
	if m.viaNode {
		if err := m.askNode(ctx); err != nil {
			return nil, err
		}
	}
	tc, err := m.etcd.tlsConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: m.etcd.list(), DialTimeout: 5 * time.Second, TLS: tc})
	if err != nil {
		return nil, &ExitError{Code: ExitUnavailable, Err: fmt.Errorf("connect to etcd %s: %w", m.etcd.endpoints, err)}
	}
	return cli, nil
}

// call runs f with a client of etcd and a context of --timeout; a call
// that ran out of it is reported as etcd not answering.
func (m *memberClient) call(cmd *cobra.Command, f func(ctx context.Context, cli *clientv3.Client) error) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), m.timeout)
	defer cancel()
	cli, err := m.dial(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	err = m.isBaton(ctx, cli)
	if err == nil {
		err = f(ctx, cli)
	}
	if err != nil {
		if ctx.Err() != nil {
			return &ExitError{Code: ExitUnavailable, Err: fmt.Errorf("etcd at %s did not answer: %w", m.etcd.endpoints, err)}
		}
		return err
	}
	return nil
}

// askNode sets the endpoints to the etcd client URLs of the members of
// the baton node that --addr or BATON_ADDR names, as its /v1/cluster
// lists them.
func (m *memberClient) askNode(ctx context.Context) error {
	cl, err := m.g.client()
	if err != nil {
		return err
	}
	ci, err := cl.Cluster(ctx)
	if err != nil {
		return fmt.Errorf("ask the baton node for its etcd members: %w", err)
	}
	var urls []string
	for _, mb := range ci.Members {
		for _, u := range mb.ClientURLs {
			if !slices.Contains(urls, u) {
				urls = append(urls, u)
			}
		}
	}
	if len(urls) == 0 {
		return &ExitError{Code: ExitUsage, Err: errors.New("the cluster's etcd members serve no client URL (nodes with --auth-file and no --client-trusted-ca serve none over TCP): run baton member on a node's machine, where it finds the node's socket (BATON_DATA_DIR), or name the members with --etcd-endpoints")}
	}
	m.etcd.endpoints = strings.Join(urls, ",")
	return m.etcd.resolve()
}

// isBaton refuses an etcd that holds no key under baton's prefix: the
// default endpoint, or a URL mistyped, may reach someone else's etcd,
// whose members baton must neither list as its own nor change.
func (m *memberClient) isBaton(ctx context.Context, cli *clientv3.Client) error {
	prefix := lock.DefaultConfig().Prefix
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
	if err != nil {
		return fmt.Errorf("read etcd at %s: %w", m.etcd.endpoints, err)
	}
	if len(resp.Kvs) == 0 {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("etcd at %s holds no baton data (no key under %s): it is not a baton cluster's; name a node of yours with --addr, or its members with --etcd-endpoints", m.etcd.endpoints, prefix)}
	}
	return nil
}

func (m *memberClient) listCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the members",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return m.call(cmd, func(ctx context.Context, cli *clientv3.Client) error {
				resp, err := cli.MemberList(ctx)
				if err != nil {
					return fmt.Errorf("list members: %w", err)
				}
				return m.g.showMembers(resp.Members)
			})
		},
	}
}

func (m *memberClient) addCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "add NAME PEER-URL",
		Short: "Add a member, and print the flags to start it with",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, peer := args[0], args[1]
			if u, err := url.Parse(peer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usagef("PEER-URL %q is not an http(s)://host:port URL", peer)
			}
			return m.call(cmd, func(ctx context.Context, cli *clientv3.Client) error {
				resp, err := cli.MemberAdd(ctx, []string{peer})
				if err != nil {
					return fmt.Errorf("add member %s at %s: %w", name, peer, err)
				}
				return m.g.showAdded(resp, name, peer)
			})
		},
	}
}

// showAdded prints the flags that start the member just added as name.
func (g *globals) showAdded(resp *clientv3.MemberAddResponse, name, peer string) error {
	// The new member has no name until it starts; etcd's initial-cluster
	// needs one for every member.
	var ic []string
	for _, m := range resp.Members {
		n := m.Name
		if m.ID == resp.Member.ID {
			n = name
		}
		for _, p := range m.PeerURLs {
			ic = append(ic, n+"="+p)
		}
	}
	sort.Strings(ic)
	flags := []string{"--name", name, "--peer-url", peer, "--initial-cluster", strings.Join(ic, ","), "--initial-cluster-state", "existing"}
	if g.json() {
		return g.printJSON(map[string]any{"id": strconv.FormatUint(resp.Member.ID, 16), "name": name, "peer_url": peer, "flags": flags})
	}
	fmt.Fprintf(g.stdout, "added member %s (%x) at %s\nstart it, with an empty --data-dir, its own --http-addr and --client-url, and:\n  baton %s\n",
		name, resp.Member.ID, peer, strings.Join(flags, " "))
	if strings.HasPrefix(peer, "https://") {
		fmt.Fprintln(g.stdout, "plus the peer TLS flags the other members have (--peer-cert, --peer-key, --peer-trusted-ca, or --peer-auto-tls)")
	}
	return nil
}

func (m *memberClient) removeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME|ID",
		Short: "Remove a member (then stop its node)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return m.call(cmd, func(ctx context.Context, cli *clientv3.Client) error {
				resp, err := cli.MemberList(ctx)
				if err != nil {
					return fmt.Errorf("list members: %w", err)
				}
				for _, mb := range resp.Members {
					if mb.Name == args[0] || strconv.FormatUint(mb.ID, 16) == args[0] {
						if _, err := cli.MemberRemove(ctx, mb.ID); err != nil {
							return fmt.Errorf("remove member %s: %w", args[0], err)
						}
						if m.g.json() {
							return m.g.printJSON(map[string]any{"id": strconv.FormatUint(mb.ID, 16), "name": mb.Name, "removed": true})
						}
						fmt.Fprintf(m.g.stdout, "removed member %s (%x)\n", mb.Name, mb.ID)
						return nil
					}
				}
				return &ExitError{Code: ExitNotHeld, Err: fmt.Errorf("no member named %q", args[0])}
			})
		},
	}
}

func (g *globals) showMembers(ms []*etcdserverpb.Member) error {
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	if g.json() {
		out := make([]map[string]any, len(ms))
		for i, m := range ms {
			out[i] = map[string]any{"id": strconv.FormatUint(m.ID, 16), "name": m.Name,
				"peer_urls": nonNil(m.PeerURLs), "client_urls": nonNil(m.ClientURLs), "is_learner": m.IsLearner}
		}
		return g.printJSON(map[string]any{"members": out})
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tPEER URLS\tCLIENT URLS")
	for _, m := range ms {
		name := m.Name
		if name == "" {
			name = "(not started)"
		}
		fmt.Fprintf(tw, "%s\t%x\t%s\t%s\n", name, m.ID, strings.Join(m.PeerURLs, ","), dash(strings.Join(m.ClientURLs, ",")))
	}
	return tw.Flush()
}
