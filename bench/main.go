package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/peer/redis"
	"github.com/baton-dev/baton/bench/internal/peer/zookeeper"
	"github.com/baton-dev/baton/bench/internal/report"
	"github.com/baton-dev/baton/internal/freeport"
	"github.com/baton-dev/baton/internal/gctune"
	"github.com/baton-dev/baton/node"
	"github.com/baton-dev/baton/trail"
)

// The scenarios, in the order they run. scale runs last because it leaves
// its sessions and locks behind (see genScale); history before it, because
// the expiry of those sessions would land in the trail it reads.
var scenarioNames = []string{"floor", "lease", "session", "etcd-gateway", "redis", "zookeeper", "etcd-mutex", "httpfloor", "httpfloor-batched", "contention", "election", "semaphore", "rwlock", "lockset", "kv", "failover", "history", "scale"}

// askedOnly are the scenarios that run only when -only names them:
// history takes minutes at its default size.
var askedOnly = []string{"history"}

// Config is one run's settings; the fields mirror the flags.
type Config struct {
	// Duration is how long each throughput scenario (floor, lease,
	// session, contention) keeps starting cycles.
	Duration time.Duration
	// Clients lists the concurrent clients each throughput scenario runs at.
	Clients []int
	// ContentionClients queue on the one key of the contention scenario;
	// as many run the election, semaphore, rwlock and lockset scenarios.
	ContentionClients int
	// ScaleSessions × ScaleLocks locks are held for ScaleDuration, every
	// session renewed once per ScaleRenew.
	ScaleSessions, ScaleLocks int
	ScaleDuration, ScaleRenew time.Duration
	// HistoryEvents is how many audit events the history scenario makes
	// before it reads them; HistoryRequests how many requests each of its
	// reads is timed over (at most; each stops after 30 s).
	HistoryEvents, HistoryRequests int
	// AuthRules, when positive, runs the node with a policy file whose
	// one credential, the bench's, has that many rules (the bench's own
	// names' and the rest other teams' prefixes), and every HTTP request
	// with its token: what authentication and permissions by prefix cost.
	AuthRules int
	// FailoverKills is how many holders each row of the failover
	// scenario kills.
	FailoverKills int
	// TrailEvents is how many audit events the node's trail holds before
	// the first scenario: made as the history scenario makes its own,
	// indexed, and compacted away from etcd's history, as on a node that
	// has served a while. 0 starts the scenarios on an empty trail.
	TrailEvents int
	// TrailKeepsHistory skips that compaction: the scenarios then run
	// beside everything the fill deleted as well, as on a node inside
	// its --compaction-retention of such a trail.
	TrailKeepsHistory bool
	// FloorRecords is how many records, each the size of an audit event,
	// every cycle of the httpfloor-batched scenario puts beside its lock
	// key, in the cycle's own two txns: what an audit trail that writes
	// that many keys a cycle costs at the least, with no index, reads or
	// raft entries of its own.
	FloorRecords int
	// Redis is the host:port of a Redis server for the redis peer, and
	// RedisPassword its AUTH password; without Redis the peer does not run.
	Redis, RedisPassword string
	// ZooKeeperJar is the server jar the zookeeper peer starts a
	// standalone server of; the peer runs only when it is there. Empty
	// here, as Redis is; the flag's default is Debian's.
	ZooKeeperJar string
	// Only lists the scenarios to run; empty means all but history
	// (redis only when Redis is set).
	Only []string
	// CPUProfile and MemProfile, when set, receive this process's CPU
	// profile over the HTTP scenarios and its allocation profile at the end.
	CPUProfile, MemProfile string
	// CPUProfileRows splits the CPU profile by row of the cycle
	// scenarios: row n of them (counted from 1, over all of them) goes to
	// CPUProfile.n, so that rows of a long run can be compared; and each
	// of baton's rows of the keys scenario to CPUProfile.kv-OP-CLIENTS.
	// The other scenarios are not profiled.
	CPUProfileRows bool
	// JSONPath receives the results as JSON.
	JSONPath string
	// Logger reports progress; the node logs at warn on stderr.
	Logger *slog.Logger
}

