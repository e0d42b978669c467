// Package testcluster runs real baton processes as one cluster for tests:
// each node a separate "baton" process with its own data dir, so that
// tests can SIGKILL, SIGSTOP and restart them like an operator's machine
// would see. With Options.Netns every node also gets its own network
// namespace on a private bridge, so that a test can cut a node off from
// the others (Partition) while the test process still reaches all of them.
//
// Build the binary once per test binary, in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, &bin)) }
//	...
//	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 3})
//	leader := c.Leader(t)
//	c.Nodes[leader].Kill()
package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/tests/testetcd"
)

// Build compiles baton into a temporary directory, with its failpoints
// (-tags failpoints: Node.HaltTrail). cleanup removes it.
func Build() (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "baton-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, "baton")
	out, err := exec.Command("go", "build", "-tags", "failpoints", "-o", bin, "github.com/baton-dev/baton").CombinedOutput()
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build baton: %v\n%s", err, out)
	}
	return bin, cleanup, nil
}

// Main is a TestMain for packages that start clusters: it builds baton,
// stores the binary's path in *bin, runs the tests and removes the binary.
// It returns the exit code for os.Exit.
func Main(m *testing.M, bin *string) int {
	b, cleanup, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	*bin = b
	return m.Run()
}

// Options describes a cluster.
type Options struct {
	// Bin is the baton binary (see Build).
	Bin string
	// Nodes is the number of members; 3 when 0.
	Nodes int
	// Netns puts every node in its own network namespace (needs root and
	// iproute2); Partition needs it. Start skips the test when it cannot.
	Netns bool
	// LogDir receives one log file per node; t.TempDir() when empty.
	LogDir string
	// Args are extra flags for every node.
	Args []string
	// AuthFile, when set, turns authentication on: every node starts
	// with --auth-file AuthFile, and Token is the bearer token the
	// cluster's own requests send (Status, Leader, GetJSON). Such nodes
	// serve etcd's client API on the socket in their data dirs only
	// (Node.EtcdURL): etcd's API knows no baton credential.
	AuthFile string
	Token    string
}

// Cluster is a running set of baton processes.
type Cluster struct {
	t     testing.TB
	opts  Options
	Nodes []*Node
	extra []*Node  // AddNode's
	net   *network // nil without Netns
}

// Node is one baton process.
type Node struct {
	Name      string
	Index     int
	HTTPAddr  string // host:port the test process reaches it at
	PeerURL   string
	ClientURL string
	DataDir   string
	LogPath   string

	args  []string // the flags it was started with
	netns string   // its namespace, or ""
	bin   string
	auth  bool // started with --auth-file: no client TCP listener

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd ends
	logf   *os.File
}

// URL is the node's HTTP base URL.
func (n *Node) URL() string { return "http://" + n.HTTPAddr }

// EtcdURL is where an etcd client reaches the node's member: its
// ClientURL, or with authentication on the socket in its data dir, which
// a node with --auth-file and no client CA serves in its place. A
// socket's path is the same from every network namespace.
func (n *Node) EtcdURL() string {
	if n.auth {
		return embedetcd.SocketURL(n.DataDir)
	}
	return n.ClientURL
}

