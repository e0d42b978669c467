package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnap "go.etcd.io/etcd/client/v3/snapshot"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/baton-dev/baton/embedetcd"
)

// DefaultRevisionBump is how far "baton snapshot restore" moves etcd's
// revision past the snapshot's. Fencing tokens are revisions, and the
// cluster that was backed up went on handing out tokens after the backup:
// without a bump the restored cluster would hand the same numbers out
// again, to other holders, and a fenced resource would take a new
// holder's writes for stale or, worse, an old holder's for current. A
// billion is more writes than a baton cluster makes between two backups
// (at 10,000 writes a second, a day is 864 million), and still leaves
// tokens far below 2^53, where JSON numbers lose precision.
const DefaultRevisionBump = 1_000_000_000

// snapshotCmd saves and restores the etcd data under baton: every lock,
// session, fenced value and audit event. Like member, it talks to etcd
// (its client port, or the files), not to baton's HTTP API.
func snapshotCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "snapshot",
		Short: "Back up a baton cluster's etcd data to a file, and restore it into a new data dir",
		Long: `snapshot saves the etcd database under baton (locks, sessions, fenced values,
the audit trail) from one member's client port into a file, and restores
such a file into a NEW data dir from which a node starts. It uses etcd's
own snapshot code: a saved file carries a SHA-256 that restore checks.

Back up:   baton snapshot save backup.db --etcd-endpoints http://10.0.0.1:2379
Check it:  baton snapshot status backup.db
Restore:   baton snapshot restore backup.db --data-dir /var/lib/baton-restored \
             --name n1 --peer-url http://10.0.0.1:2380 --initial-cluster n1=http://10.0.0.1:2380
           then start the node with the same --data-dir, --name, --peer-url
           and --initial-cluster.

Restore never touches an existing data dir: it refuses one that is not
empty. It moves the revision --bump-revision past the snapshot's, so that
every fencing token after the restore exceeds every token the old cluster
handed out, even after the backup. See docs/OPERATIONS.md.`,
	}
	g.addOutput(c, nil)
	c.AddCommand(snapshotSaveCmd(g), snapshotStatusCmd(g), snapshotRestoreCmd(g))
	return c
}