// DefaultConfig returns the settings of issue 7's harness.
func DefaultConfig() Config {
	return Config{
		Duration:          10 * time.Second,
		Clients:           []int{1, 64},
		ContentionClients: 64,
		ScaleSessions:     1000,
		ScaleLocks:        100,
		ScaleDuration:     3 * time.Minute,
		ScaleRenew:        10 * time.Second,
		HistoryEvents:     1000000,
		HistoryRequests:   200,
		FailoverKills:     30,
		JSONPath:          filepath.Join(os.TempDir(), "baton-bench.json"),
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Duration <= 0, c.ScaleDuration <= 0:
		return errors.New("durations must be positive")
	case len(c.Clients) == 0 || slices.Min(c.Clients) < 1:
		return errors.New("clients: want a list of positive counts, e.g. 1,64")
	case c.ContentionClients < 2:
		return errors.New("contention-clients: want at least 2, or nothing is handed off")
	case c.ScaleSessions < 1 || c.ScaleLocks < 1:
		return errors.New("scale-sessions and scale-locks must be positive")
	case c.ScaleRenew <= 0 || c.ScaleRenew > load.SessionTTL/2:
		// Renewing less often than every half TTL lets a late renew lose
		// the session, and with it the locks the scenario is about.
		return fmt.Errorf("scale-renew must be between 0 and %s", load.SessionTTL/2)
	case c.FloorRecords < 0 || c.FloorRecords > 64:
		return errors.New("floor-records: want 0 to 64")
	case c.TrailEvents != 0 && c.TrailEvents < minTrailEvents:
		return fmt.Errorf("trail-events: want 0 or at least %d", minTrailEvents)
	case c.HistoryEvents < 2 || c.HistoryRequests < 1:
		return errors.New("history-events must be at least 2 and history-requests positive")
	case c.FailoverKills < 1:
		return errors.New("failover-kills must be positive")
	case c.JSONPath == "":
		return errors.New("json: want a file name")
	case c.CPUProfileRows && c.CPUProfile == "":
		return errors.New("cpuprofile-rows: want -cpuprofile too, which names the files")
	}
	for _, s := range c.Only {
		if !slices.Contains(scenarioNames, s) {
			return fmt.Errorf("only: unknown scenario %q; want some of %s", s, strings.Join(scenarioNames, ","))
		}
	}
	if c.Redis != "" {
		if _, port, err := net.SplitHostPort(c.Redis); err != nil || port == "" {
			return fmt.Errorf("redis: want host:port, got %q", c.Redis)
		}
	} else if slices.Contains(c.Only, "redis") {
		return errors.New("only: the redis scenario needs a Redis server: -redis host:port")
	}
	if slices.Contains(c.Only, "zookeeper") {
		if err := zookeeper.Installed(c.ZooKeeperJar); err != nil {
			return fmt.Errorf("only: %w", err)
		}
	}
	return nil
}

func (c Config) runs(scenario string) bool {
	if scenario == "redis" && c.Redis == "" {
		return false
	}
	if scenario == "zookeeper" && zookeeper.Installed(c.ZooKeeperJar) != nil {
		return false
	}
	if slices.Contains(askedOnly, scenario) {
		return slices.Contains(c.Only, scenario)
	}
	return len(c.Only) == 0 || slices.Contains(c.Only, scenario)
}

// settings are c as the results have them.
func (c Config) settings() report.Settings {
	s := report.Settings{
		Duration:          c.Duration.String(),
		Clients:           c.Clients,
		ContentionClients: c.ContentionClients,
		ScaleSessions:     c.ScaleSessions,
		ScaleLocks:        c.ScaleLocks,
		ScaleDuration:     c.ScaleDuration.String(),
		ScaleRenew:        c.ScaleRenew.String(),
		Redis:             c.Redis,
		Only:              c.Only,
	}
	if c.runs("history") {
		s.HistoryEvents, s.HistoryRequests = c.HistoryEvents, c.HistoryRequests
	}
	if c.runs("httpfloor-batched") {
		s.FloorRecords = c.FloorRecords
	}
	s.TrailEvents, s.TrailKeepsHistory = c.TrailEvents, c.TrailKeepsHistory
	return s
}

