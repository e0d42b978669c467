package redis

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// releaseScript is the compare-and-delete of Redis's documentation of SET:
// a client whose lock expired, and was taken by another, cannot delete the
// new holder's lock, because the value it compares is its own token.
const releaseScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// Server is the Redis the redis peer ran against, as it describes
// itself, so that a reader of the figures can tell what they bought.
type Server struct {
	Addr    string `json:"addr"`
	Version string `json:"version"`
	// AOFEnabled is INFO's aof_enabled (appendonly); AppendFsync is how
	// often the append-only file is synced, empty when CONFIG GET is not
	// allowed.
	AOFEnabled  bool   `json:"aof_enabled"`
	AppendFsync string `json:"appendfsync,omitempty"`
	Replicas    int    `json:"connected_replicas"`
	// PID is the redis-server process whose CPU the redis rows report;
	// 0 when it could not be read, and NoCPU says why.
	PID   int    `json:"pid,omitempty"`
	NoCPU string `json:"no_cpu,omitempty"`
}

// fsyncsEachWrite reports whether the server syncs its log before it
// answers a write, as etcd does every commit.
func (s *Server) fsyncsEachWrite() bool {
	return s.AOFEnabled && s.AppendFsync == "always"
}

// Caveat says, under the table, why the redis rows are no like-for-like
// comparison with etcd's: they are the speed users give up for safety.
func (s *Server) Caveat() string {
	conf := "appendonly no"
	if s.AOFEnabled {
		conf = "appendonly yes, appendfsync " + s.AppendFsync
		if s.AppendFsync == "" {
			conf = "appendonly yes, appendfsync unknown: CONFIG GET refused"
		}
	}
	what := fmt.Sprintf("redis: one redis-server %s (%s, %d replicas)", s.Version, conf, s.Replicas)
	if s.fsyncsEachWrite() {
		return what + " fsyncs each write before answering it, as etcd does, but replicates, if at all, afterwards;\n" +
			"       etcd in a cluster also waits for a quorum before answering: still not a like-for-like safety comparison"
	}
	unless := ""
	if s.AOFEnabled && s.AppendFsync == "" {
		unless = " unless appendfsync is always"
	}
	return what + " answers a write before any disk has it" + unless + ", and replicates, if at all, afterwards;\n" +
		"       etcd fsyncs every commit before answering (and in a cluster waits for a quorum): not a like-for-like safety comparison, but the speed users give up for it"
}

// newRedisClient returns a client of addr with a single connection.
func newRedisClient(addr, password string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: addr, Password: password, PoolSize: 1})
}

// Inspect asks the server at addr what it is and finds its process,
// if it runs on this machine, for its CPU time.
func Inspect(ctx context.Context, addr, password string) (*Server, error) {
	c := newRedisClient(addr, password)
	defer c.Close()
	info, err := c.Info(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", addr, err)
	}
	fields := infoFields(info)
	s := &Server{Addr: addr, Version: fields["redis_version"], AOFEnabled: fields["aof_enabled"] == "1"}
	s.Replicas, _ = strconv.Atoi(fields["connected_slaves"])
	// Managed services often forbid CONFIG; the caveat then says less.
	if cfg, err := c.ConfigGet(ctx, "appendfsync").Result(); err == nil {
		s.AppendFsync = cfg["appendfsync"]
	}
	pid, err := strconv.Atoi(fields["process_id"])
	if err != nil {
		s.NoCPU = fmt.Sprintf("INFO gave no process_id (%q)", fields["process_id"])
		return s, nil
	}
	if err := listensHere(pid, addr); err != nil {
		s.NoCPU = err.Error()
		return s, nil
	}
	if _, err := measure.ProcCPU(pid); err != nil {
		s.NoCPU = err.Error()
		return s, nil
	}
	s.PID = pid
	return s, nil
}

// infoFields parses INFO's "key:value" lines; "# Section" lines and blank
// lines are skipped.
func infoFields(info string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// listensHere checks that process pid holds a socket listening on addr's
// port in this network namespace. INFO's process_id alone is not enough:
// a server in a container reports the pid of its own namespace, which
// here may be any other process, and a server on another machine reports
// one of that machine's.
func listensHere(pid int, addr string) error {
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return fmt.Errorf("port %q: %w", portStr, err)
	}
	inodes := make(map[string]bool)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listeningInodes(table, uint16(port), inodes); err != nil {
			return err
		}
	}
	if len(inodes) == 0 {
		return fmt.Errorf("no process of this machine listens on port %d (a remote server?)", port)
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return fmt.Errorf("INFO's process_id %d: %w", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fdDir + "/" + fd.Name())
		if err != nil {
			continue // closed since the listing
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return nil
		}
	}
	return fmt.Errorf("INFO's process_id %d does not listen on port %d here (a server in a container or on another machine?)", pid, port)
}