func snapshotSaveCmd(g *globals) *cobra.Command {
	var etcd etcdFlags
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a snapshot of one member's etcd database to FILE",
		Long: `save streams a point-in-time copy of the etcd database from one member's client
port (a node's --client-url, or unix://DATA-DIR/etcd.sock on the node's machine
when it serves no client TCP port) into FILE, through FILE.part, so that FILE is
whole or absent. An existing FILE is replaced. FILE - writes the snapshot to
stdout as it comes (kubectl exec baton-0 -- baton snapshot save - > backup.db),
and the summary to stderr; check the exit status: a save that fails has
written part of a file. Any member will do: each
holds all the data, and a snapshot of a member that lags its leader by a
few writes is still a consistent past state.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usagef("--timeout must be positive")
			}
			if err := etcd.resolve(); err != nil {
				return err
			}
			if strings.Contains(etcd.endpoints, ",") {
				return usagef("--etcd-endpoints: save reads one member, give one client URL, not %q", etcd.endpoints)
			}
			tc, err := etcd.tlsConfig()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			file := args[0]
			cfg := clientv3.Config{Endpoints: etcd.list(), DialTimeout: 5 * time.Second, TLS: tc}
			var version string
			if file == "-" {
				var size int64
				size, version, err = saveStream(ctx, cfg, g.stdout)
				if err == nil {
					fmt.Fprintf(g.stderr, "saved to stdout: %d bytes, SHA-256 checked, etcd %s\n", size, version)
					return nil
				}
			} else {
				version, err = clientsnap.SaveWithVersion(ctx, zap.NewNop(), cfg, file)
			}
			if err != nil {
				code := ExitFailure
				if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
					code = ExitUnavailable
				}
				return &ExitError{Code: code, Err: fmt.Errorf("save snapshot from %s: %w", etcd.endpoints, err)}
			}
			st, err := snapshot.NewV3(zap.NewNop()).Status(file)
			if err != nil {
				return fmt.Errorf("check saved snapshot %s: %w", file, err)
			}
			return g.showSnapshot("saved", file, st, version)
		},
	}
	etcd.add(c.Flags(), "client URL of the one etcd member to read (env BATON_ETCD_ENDPOINTS; default: the socket unix://DATA-DIR/etcd.sock of a node on this machine that serves no client TCP port, DATA-DIR from BATON_DATA_DIR or ./baton-data; else http://127.0.0.1:2379, a node's default --client-url)")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long the whole save may take")
	return c
}

// saveStream writes the snapshot of the one member cfg names to w as etcd
// streams it, for "save -": a container without a shell or tar (the
// distroless image) cannot hand a saved file to kubectl cp, but kubectl
// exec passes stdout on. etcd ends the stream with the SHA-256 of what
// precedes it, which restore checks; saveStream checks it too, so that a
// stream cut short is an error here rather than at restore.
func saveStream(ctx context.Context, cfg clientv3.Config, w io.Writer) (size int64, version string, err error) {
	// Quiet, as save to a file is: etcd's client logs at info level by
	// default, onto the stderr that carries the summary.
	cfg.Logger = zap.NewNop()
	cli, err := clientv3.New(cfg)
	if err != nil {
		return 0, "", err
	}
	defer cli.Close()
	resp, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return 0, "", err
	}
	defer resp.Snapshot.Close()
	sum := &trailedHash{h: sha256.New()}
	if size, err = io.Copy(io.MultiWriter(w, sum), resp.Snapshot); err != nil {
		return size, resp.Version, fmt.Errorf("write snapshot: %w", err)
	}
	if len(sum.tail) != sha256.Size || !bytes.Equal(sum.h.Sum(nil), sum.tail) {
		return size, resp.Version, fmt.Errorf("the snapshot stream (%d bytes) does not end with its SHA-256: it was cut short", size)
	}
	return size, resp.Version, nil
}

// trailedHash hashes what is written to it but its last sha256.Size
// bytes, which it keeps in tail: the trailer of etcd's snapshot stream.
type trailedHash struct {
	h    hash.Hash
	tail []byte
}

func (t *trailedHash) Write(p []byte) (int, error) {
	buf := append(t.tail, p...)
	if n := len(buf) - sha256.Size; n > 0 {
		t.h.Write(buf[:n])
		buf = buf[n:]
	}
	t.tail = bytes.Clone(buf)
	return len(p), nil
}

func snapshotStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status FILE",
		Short: "Check a snapshot file and print its revision, key count and size",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := snapshot.NewV3(zap.NewNop()).Status(args[0])
			if err != nil {
				return fmt.Errorf("read snapshot %s: %w", args[0], err)
			}
			return g.showSnapshot("snapshot", args[0], st, "")
		},
	}
}

func snapshotRestoreCmd(g *globals) *cobra.Command {
	var o restoreOptions
	c := &cobra.Command{
		Use:   "restore FILE --data-dir DIR --name NAME --peer-url URL [--initial-cluster ...]",
		Short: "Restore a snapshot into a new, empty data dir for one member",
		Long: `restore writes a data dir for one member of a new cluster holding FILE's data.
To restore a cluster of several members, run it once per member, with the
same FILE, --initial-cluster, --initial-cluster-token and --bump-revision
and that member's --name and --peer-url, then start every node with the
same --data-dir, --name, --peer-url and --initial-cluster it was restored
with.

The locks held when the snapshot was taken come back with their leases,
which etcd restarts at their full TTL when the new cluster elects its
leader: a holder that still renews keeps its lock, and the others expire
(recorded in the audit trail as expired or session_expired).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(g, args[0]) },
	}
	// A node's defaults, so that a restored member starts with the flags
	// its node would have.
	member := embedetcd.NewConfig()
	f := c.Flags()
	f.StringVar(&o.dataDir, "data-dir", "", "the NEW data dir to write; it must not exist or must be empty")
	f.StringVar(&o.name, "name", member.Name, "the member's name, as the node will be started with")
	f.StringVar(&o.peerURL, "peer-url", member.PeerURL, "the member's peer URL, as the node will be started with")
	f.StringVar(&o.initialCluster, "initial-cluster", "", "NAME=PEER-URL,… of every member of the restored cluster (default: this member alone)")
	f.StringVar(&o.token, "initial-cluster-token", "", `the new cluster's token, the same for every member restored (default "baton-restored-" and FILE's hash, so every member restored from one file agrees, and no member of the old cluster, bootstrapped with etcd's "etcd-cluster", is taken for one of the new)`)
	f.Uint64Var(&o.bump, "bump-revision", DefaultRevisionBump, "how far past the snapshot's revision the restored cluster starts, so fencing tokens never go back; 0 for none (only if the backed-up cluster handed out no token after the snapshot)")
	f.BoolVar(&o.skipHash, "skip-hash-check", false, "accept a file without etcd's SHA-256 trailer (a member's member/snap/db copied by hand)")
	return c
}