func main() {
	if os.Getenv(load.Env) != "" {
		os.Exit(load.Main(os.Stdin, os.Stdout, generate))
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (Config, error) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long each throughput scenario runs")
	clients := fs.String("clients", "1,64", "concurrent clients of the floor, lease and session scenarios")
	fs.IntVar(&cfg.ContentionClients, "contention-clients", cfg.ContentionClients, "clients queueing on the contention scenario's one key")
	fs.IntVar(&cfg.ScaleSessions, "scale-sessions", cfg.ScaleSessions, "sessions of the scale scenario")
	fs.IntVar(&cfg.ScaleLocks, "scale-locks", cfg.ScaleLocks, "locks each scale session holds")
	fs.DurationVar(&cfg.ScaleDuration, "scale-duration", cfg.ScaleDuration, "how long the scale scenario keeps its locks and measures")
	fs.DurationVar(&cfg.ScaleRenew, "scale-renew", cfg.ScaleRenew, "how often each scale session is renewed (its TTL is 30s)")
	fs.IntVar(&cfg.FloorRecords, "floor-records", cfg.FloorRecords, "records of an audit event's size each httpfloor-batched cycle puts beside its lock key")
	fs.IntVar(&cfg.HistoryEvents, "history-events", cfg.HistoryEvents, "audit events the history scenario makes before it reads them")
	fs.IntVar(&cfg.TrailEvents, "trail-events", cfg.TrailEvents, "audit events the trail holds, indexed and compacted, before the first scenario (0: an empty trail)")
	fs.BoolVar(&cfg.TrailKeepsHistory, "trail-keeps-history", false, "with -trail-events, do not compact etcd after the fill: run beside the keys it deleted too")
	fs.IntVar(&cfg.HistoryRequests, "history-requests", cfg.HistoryRequests, "requests each history read is timed over (each stops after 30s)")
	fs.IntVar(&cfg.AuthRules, "auth-rules", 0, "run the node with authentication and a policy of this many rules for the bench's credential (0: authentication off)")
	fs.IntVar(&cfg.FailoverKills, "failover-kills", cfg.FailoverKills, "holders each row of the failover scenario kills")
	only := fs.String("only", "", "comma-separated subset of "+strings.Join(scenarioNames, ",")+" (redis needs -redis, zookeeper the zookeeper package; history runs only when named)")
	fs.StringVar(&cfg.Redis, "redis", "", "run the redis peer against the Redis server at `host:port`")
	fs.StringVar(&cfg.ZooKeeperJar, "zookeeper-jar", zookeeper.Jar, "run the zookeeper peer on a server of its own started from `jar` (Debian's zookeeper package), if it is there; empty: do not")
	fs.StringVar(&cfg.RedisPassword, "redis-password", "", "the Redis server's AUTH `password`, if it wants one")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write this process's CPU profile over the HTTP scenarios to `file`")
	fs.BoolVar(&cfg.CPUProfileRows, "cpuprofile-rows", false, "with -cpuprofile, write each row of the cycle scenarios to a profile of its own (the file's name, a dot and the row's number from 1), and each of baton's rows of the keys scenario (the file's name and .kv-OP-CLIENTS), and profile no other scenario")
	fs.StringVar(&cfg.MemProfile, "memprofile", "", "write this process's allocation profile at the end to `file`")
	fs.StringVar(&cfg.JSONPath, "json", cfg.JSONPath, "write the results as JSON to `file`")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.Clients = nil
	for _, s := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return cfg, fmt.Errorf("clients: %q is not a number", s)
		}
		cfg.Clients = append(cfg.Clients, n)
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	return cfg, cfg.Validate()
}

// bench is one run in progress.
type bench struct {
	cfg  Config
	log  *slog.Logger
	node *node.Node
	url  string
	// etcdURL is the embedded member's client URL: etcd's own HTTP
	// gateway, for the etcd-gateway peer.
	etcdURL string
	// redisServer is the redis peer's server, when it runs.
	redisServer *redis.Server
	// zkServer is the zookeeper peer's server, when it runs.
	zkServer *zookeeper.Server
}