// Start starts the cluster and waits until every node answers /readyz.
// Everything is stopped and removed when the test ends. The fast tier
// (go test -short) skips the test: a cluster of processes takes seconds
// to form and to stop.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a cluster of baton processes: not in the fast tier")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.LogDir == "" {
		opts.LogDir = t.TempDir()
	}
	c := &Cluster{t: t, opts: opts}
	t.Cleanup(c.stop)
	var hosts []string
	if opts.Netns {
		nw, err := newNetwork(opts.Nodes)
		var broken *brokenNetworkError
		if errors.As(err, &broken) {
			t.Fatalf("the test's network namespaces cannot reach each other: %v", err)
		}
		if err != nil {
			t.Skipf("network namespaces unavailable (%v): run as root with iproute2 for the partition tests", err)
		}
		c.net = nw
		for i := range opts.Nodes {
			hosts = append(hosts, nw.ip(i))
		}
	}
	var ic []string
	for i := range opts.Nodes {
		n := &Node{Name: fmt.Sprintf("n%d", i+1), Index: i, DataDir: dataDir(t), bin: opts.Bin, auth: opts.AuthFile != ""}
		if c.net != nil {
			n.netns = c.net.ns(i)
			n.HTTPAddr = hosts[i] + ":8080"
			n.PeerURL = "http://" + hosts[i] + ":2380"
			n.ClientURL = "http://" + hosts[i] + ":2379"
		} else {
			n.HTTPAddr = testetcd.FreeAddr(t)
			n.PeerURL = "http://" + testetcd.FreeAddr(t)
			n.ClientURL = "http://" + testetcd.FreeAddr(t)
		}
		n.LogPath = filepath.Join(opts.LogDir, n.Name+".log")
		ic = append(ic, n.Name+"="+n.PeerURL)
		c.Nodes = append(c.Nodes, n)
	}
	for _, n := range c.Nodes {
		n.args = append([]string{
			"--name", n.Name, "--data-dir", n.DataDir, "--http-addr", n.HTTPAddr,
			"--peer-url", n.PeerURL, "--client-url", n.ClientURL,
			"--initial-cluster", strings.Join(ic, ","), "--log-level", "warn",
			"--shutdown-timeout", "5s",
		}, opts.Args...)
		if opts.AuthFile != "" {
			n.args = append(n.args, "--auth-file", opts.AuthFile)
		}
		if err := n.start(); err != nil {
			t.Fatalf("start %s: %v", n.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range c.Nodes {
		if err := n.WaitReady(ctx); err != nil {
			t.Fatalf("%s not ready: %v\n%s", n.Name, err, n.LogTail())
		}
	}
	return c
}

// AddNode starts one more baton process with its own data dir, HTTP
// address and etcd client URL, plus args: for a join, the flags "baton
// member add" printed; for a node without a member, --etcd-endpoints. It
// waits until the node is ready, and stops it when the test ends. It is
// not one of the Nodes the cluster's other methods look at.
func (c *Cluster) AddNode(name string, args []string) *Node {
	c.t.Helper()
	if c.net != nil {
		c.t.Fatal("testcluster: AddNode works without Netns only")
	}
	n := &Node{Name: name, DataDir: dataDir(c.t), bin: c.opts.Bin,
		HTTPAddr: testetcd.FreeAddr(c.t), ClientURL: "http://" + testetcd.FreeAddr(c.t)}
	n.LogPath = filepath.Join(c.opts.LogDir, n.Name+".log")
	n.args = append([]string{"--data-dir", n.DataDir, "--http-addr", n.HTTPAddr, "--client-url", n.ClientURL,
		"--log-level", "warn", "--shutdown-timeout", "5s"}, args...)
	c.extra = append(c.extra, n)
	if err := n.start(); err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		c.t.Fatalf("%s not ready: %v\n%s", name, err, n.LogTail())
	}
	return n
}

func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return errors.New("already running")
	}
	f, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s start %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(n.args, " "))
	var cmd *exec.Cmd
	if n.netns != "" {
		// "ip netns exec" enters the namespace and then execs baton, so
		// the pid is baton's own and signals reach it directly.
		cmd = exec.Command("ip", append([]string{"netns", "exec", n.netns, n.bin}, n.args...)...)
	} else {
		cmd = exec.Command(n.bin, n.args...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	n.cmd, n.logf, n.exited = cmd, f, make(chan struct{})
	go func(cmd *exec.Cmd, f *os.File, exited chan struct{}) {
		err := cmd.Wait()
		fmt.Fprintf(f, "=== %s exit: %v\n", time.Now().Format(time.RFC3339Nano), err)
		f.Close()
		n.mu.Lock()
		if n.cmd == cmd {
			n.cmd = nil
		}
		n.mu.Unlock()
		close(exited)
	}(cmd, f, n.exited)
	return nil
}

// Running reports whether the process is up (it may be stopped).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Pid is the process's pid, or 0 when it is not running.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Kill sends SIGKILL and waits until the process is gone.
func (n *Node) Kill() { n.end(syscall.SIGKILL) }

// Terminate sends SIGTERM (a clean shutdown) and waits until it exits.
func (n *Node) Terminate() { n.end(syscall.SIGTERM) }

func (n *Node) end(sig syscall.Signal) {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	// A stopped process does not act on SIGTERM until it runs again.
	cmd.Process.Signal(syscall.SIGCONT)
	<-exited
}

// Exited is closed when the current process ends on its own or by a
// signal; nil when none runs.
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exited
}

// Stop sends SIGSTOP: the process freezes, as in a long GC pause or a VM
// migration, with its sockets still open.
func (n *Node) Stop() { n.signal(syscall.SIGSTOP) }

// Cont sends SIGCONT.
func (n *Node) Cont() { n.signal(syscall.SIGCONT) }

// HaltTrail halts (true) or resumes (false) the node's audit trail
// writer through the binary's failpoint (SIGUSR1, SIGUSR2), and waits
// until the node has logged that it did.
func (n *Node) HaltTrail(ctx context.Context, halt bool) error {
	line := fmt.Sprintf("msg=\"failpoint: audit trail writer\" halted=%v", halt)
	count := func() int {
		b, _ := os.ReadFile(n.LogPath)
		return strings.Count(string(b), line)
	}
	before := count()
	sig := syscall.SIGUSR2
	if halt {
		sig = syscall.SIGUSR1
	}
	n.signal(sig)
	for count() == before {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not log %s: %w", n.Name, line, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polling its log file
		}
	}
	return nil
}

