package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/internal/freeport"
)

// Jar is where Debian's zookeeper package (through
// libzookeeper-java) puts the server; its manifest's Class-Path names
// every jar it needs.
const Jar = "/usr/share/java/zookeeper.jar"

// zooKeeperHeap is the server's -Xmx, ZK_SERVER_HEAP's default in
// upstream's zkEnv.sh, which Debian's zkServer.sh does not set.
const zooKeeperHeap = "-Xmx1000m"

// zooKeeperStart bounds how long the JVM may take to start and answer.
const zooKeeperStart = time.Minute

// Server is the standalone ZooKeeper the zookeeper peer ran
// against: the bench starts one of its own, on a temporary directory,
// and stops it at the end.
type Server struct {
	Addr string `json:"addr"`
	// Version is what srvr answers after "Zookeeper version:".
	Version string `json:"version"`
	// PID is the java process whose CPU the zookeeper rows report.
	PID int `json:"pid"`

	cmd    *exec.Cmd
	dir    string
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// zooKeeperConfig is the zoo.cfg of the bench's server: a standalone
// server as shipped (forceSync, the default, fsyncs the transaction log
// before every answer), with no limit on connections per address, since
// every worker opens its own session from 127.0.0.1, and no admin HTTP
// server to find a port for.
func zooKeeperConfig(dataDir string, port string) string {
	return strings.Join([]string{
		"tickTime=2000",
		"dataDir=" + dataDir,
		"clientPort=" + port,
		"clientPortAddress=127.0.0.1",
		"maxClientCnxns=0",
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr",
	}, "\n") + "\n"
}

// Installed says why the zookeeper peer cannot run a server from jar,
// or nil.
func Installed(jar string) error {
	if jar == "" {
		return errors.New("the zookeeper peer needs a server: -zookeeper-jar " + Jar)
	}
	if _, err := os.Stat(jar); err != nil {
		return fmt.Errorf("the zookeeper peer needs Debian's zookeeper package (apt-get install zookeeper): %w", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("the zookeeper peer needs java to run %s: %w", jar, err)
	}
	return nil
}

// Start starts a standalone server from jar on a free loopback
// port and returns once it serves (see await), or cleans up and fails.
func Start(ctx context.Context, jar string) (*Server, error) {
	dir, err := os.MkdirTemp("", "baton-bench-zk-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, exited: make(chan struct{})}
	if err := s.start(jar); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.await(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(jar string) error {
	var err error
	if s.Addr, err = freeport.Addr(); err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	cfg := filepath.Join(s.dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(zooKeeperConfig(filepath.Join(s.dir, "data"), port)), 0o644); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(s.dir, "zookeeper.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	// The server's own main, not zkServer.sh, which daemonises it: the
	// pid is then java's, whose CPU the rows report.
	s.cmd = exec.Command("java", zooKeeperHeap, "-cp", jar, "org.apache.zookeeper.server.ZooKeeperServerMain", cfg)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	// A bench killed before it could stop the server takes it along.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start zookeeper: %w", err)
	}
	s.PID = s.cmd.Process.Pid
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	return nil
}

// await polls the server until it answers ruok with imok and srvr with
// its version: it says imok as soon as it listens, and serves requests
// only once it has loaded its database. It fails with the server's log if
// the JVM exits first.
func (s *Server) await(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, zooKeeperStart)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond) // the pace of the polls
	defer tick.Stop()
	for {
		ans, err := fourLetters(ctx, s.Addr, "ruok")
		if err == nil && ans == "imok" {
			ans, err = fourLetters(ctx, s.Addr, "srvr")
			if version, _, _ := strings.Cut(ans, "\n"); err == nil && strings.HasPrefix(version, "Zookeeper version:") {
				s.Version = strings.TrimSpace(strings.TrimPrefix(version, "Zookeeper version:"))
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("zookeeper exited: %v\n%s", s.err, s.log())
		case <-ctx.Done():
			return fmt.Errorf("zookeeper not serving within %s (last answer %q, %v)\n%s", zooKeeperStart, ans, err, s.log())
		case <-tick.C:
		}
	}
}

// fourLetters sends one of ZooKeeper's four-letter commands and returns
// its answer; the server closes the connection after it.
func fourLetters(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return strings.TrimSpace(string(b)), err
}

func (s *Server) log() []byte {
	b, _ := os.ReadFile(filepath.Join(s.dir, "zookeeper.log"))
	return b
}

// Close stops the server and removes its data.
func (s *Server) Close() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}

// Caveat says, under the table, what the zookeeper rows measured.
func (s *Server) Caveat() string {
	version, _, _ := strings.Cut(s.Version, ",") // before ", built on"
	return fmt.Sprintf("zookeeper: one standalone ZooKeeper %s (forceSync as shipped: fsyncs its log before answering), %s, the lock recipe of Curator's InterProcessMutex,\n"+
		"       one session per worker, in the bench's process, after an untimed warm-up of the server's JVM; cpu and node cores are the server's (pid %d), gen the bench's; raft/cycle does not apply",
		version, zooKeeperHeap, s.PID)
}

// zkLocksRoot holds a persistent node per lock name; the lock recipe's
// sequential children go under it.
const zkLocksRoot = "/locks"

// zkLockPrefix is the name of every contender's node, after the
// "_c_<guid>-" of CreateProtectedEphemeralSequential and before the
// sequence number the server appends.
const zkLockPrefix = "lock-"

// zkSession opens a ZooKeeper session and waits until it is established.
func zkSession(ctx context.Context, addr string) (*zk.Conn, error) {
	has := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect([]string{addr}, load.SessionTTL,
		zk.WithLogger(zkQuiet{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				once.Do(func() { close(has) })
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case <-has:
		return conn, nil
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("zookeeper %s: no session: %w", addr, ctx.Err())
	}
}

// zkQuiet drops the client's logging: its errors come back from the calls.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkEnsure creates path and its parents as persistent nodes, if absent.
func zkEnsure(conn *zk.Conn, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, err := conn.Create(path[:i], nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", path[:i], err)
		}
	}
	return nil
}

// zkMutex is the ZooKeeper lock recipe as Curator's InterProcessMutex
// implements it, on the lock node dir: each contender creates an
// ephemeral sequential child; the lowest sequence number holds the lock;
// every other contender watches only the child just below its own, so a
// release wakes one contender, not the whole queue (no herd). Release
// deletes the child; so does the end of the session that made it.
//
// node and blocker make it the recipe of Curator's other locks on one
// queue of children (InterProcessReadWriteLock's): node names the
// contender's child (zkLockPrefix when empty), and blocker picks the
// child whose deletion it waits for, "" when none is in its way
// (zkPredecessor when nil).
type zkMutex struct {
	conn    *zk.Conn
	dir     string
	node    string
	blocker func(children []string, seq int64) (string, error)
}

func (m zkMutex) nodeName() string {
	if m.node == "" {
		return zkLockPrefix
	}
	return m.node
}

func (m zkMutex) blockedBy(children []string, seq int64) (string, error) {
	if m.blocker == nil {
		return zkPredecessor(children, seq)
	}
	return m.blocker(children, seq)
}

// zkHold is one acquisition of a zkMutex (or a lease of a zkSemaphore).
type zkHold struct {
	path string
	// seq is the child's sequence number, which orders the holds.
	seq int64
	// waits counts the watches that fired before the hold: for the lock,
	// at most one when no contender gives up waiting, since a
	// predecessor's node goes only when it has held and released the
	// lock; a reader may wait for several writers in turn.
	waits int
}

// lock waits for the lock until ctx ends; on failure it deletes its child,
// so that it does not hold up the contenders behind it.
func (m zkMutex) lock(ctx context.Context) (zkHold, error) {
	path, err := m.conn.CreateProtectedEphemeralSequential(m.dir+"/"+m.nodeName(), nil, zk.WorldACL(zk.PermAll))
	if err != nil {
		return zkHold{}, fmt.Errorf("lock %s: create: %w", m.dir, err)
	}
	h := zkHold{path: path}
	if h.seq, err = zkSequence(path); err == nil {
		err = m.await(ctx, &h)
	}
	if err != nil {
		// The session may be gone too; then the server deleted the node.
		m.conn.Delete(path, -1)
		return zkHold{}, fmt.Errorf("lock %s: %w", m.dir, err)
	}
	return h, nil
}

// await returns once nothing is in the way of h's child (for the lock,
// once it is the lowest), watching the child in its way.
func (m zkMutex) await(ctx context.Context, h *zkHold) error {
	for {
		children, _, err := m.conn.Children(m.dir)
		if err != nil {
			return fmt.Errorf("children: %w", err)
		}
		pred, err := m.blockedBy(children, h.seq)
		if err != nil || pred == "" {
			return err
		}
		// A data watch, as Curator sets: unlike an exists watch, it is not
		// left behind on the server when the predecessor is already gone.
		_, _, ch, err := m.conn.GetW(m.dir + "/" + pred)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", pred, err)
		}
		select {
		case ev := <-ch:
			if ev.Err != nil {
				return fmt.Errorf("watch %s: %w", pred, ev.Err)
			}
			h.waits++
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// unlock releases h.
func (m zkMutex) unlock(h zkHold) error {
	if err := m.conn.Delete(h.path, -1); err != nil {
		return fmt.Errorf("unlock %s: %w", h.path, err)
	}
	return nil
}

// zkSequence reads the sequence number the server appended to a
// sequential node's name: ten digits.
func zkSequence(name string) (int64, error) {
	if len(name) < 10 {
		return 0, fmt.Errorf("node %q has no sequence number", name)
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("node %q has no sequence number: %w", name, err)
	}
	return n, nil
}

// zkPredecessor is the contender just before seq among a lock's children,
// or "" when seq is the lowest and holds the lock. Children are ordered by
// sequence number alone: the guids before it are random.
func zkPredecessor(children []string, seq int64) (string, error) {
	pred, predSeq := "", int64(-1)
	for _, c := range children {
		if !strings.Contains(c, zkLockPrefix) {
			continue // not a contender's node
		}
		s, err := zkSequence(c)
		if err != nil {
			return "", err
		}
		if s < seq && s > predSeq {
			pred, predSeq = c, s
		}
	}
	return pred, nil
}

// zkSessions opens n sessions, one per worker, before the clock starts.
func zkSessions(ctx context.Context, addr string, n int) ([]*zk.Conn, func(), error) {
	conns := make([]*zk.Conn, n)
	closeAll := func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
	err := load.Parallel(ctx, min(n, 16), n, func(ctx context.Context, i int) error {
		var err error
		conns[i], err = zkSession(ctx, addr)
		return err
	})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return conns, closeAll, nil
}