// run starts a node, runs the scenarios cfg selects, prints the table to
// out and writes the JSON to cfg.JSONPath.
func run(ctx context.Context, cfg Config, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var redisServer *redis.Server
	if cfg.runs("redis") {
		// Before the node starts, so a wrong address fails at once.
		var err error
		if redisServer, err = redis.Inspect(ctx, cfg.Redis, cfg.RedisPassword); err != nil {
			return err
		}
	}
	zkServer, err := zooKeeperPeer(ctx, cfg)
	if err != nil {
		return err
	}
	if zkServer != nil {
		defer zkServer.Close()
	}
	dir, err := os.MkdirTemp("", "baton-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	historyEvents := cfg.TrailEvents
	if cfg.runs("history") {
		historyEvents += cfg.HistoryEvents
	}
	n, etcdURL, err := startNode(ctx, dir, historyEvents, cfg.AuthRules)
	if err != nil {
		return err
	}
	defer n.Close()
	b := &bench{cfg: cfg, log: cfg.Logger, node: n, url: "http://" + n.Addr(), etcdURL: etcdURL, redisServer: redisServer, zkServer: zkServer}

	if zkServer != nil {
		cfg.Logger.Info("warming up the zookeeper peer", "for", cfg.Duration)
		if err := b.warmZooKeeper(ctx); err != nil {
			return fmt.Errorf("zookeeper peer: %w", err)
		}
	}
	res := &report.Results{Machine: report.DescribeMachine(), Settings: cfg.settings(), Started: time.Now().UTC(), RedisServer: redisServer, ZooKeeperServer: zkServer}
	if res.Trail, err = b.fillTrail(ctx); err != nil {
		return fmt.Errorf("trail: %w", err)
	}
	if err := b.scenarios(ctx, res); err != nil {
		return err
	}
	res.Compare()
	if err := report.WriteTable(out, res); err != nil {
		return err
	}
	if err := report.WriteJSON(cfg.JSONPath, res); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "\nresults written to %s\n", cfg.JSONPath)
	return err
}

// startNode starts baton as `baton serve` would, on free loopback ports,
// and returns it with its etcd member's client URL. With historyEvents,
// the audit trail keeps at least twice that many events (and etcd's quota
// grows to match), so the history scenario reads, and the scenarios after
// -trail-events run beside, a trail retention has not trimmed.
func startNode(ctx context.Context, dir string, historyEvents, authRules int) (*node.Node, string, error) {
	gctune.Apply(slog.Default()) // the collector's settings of baton serve
	nc := node.DefaultConfig()
	if authRules > 0 {
		path, err := writePolicy(dir, authRules)
		if err != nil {
			return nil, "", err
		}
		nc.AuthFile = path
	}
	nc.Name = "bench"
	nc.DataDir = filepath.Join(dir, "data")
	nc.HTTPAddr = "127.0.0.1:0"
	nc.LogLevel = "warn"
	nc.ClientJSONGateway = true // the etcd-gateway peer drives etcd's own lock API over it
	if historyEvents > 0 {
		nc.Trail.HistoryMaxEvents = max(2*historyEvents, 1000000)
		nc.BackendQuota = max(nc.BackendQuota, trail.HistoryQuotaFor(int64(nc.Trail.HistoryMaxEvents)))
	}
	for _, u := range []*string{&nc.PeerURL, &nc.ClientURL} {
		addr, err := freeport.Addr()
		if err != nil {
			return nil, "", err
		}
		*u = "http://" + addr
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := node.Start(ctx, nc)
	if err != nil {
		return nil, "", fmt.Errorf("start baton: %w", err)
	}
	return n, nc.ClientURL, nil
}

// benchToken is the bench credential's bearer token under -auth-rules,
// and tokenEnv how the bench hands it to its load generators.
const (
	benchToken = "bench-token-0123456789abcdef"
	tokenEnv   = "BATON_BENCH_TOKEN"
	// scopedToken is a second credential's, which may read the names
	// under a prefix nothing has: its history pages read the most a
	// scoped view may (the history scenario's scoped row).
	scopedToken = "bench-scoped-token-0123456789"
)

// writePolicy writes a policy file of one credential, the bench's, with
// n rules: write on every name (the bench's locks have no common prefix),
// and n-1 other teams' prefixes of many lengths, so that a decision looks
// up as many lengths as a large policy's would. It points the HTTP
// clients at the token.
func writePolicy(dir string, n int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "credentials:\n  - name: bench\n    tokens: [%q]\n    rules:\n      \"\": write\n", benchToken)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "      \"team-%04d.%s\": admin\n", i, strings.Repeat("x", i%40))
	}
	fmt.Fprintf(&b, "  - name: scoped\n    tokens: [%q]\n    rules: {\"nothing-here.\": read}\n", scopedToken)
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", err
	}
	httpapi.Token = benchToken
	// The load generators, processes of their own, inherit it.
	return path, os.Setenv(tokenEnv, benchToken)
}