// listeningInodes adds the inodes of the sockets in a /proc/net/tcp{,6}
// table that listen on port.
func listeningInodes(table string, port uint16, inodes map[string]bool) error {
	b, err := os.ReadFile(table)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no IPv6
	}
	if err != nil {
		return err
	}
	const listen = "0A" // TCP_LISTEN, as the kernel prints st
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[1:] { // the first is the header
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != listen {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && uint16(p) == port {
			inodes[f[9]] = true
		}
	}
	return nil
}

// Cycles runs the redis peer's load, spec, whose kind the bench's main
// dispatches to GenCycles: the same acquire+release cycles as baton's,
// each client on a key of its own, as SET NX PX and a compare-and-delete
// script, from a load generator process like the HTTP scenarios. What it
// spent has the CPU of the redis-server process as the node's, when it
// could be found (see Inspect), and no raft entries, key writes or
// backend.
func (s *Server) Cycles(ctx context.Context, spec load.Spec) (load.LoopResult, measure.Spent, error) {
	lg, err := load.Start(ctx, spec)
	if err != nil {
		return load.LoopResult{}, measure.Spent{}, err
	}
	defer lg.Close()
	serverCPU := func() (time.Duration, error) {
		if s.PID == 0 {
			return 0, nil
		}
		return measure.ProcCPU(s.PID)
	}
	var loop load.LoopResult
	var server time.Duration
	u, err := measure.Measured(func() (time.Duration, error) {
		before, err := serverCPU()
		if err != nil {
			return 0, err
		}
		gen, err := lg.Run(&loop)
		if err != nil {
			return 0, err
		}
		after, err := serverCPU()
		server = after - before
		return gen, err
	})
	if err != nil {
		return load.LoopResult{}, measure.Spent{}, err
	}
	if err := lg.Wait(); err != nil {
		return load.LoopResult{}, measure.Spent{}, fmt.Errorf("load generator: %w", err)
	}
	// The node's process only idled, and whatever etcd committed meanwhile
	// was not Redis's doing.
	u.CPU, u.RaftEntries, u.KeyWrites, u.DBBytes = server, 0, 0, 0
	return loop, u, nil
}

// GenCycles is the load generator's side of the redis peer. A cycle is
// SET key token NX PX 30000, which takes the lock if nobody holds it,
// then EVALSHA of releaseScript, which deletes it if it still holds our
// token.
//
// Every worker has a client of its own with a pool of one connection
// rather than sharing one client with a pool of one per worker: so a
// worker always talks over the same connection, as each HTTP client keeps
// its one keep-alive connection, and no worker waits on a pool that all of
// them take connections from and give back to twice a cycle, which would
// be the harness's cost, not Redis's.
func GenCycles(ctx context.Context, spec load.Spec, p *load.Parent) error {
	conns := make([]*goredis.Client, spec.Clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for w := range conns {
		conns[w] = newRedisClient(spec.URL, spec.Password)
		// Connect before the clock starts, so no cycle pays for it.
		if err := conns[w].Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis %s: %w", spec.URL, err)
		}
	}
	sha, err := conns[0].ScriptLoad(ctx, releaseScript).Result()
	if err != nil {
		return fmt.Errorf("redis %s: script load: %w", spec.URL, err)
	}
	// A run's own keys and tokens: locks a killed earlier run left to
	// expire cannot collide with this run's, and a token is never reused.
	var nonce [8]byte
	rand.Read(nonce[:])
	run := hex.EncodeToString(nonce[:])
	keyPrefix := "baton-bench/" + run + "/" + spec.Prefix
	ttl := strconv.FormatInt(load.SessionTTL.Milliseconds(), 10)

	if err := p.Ready(); err != nil {
		return err
	}
	loop := load.ClosedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, seq int) error {
		c := conns[w]
		key := load.WorkerLock(keyPrefix, w)
		token := run + "-" + strconv.Itoa(w) + "-" + strconv.Itoa(seq)
		// Spelled out rather than SetNX, which sends EX 30 for whole
		// seconds: the cycle is the one the documentation gives.
		set := goredis.NewBoolCmd(ctx, "set", key, token, "nx", "px", ttl)
		_ = c.Process(ctx, set)
		ok, err := set.Result()
		if err != nil {
			return fmt.Errorf("acquire %s: %w", key, err)
		}
		if !ok {
			return fmt.Errorf("acquire %s: already held", key)
		}
		deleted, err := c.EvalSha(ctx, sha, []string{key}, token).Int()
		if err != nil {
			return fmt.Errorf("release %s: %w", key, err)
		}
		if deleted != 1 {
			return fmt.Errorf("release %s: no longer ours", key)
		}
		return nil
	})
	return p.Report(loop)
}