func (n *Node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		n.cmd.Process.Signal(sig)
	}
}

// Restart starts the process again on its data dir after Kill.
func (n *Node) Restart() error { return n.start() }

// WaitReady waits until /readyz answers 200.
func (n *Node) WaitReady(ctx context.Context) error {
	hc := &http.Client{Timeout: 3 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n.mu.Lock()
		exited := n.exited
		n.mu.Unlock()
		select {
		case <-exited:
			return errors.New("process exited")
		default:
		}
		resp, err := hc.Get(n.URL() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// LogTail is the end of the node's log, for failure messages.
func (n *Node) LogTail() string {
	b, _ := os.ReadFile(n.LogPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return fmt.Sprintf("--- %s log (%s) ---\n%s", n.Name, n.LogPath, b)
}

// Status asks node i for /v1/cluster.
func (c *Cluster) Status(ctx context.Context, i int) (*api.Cluster, error) {
	var st api.Cluster
	if err := c.GetJSON(ctx, c.Nodes[i].URL()+"/v1/cluster", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Leader returns the index of the node that leads, as the running nodes
// agree; it waits (up to ctx) until a majority of them name the same one.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		votes := map[string]int{}
		for i, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := c.Status(sctx, i)
			cancel()
			if err != nil || st.Leader == "" {
				continue
			}
			for _, m := range st.Members {
				if m.IsLeader {
					votes[m.Name]++
				}
			}
		}
		for name, v := range votes {
			if v > len(c.Nodes)/2 {
				for i, n := range c.Nodes {
					if n.Name == name && n.Running() {
						return i, nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no leader agreed on by a majority: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// MoveLeader hands etcd's leadership to node to, as an operator's
// "etcdctl move-leader" does (Maintenance.MoveLeader, which etcd takes
// from the current leader only), and waits until a majority of the running
// nodes name it leader. It returns at once if to leads already.
func (c *Cluster) MoveLeader(ctx context.Context, to int) error {
	from, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{c.Nodes[from].EtcdURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("etcd client of %s: %w", c.Nodes[from].Name, err)
	}
	defer cli.Close()
	st, err := cli.Status(ctx, c.Nodes[to].EtcdURL())
	if err != nil {
		return fmt.Errorf("etcd status of %s: %w", c.Nodes[to].Name, err)
	}
	if _, err := cli.MoveLeader(ctx, st.Header.MemberId); err != nil {
		return fmt.Errorf("move etcd leadership from %s to %s: %w", c.Nodes[from].Name, c.Nodes[to].Name, err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		l, err := c.Leader(ctx)
		if err != nil {
			return err
		}
		if l == to {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s does not lead after the transfer: %w", c.Nodes[to].Name, ctx.Err())
		case <-tick.C:
		}
	}
}

// Partition cuts node i off from every other node, both ways, while the
// test process still reaches it: the others' packets to it, and its
// packets to them, are dropped (blackhole routes), as in a real network
// split. Heal undoes it.
func (c *Cluster) Partition(i int) error {
	if c.net == nil {
		return errors.New("testcluster: Partition needs Options.Netns")
	}
	for j := range c.Nodes {
		if j == i {
			continue
		}
		if err := c.net.blackhole(i, j, true); err != nil {
			return err
		}
		if err := c.net.blackhole(j, i, true); err != nil {
			return err
		}
	}
	return nil
}

// Heal removes every partition.
func (c *Cluster) Heal() error {
	if c.net == nil {
		return nil
	}
	var errs []error
	for i := range c.Nodes {
		for j := range c.Nodes {
			if i != j {
				errs = append(errs, c.net.blackhole(i, j, false))
			}
		}
	}
	return errors.Join(errs...)
}

// CanPartition reports whether Partition works in this cluster.
func (c *Cluster) CanPartition() bool { return c.net != nil }

func (c *Cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range append(c.Nodes, c.extra...) {
		wg.Add(1)
		go func() { defer wg.Done(); n.Kill() }()
	}
	wg.Wait()
	if c.net != nil {
		c.net.close()
	}
	if c.t.Failed() {
		for _, n := range append(c.Nodes, c.extra...) {
			c.t.Log(n.LogTail())
		}
	}
}

// dataDir is a fresh directory with the permissions etcd asks for (it
// warns about anything wider than 0700).
func dataDir(t testing.TB) string {
	d := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// GetJSON decodes the JSON answer of a GET that must answer 200.
func GetJSON(ctx context.Context, url string, out any) error {
	return getJSON(ctx, url, "", out)
}

// GetJSON is the package's GetJSON with the cluster's Token, if any.
func (c *Cluster) GetJSON(ctx context.Context, url string, out any) error {
	return getJSON(ctx, url, c.opts.Token, out)
}

func getJSON(ctx context.Context, url, token string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}