func (b *bench) scenarios(ctx context.Context, res *report.Results) error {
	if b.cfg.runs("floor") {
		for _, c := range b.cfg.Clients {
			b.log.Info("running", "scenario", "floor", "clients", c)
			r, err := b.floor(ctx, c)
			if err != nil {
				return fmt.Errorf("floor, %d clients: %w", c, err)
			}
			res.Floor = append(res.Floor, r)
		}
	}
	// Every scenario after the floor goes through HTTP.
	whole := b.cfg.CPUProfile
	if b.cfg.CPUProfileRows {
		whole = ""
	}
	stopProfile, err := startCPUProfile(whole)
	if err != nil {
		return err
	}
	defer stopProfile()
	row := 0
	for _, mode := range []string{"lease", "session", "etcd-gateway", "redis", "zookeeper"} {
		if !b.cfg.runs(mode) {
			continue
		}
		for _, c := range b.cfg.Clients {
			b.log.Info("running", "scenario", mode, "clients", c)
			row++
			r, err := b.cycleRow(ctx, mode, c, row)
			if err != nil {
				return fmt.Errorf("%s, %d clients: %w", mode, c, err)
			}
			switch mode {
			case "lease":
				res.Lease = append(res.Lease, r)
			case "session":
				res.Session = append(res.Session, r)
			case "etcd-gateway":
				res.EtcdGateway = append(res.EtcdGateway, r)
			case "zookeeper":
				res.ZooKeeper = append(res.ZooKeeper, r)
			default:
				res.Redis = append(res.Redis, r)
			}
		}
	}
	if err := b.runEtcdMutex(ctx, res); err != nil {
		return err
	}
	if err := b.runHTTPFloor(ctx, res); err != nil {
		return err
	}
	if b.cfg.runs("contention") {
		b.log.Info("running", "scenario", "contention", "clients", b.cfg.ContentionClients)
		if res.Contention, err = b.contention(ctx); err != nil {
			return fmt.Errorf("contention: %w", err)
		}
	}
	if b.cfg.runs("zookeeper") {
		b.log.Info("running", "scenario", "zookeeper contention", "clients", b.cfg.ContentionClients)
		if res.ZooKeeperContention, err = b.zookeeperContention(ctx); err != nil {
			return fmt.Errorf("zookeeper contention: %w", err)
		}
	}
	if err := b.runElection(ctx, res); err != nil {
		return err
	}
	if err := b.runHolds(ctx, res); err != nil {
		return err
	}
	if err := b.runLockSets(ctx, res); err != nil {
		return err
	}
	if err := b.runKV(ctx, res); err != nil {
		return err
	}
	if err := b.runFailover(ctx, res); err != nil {
		return err
	}
	if b.cfg.runs("history") {
		b.log.Info("running", "scenario", "history", "events", b.cfg.HistoryEvents)
		if res.History, err = b.history(ctx); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	if b.cfg.runs("scale") {
		b.log.Info("running", "scenario", "scale", "sessions", b.cfg.ScaleSessions, "locks", b.cfg.ScaleLocks)
		if res.Scale, err = b.scale(ctx); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	stopProfile()
	return b.writeMemProfile()
}

// cycleRow runs one row of the cycle scenario mode at clients, the row'th
// of them in the run, in a CPU profile of its own with -cpuprofile-rows.
func (b *bench) cycleRow(ctx context.Context, mode string, clients, row int) (report.CycleResult, error) {
	path := ""
	if b.cfg.CPUProfileRows {
		path = b.cfg.CPUProfile + "." + strconv.Itoa(row)
	}
	stop, err := startCPUProfile(path)
	if err != nil {
		return report.CycleResult{}, err
	}
	defer stop()
	switch mode {
	case "redis":
		return b.redis(ctx, clients)
	case "zookeeper":
		return b.zookeeper(ctx, clients)
	default:
		return b.cycles(ctx, mode, clients)
	}
}

// startCPUProfile starts a CPU profile into the file at path, or nothing
// if path is empty; the returned stop may be called more than once.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			pprof.StopCPUProfile()
			f.Close()
		}
	}, nil
}

// writeMemProfile writes the allocation profile (every allocation since
// the start, sampled), which shows what the hot path allocates.
func (b *bench) writeMemProfile() error {
	if b.cfg.MemProfile == "" {
		return nil
	}
	f, err := os.Create(b.cfg.MemProfile)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	return f.Close()
}