// restoreOptions are the flags of "baton snapshot restore".
type restoreOptions struct {
	dataDir, name, peerURL, initialCluster, token string
	bump                                          uint64
	skipHash                                      bool
}

// run restores file into o.dataDir, and prints the flags to start the
// restored member with.
func (o restoreOptions) run(g *globals, file string) error {
	if o.dataDir == "" {
		return usagef("--data-dir is required: the new data dir to write (it must not exist, or be empty)")
	}
	if o.name == "" {
		return usagef("--name must not be empty")
	}
	if u, err := url.Parse(o.peerURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--peer-url %q is not an http(s)://host:port URL", o.peerURL)
	}
	if o.initialCluster == "" {
		o.initialCluster = o.name + "=" + o.peerURL
	}
	lg := zap.NewNop()
	st, err := snapshot.NewV3(lg).Status(file)
	if err != nil {
		return fmt.Errorf("read snapshot %s: %w", file, err)
	}
	if o.token == "" {
		// etcd derives member and cluster IDs from the token and the peer
		// URLs: with the old cluster's token and the same URLs, a member
		// of the old cluster left running would be taken for one of the
		// new, with another history.
		o.token = fmt.Sprintf("baton-restored-%08x", st.Hash)
	}
	_, statErr := os.Stat(o.dataDir)
	created := errors.Is(statErr, os.ErrNotExist)
	err = snapshot.NewV3(lg).Restore(snapshot.RestoreConfig{
		SnapshotPath: file, Name: o.name, OutputDataDir: o.dataDir,
		PeerURLs: []string{o.peerURL}, InitialCluster: o.initialCluster, InitialClusterToken: o.token,
		SkipHashCheck: o.skipHash, RevisionBump: o.bump, MarkCompacted: o.bump > 0,
	})
	if err != nil {
		if created {
			// Half a data dir must not be mistaken for a whole one.
			os.RemoveAll(o.dataDir)
		}
		return fmt.Errorf("restore %s into %s: %w", file, o.dataDir, err)
	}
	flags := []string{"--data-dir", o.dataDir, "--name", o.name, "--peer-url", o.peerURL, "--initial-cluster", o.initialCluster}
	if g.json() {
		return g.printJSON(map[string]any{
			"file": file, "data_dir": o.dataDir, "snapshot_revision": st.Revision,
			"revision": st.Revision + int64(o.bump), "keys": st.TotalKey, "flags": flags,
		})
	}
	fmt.Fprintf(g.stdout, "restored %s (revision %d, %d keys) into %s; tokens continue above revision %d\n"+
		"start the node with its usual --http-addr and --client-url, and:\n  baton %s\n",
		file, st.Revision, st.TotalKey, o.dataDir, st.Revision+int64(o.bump), strings.Join(flags, " "))
	return nil
}

func (g *globals) showSnapshot(what, file string, st snapshot.Status, version string) error {
	if g.json() {
		out := map[string]any{"file": file, "revision": st.Revision, "keys": st.TotalKey, "size": st.TotalSize, "hash": st.Hash}
		if version != "" {
			out["etcd_version"] = version
		}
		return g.printJSON(out)
	}
	fmt.Fprintf(g.stdout, "%s %s: revision %d, %d keys, %d bytes, hash %08x", what, file, st.Revision, st.TotalKey, st.TotalSize, st.Hash)
	if version != "" {
		fmt.Fprintf(g.stdout, ", etcd %s", version)
	}
	fmt.Fprintln(g.stdout)
	return nil
}
