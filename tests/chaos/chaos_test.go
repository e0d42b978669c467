package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
	"github.com/baton-dev/baton/tests/chaos/check/scopecheck"
	"github.com/baton-dev/baton/tests/chaos/check/streamcheck"
	"github.com/baton-dev/baton/tests/testcluster"
)

var (
	flagDuration = flag.Duration("chaos.duration", 40*time.Second, "how long each seed's run injects faults")
	flagSeeds    = flag.String("chaos.seeds", "1,2", "comma-separated fixed seeds to run")
	flagRandom   = flag.Bool("chaos.random", true, "also run one random seed (printed)")
	flagDir      = flag.String("chaos.dir", "", "where each run writes its history (default: a baton-chaos folder in the temp dir)")
	flagKeep     = flag.Bool("chaos.keep", false, "keep the history folders of runs that pass")
	flagClients  = flag.Int("chaos.clients", 8, "concurrent clients, spread over the nodes")
	flagLocks    = flag.Int("chaos.locks", 5, "locks the clients contend for")
	flagElectors = flag.Int("chaos.electors", 4, "concurrent election clients, spread over the nodes, beside the lock clients")
	flagElects   = flag.Int("chaos.elections", 2, "elections the election clients campaign in")
	flagWaits    = flag.Bool("chaos.campaign-wait", true, "let half the campaigns wait in line; false: every campaign is refused at once while someone leads")

	flagSemClients = flag.Int("chaos.semaphores", 4, "concurrent semaphore clients, spread over the nodes, beside the lock and election clients (0: none)")
	flagSemLimits  = flag.String("chaos.semaphore-limits", "2,3", "the limits of the semaphores the semaphore clients share, one semaphore each; the first one's acquires never wait")
	flagSemWaits   = flag.Bool("chaos.permit-wait", true, "let half the acquires of every semaphore but the first wait in line")

	flagRWClients = flag.Int("chaos.rwlocks", 3, "concurrent read/write lock clients, spread over the nodes, beside the others (0: none)")

	flagSetClients = flag.Int("chaos.locksets", 3, "concurrent lock set clients, spread over the nodes, beside the others (0: none)")
	flagSetLocks   = flag.Int("chaos.lockset-locks", 6, "the locks of the pool the lock sets take 2 or 3 of at a time (3 to 8)")
	flagSetSharers = flag.Int("chaos.lockset-sharers", 2, "how many of the lock clients take single locks of the lock sets' pool instead of their own")

	flagMinHold = flag.Duration("chaos.min-hold", 800*time.Millisecond, "the longest at-least window the windowed lock clients (odd IDs past the lock set sharers) and the acquires of every semaphore but the first ask for, each from half of it to it (0: none)")

	flagKVClients = flag.Int("chaos.kv", 3, "concurrent key clients, spread over the nodes, beside the others (0: none)")
	flagKVKeys    = flag.Int("chaos.kv-keys", 3, "the keys the key clients read and write")

	flagStreamClients = flag.Int("chaos.streams", 3, "concurrent stream-bound session clients, beside the others (0: none)")
)

var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(helperEnv) != "" {
		os.Exit(pausedClient())
	}
	os.Exit(testcluster.Main(m, &bin))
}

const (
	// ttl is every workload lock's TTL: the lease floor plus a margin.
	ttl = 3 * time.Second
	// electionTimeout is etcd's default, which baton keeps.
	electionTimeout = time.Second
	// freeBound is how soon after a fault ends a lock whose holder is
	// gone must be free again (the TTL + election timeout + 2 s).
	freeBound = ttl + electionTimeout + 2*time.Second
	// unavailableBound is the longest a 503 may take: the engine bounds
	// every etcd call by 5 s.
	unavailableBound = 6 * time.Second
)

// TestChaos runs the fault-injection suite once per seed: three baton
// processes, clients on every node, and a nemesis that kills, pauses and
// partitions members, moves etcd's leadership and pauses a client; then it
// checks the history.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection takes minutes")
	}
	var seeds []uint64
	for _, s := range strings.Split(*flagSeeds, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("-chaos.seeds: %v", err)
		}
		seeds = append(seeds, n)
	}
	if *flagRandom {
		seeds = append(seeds, rand.Uint64()%1_000_000)
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d: rerun with -run 'TestChaos/seed=%d' -chaos.seeds %d -chaos.random=false", seed, seed, seed)
			runChaos(t, seed, plan{nemesis: (*run).nemesis})
		})
	}
}

// The nemesis's own clients. Their IDs follow the workload's, lock clients
// then election clients then semaphore clients then rwlock clients then
// lock set clients then key clients (nemesisClient):
// porcupine's visualisation draws client ID n on row n.
const (
	clientOrphan    = iota // holds a lock that dies with a killed node
	clientProbe            // asks a cut-off node
	clientPaused           // the paused client process
	clientSuccessor        // takes the paused client's lock
	clientBurst            // holds the burst fault's lock
	clientKVEnd            // reads the keys and puts kvEndKey once the run settled
)

func nemesisClient(role int) int {
	return *flagClients + *flagElectors + *flagSemClients + *flagRWClients + *flagSetClients + *flagKVClients + *flagStreamClients + role
}

// run is one seed's state.
type run struct {
	t     *testing.T
	seed  uint64
	c     *testcluster.Cluster
	h     *History
	dir   string
	locks []string
	// elections are the election clients' elections; no lock or other
	// fenced resource shares their names.
	elections []string
	// sems are the semaphore clients' semaphores.
	sems []semaphore
	// pool is the locks the lock set clients take theirs from, and the
	// first -chaos.lockset-sharers lock clients their single locks.
	pool []string
	// keys are the key clients' keys; kvEnd is the revision of the put
	// of kvEndKey once the run settled (keysSettled), 0 before.
	keys  []string
	kvEnd int64

	mu     sync.Mutex
	faults []string       // what the nemesis did, with times
	counts map[string]int // faults by kind
	frozen []frozen       // when a member was SIGSTOPped
	// downs are when a node could not serve or end streams, and streams
	// the stream records' watch: streamcheck's (stream_test.go).
	downs   []streamcheck.Fault
	streams *streamWatch
	// scope is the narrow clients' workload (scope_test.go); nil without
	// them.
	scope *scope
}

// frozen is a time a node was SIGSTOPped: it could answer nothing then.
type frozen struct {
	node     int
	from, to int64
}

// wasFrozen reports whether op's node was stopped while op ran.
func (r *run) wasFrozen(op check.Op) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.frozen {
		if f.node == op.Node && op.Call < f.to && f.from < op.Return {
			return true
		}
	}
	return false
}

func (r *run) logf(format string, args ...any) {
	line := fmt.Sprintf("%8.3fs ", float64(r.h.Now())/1e9) + fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.faults = append(r.faults, line)
	r.mu.Unlock()
	r.t.Log(line)
}

// plan is what a run starts its nodes with beyond testcluster's flags, and
// the nemesis that injects its faults while the workload runs.
type plan struct {
	args    []string
	nemesis func(*run, *rand.Rand)
}

func runChaos(t *testing.T, seed uint64, p plan) {
	dir := *flagDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "baton-chaos")
	}
	dir = filepath.Join(dir, fmt.Sprintf("%s-seed%d", time.Now().Format("20060102-150405"), seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sems, err := semaphores()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := poolLocks()
	if err != nil {
		t.Fatal(err)
	}
	policy, err := writePolicy(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Netns: true, LogDir: dir, Args: p.args, AuthFile: policy, Token: operatorToken})
	r := &run{t: t, seed: seed, c: c, h: NewHistory(), dir: dir, counts: map[string]int{}, sems: sems, pool: pool, keys: kvKeys()}
	for i := range *flagLocks {
		r.locks = append(r.locks, fmt.Sprintf("chaos-%d", i))
	}
	for i := range *flagElects {
		r.elections = append(r.elections, fmt.Sprintf("vote-%d", i))
	}
	defer r.save()

	ctx, stop := context.WithCancel(context.Background())
	wctx, unwatch := context.WithCancel(context.Background())
	defer unwatch()
	r.streams = r.watchStreams(wctx)
	var wg sync.WaitGroup
	// Client IDs run on from one kind of client to the next, in this
	// order (nemesisClient): porcupine draws client ID n on row n.
	first := 0
	for _, w := range []struct {
		n      int
		client func(r *run, ctx context.Context, id int, rng *rand.Rand)
	}{
		{*flagClients, (*run).client}, {*flagElectors, (*run).elector}, {*flagSemClients, (*run).semaphoreClient},
		{*flagRWClients, (*run).rwClient}, {*flagSetClients, (*run).setClient}, {*flagKVClients, (*run).kvClient},
		{*flagStreamClients, (*run).streamClient},
	} {
		for i := first; i < first+w.n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.client(r, ctx, i, rand.New(rand.NewPCG(seed, uint64(i)+1)))
			}()
		}
		first += w.n
	}
	r.startScope(ctx, &wg, seed)
	p.nemesis(r, rand.New(rand.NewPCG(seed, 0)))
	stop()
	wg.Wait()
	r.logf("faults: %v", r.counts)
	r.heal()
	r.check()
}

// client is one workload client bound to one node: acquire (a quarter of
// them waiting in the lock's queue), renew, a fenced write, reads, and a
// release, with the mistakes real clients make (releasing twice, stalling
// past the TTL, abandoning a lock). The first -chaos.lockset-sharers of
// them take the locks of the lock sets' pool, the others the run's locks;
// of those, the odd ones ask for an at-least window with every acquire
// (windowed), so the others meet windows and windowcheck checks them.
func (r *run) client(ctx context.Context, id int, rng *rand.Rand) {
	d := &Driver{Client: id, Node: id % len(r.c.Nodes), Base: r.c.Nodes[id%len(r.c.Nodes)].URL(), TTL: ttl, H: r.h, HTTP: NewHTTPClient()}
	locks := r.locks
	if id < *flagSetSharers && *flagSetClients > 0 {
		locks, d.Pool = r.pool, setPool
	}
	windowed := d.Pool == "" && id%2 == 1
	// Requests already sent are not cut off when the run ends: their
	// outcome must be recorded, not turned into an unknown.
	rctx := context.WithoutCancel(ctx)
	for seq := 0; ctx.Err() == nil; seq++ {
		lock := locks[rng.IntN(len(locks))]
		var wait time.Duration // a quarter of the acquires wait in line
		if rng.IntN(4) == 0 {
			wait = 200*time.Millisecond + time.Duration(rng.Int64N(int64(1300*time.Millisecond)))
		}
		d.MinHold = 0
		if windowed {
			d.MinHold = window(rng)
		}
		a := d.AcquireWaiting(rctx, lock, fmt.Sprintf("c%d-%d", id, seq), wait)
		if a.Result != check.OK {
			if a.Result == check.Failed || a.Result == check.Unknown {
				pace(ctx, rng, 300*time.Millisecond) // its node is down or cut off
			} else {
				pace(ctx, rng, 30*time.Millisecond)
			}
			continue
		}
		tok := a.OutToken
		if rng.IntN(2) == 0 {
			d.Renew(rctx, lock, tok)
		}
		d.FPut(rctx, lock, tok, fmt.Sprintf("c%d-%d", id, seq))
		if rng.IntN(3) == 0 {
			d.Get(rctx, lock)
		}
		if rng.IntN(3) == 0 {
			d.FGet(rctx, lock)
		}
		switch x := rng.IntN(100); {
		case x < 5:
			// A stall past the TTL (a GC pause): the lock is gone, and
			// what the client does next must be fenced off.
			stall(ctx, ttl+time.Second)
			d.FPut(rctx, lock, tok, fmt.Sprintf("c%d-%d-late", id, seq))
			d.Renew(rctx, lock, tok)
			d.Release(rctx, lock, tok)
		case x < 10:
			// Abandoned: the lease expires and the recorder says so.
		default:
			d.Release(rctx, lock, tok)
			if x < 30 {
				d.Release(rctx, lock, tok) // the double release of a retry loop
			}
		}
		pace(ctx, rng, 20*time.Millisecond)
	}
}

// nemesis injects one fault at a time until the run's duration is over,
// and waits for the cluster to be whole again after each.
func (r *run) nemesis(rng *rand.Rand) {
	kinds := []string{"kill-leader", "kill-follower", "pause-member", "pause-client", "move-leader", "burst"}
	if r.c.CanPartition() {
		kinds = append(kinds, "partition-leader")
	} else {
		r.logf("no network namespaces here: partitions are not injected")
	}
	// The first faults cover every kind, so that a short run still
	// exercises each; then the seed decides.
	order := rng.Perm(len(kinds))
	deadline := time.Now().Add(*flagDuration)
	for i := 0; time.Now().Before(deadline) || i < len(kinds); i++ {
		r.quiet(rng, time.Second, 3*time.Second)
		kind := kinds[rng.IntN(len(kinds))]
		if i < len(order) {
			kind = kinds[order[i]]
		}
		r.mu.Lock()
		r.counts[kind]++
		r.mu.Unlock()
		switch kind {
		case "kill-leader", "kill-follower":
			r.kill(rng, kind == "kill-leader")
		case "pause-member":
			n := r.c.Nodes[rng.IntN(len(r.c.Nodes))]
			d := ttl + time.Second + time.Duration(rng.Int64N(int64(ttl)))
			r.logf("SIGSTOP %s for %s", n.Name, d)
			from := r.h.Now()
			up := r.fault(n.Index, "pause")
			n.Stop()
			r.quiet(rng, d, d)
			n.Cont()
			up()
			r.mu.Lock()
			r.frozen = append(r.frozen, frozen{node: n.Index, from: from, to: r.h.Now()})
			r.mu.Unlock()
			r.logf("SIGCONT %s", n.Name)
		case "pause-client":
			r.pauseClient(rng)
		case "move-leader":
			up := r.fault(-1, "move-leader")
			r.moveLeader(rng)
			up()
		case "partition-leader":
			r.partition(rng)
		case "burst":
			up := r.fault(-1, "burst")
			r.burst(rng)
			up()
		}
		r.waitWhole()
	}
}

// quiet lets the workload run for a random time in [min, max]: the
// nemesis's schedule, not a wait for a condition.
func (r *run) quiet(rng *rand.Rand, min, max time.Duration) {
	d := min
	if max > min {
		d += time.Duration(rng.Int64N(int64(max - min)))
	}
	time.Sleep(d)
}

func (r *run) leader() int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := r.c.Leader(ctx)
	if err != nil {
		r.t.Fatalf("nemesis: %v", err)
	}
	return l
}

// kill SIGKILLs the leader or a follower, with a lock held through another
// node by a holder that dies with it, restarts the node on its data dir,
// and checks that the orphaned lock is free within freeBound after.
func (r *run) kill(rng *rand.Rand, leader bool) {
	l := r.leader()
	victim := l
	if !leader {
		victim = (l + 1 + rng.IntN(len(r.c.Nodes)-1)) % len(r.c.Nodes)
	}
	other := (victim + 1) % len(r.c.Nodes)
	orphan := fmt.Sprintf("orphan-%d", r.h.Now())
	d := &Driver{Client: nemesisClient(clientOrphan), Node: other, Base: r.c.Nodes[other].URL(), TTL: ttl, H: r.h, HTTP: NewHTTPClient()}
	ctx := context.Background()
	held := d.Acquire(ctx, orphan, "dies-with-"+r.c.Nodes[victim].Name)
	n := r.c.Nodes[victim]
	r.logf("SIGKILL %s (leader: %v)", n.Name, victim == l)
	// A leader's death stops every node's etcd writes until the next
	// election.
	up := r.fault(victim, "kill")
	if victim == l {
		up = r.fault(-1, "kill-leader")
	}
	n.Kill()
	r.quiet(rng, time.Second, 3*time.Second)
	if err := n.Restart(); err != nil {
		r.t.Fatalf("restart %s: %v", n.Name, err)
	}
	r.waitWhole()
	up()
	r.logf("restarted %s", n.Name)
	if held.Result != check.OK {
		return
	}
	healed := time.Now()
	got := r.waitingAcquire(d, orphan, "after-"+n.Name)
	took := time.Since(healed)
	r.logf("orphaned lock free %s after the restart (bound %s)", took.Round(time.Millisecond), freeBound)
	if got.Result != check.OK || took > freeBound {
		r.t.Errorf("a lock whose holder died with %s: %s after healing, result %s %d %s; want it free within %s",
			n.Name, took, got.Result, got.Status, got.Code, freeBound)
	}
	d.Release(ctx, orphan, got.OutToken)
}

// moveLeader hands etcd's leadership from member to member two to four
// times in a row, 0.5 to 1.5 s apart, as an operator's move-leader (or a
// leader's transfer as it shuts down) does. No process stops: every node
// can answer all along, and for the time leadership moves etcd drops
// proposals, refuses keep-alives as not primary and cancels reads; the
// checks afterwards hold that nothing but 503 answered for it.
func (r *run) moveLeader(rng *rand.Rand) {
	n := 2 + rng.IntN(3)
	for i := range n {
		if i > 0 {
			r.quiet(rng, 500*time.Millisecond, 1500*time.Millisecond)
		}
		l := r.leader()
		to := (l + 1 + rng.IntN(len(r.c.Nodes)-1)) % len(r.c.Nodes)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := r.c.MoveLeader(ctx, to)
		cancel()
		if err != nil {
			// etcd may refuse a transfer (to a member that lags, say):
			// that is etcd's call, not a failure of baton's.
			r.logf("move leadership %s -> %s: %v", r.c.Nodes[l].Name, r.c.Nodes[to].Name, err)
			continue
		}
		r.logf("moved leadership %s -> %s", r.c.Nodes[l].Name, r.c.Nodes[to].Name)
	}
}

// waitingAcquire asks for lock with wait and records it as an acquire.
func (r *run) waitingAcquire(d *Driver, lock, owner string) check.Op {
	op, b := d.do(context.Background(), check.Op{Kind: check.Acquire, Lock: lock, Owner: owner}, http.MethodPost, "/v1/locks/"+lock,
		map[string]any{"owner": owner, "ttl": ttl.String(), "wait": "7s"})
	op = classify(op, "lock_held")
	if op.Result == check.OK {
		var l struct {
			Token int64 `json:"token"`
		}
		json.Unmarshal(b, &l)
		op.OutToken = l.Token
	}
	return r.h.Add(op)
}

// partition cuts the leader off, checks that it answers 503 quickly and
// that the majority goes on, then heals.
func (r *run) partition(rng *rand.Rand) {
	l := r.leader()
	n := r.c.Nodes[l]
	r.logf("partition %s (the leader) from the others", n.Name)
	up := r.fault(-1, "partition-leader")
	defer up()
	if err := r.c.Partition(l); err != nil {
		r.t.Fatalf("partition: %v", err)
	}
	probe := &Driver{Client: nemesisClient(clientProbe), Node: l, Base: n.URL(), TTL: ttl, H: r.h, HTTP: NewHTTPClient()}
	first := probe.Acquire(context.Background(), "probe-"+strconv.FormatInt(r.h.Now(), 10), "probe")
	r.logf("acquire on the cut-off node: %s %d %s in %s", first.Result, first.Status, first.Code, time.Duration(first.Return-first.Call).Round(time.Millisecond))
	if first.Status != http.StatusServiceUnavailable {
		r.t.Errorf("acquire on the cut-off leader answered %s %d %s %s; want 503", first.Result, first.Status, first.Code, first.Err)
	}
	// Once it knows it has no leader, it answers at once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		st, err := r.c.Status(ctx, l)
		if err == nil && st.Leader == "" {
			break
		}
		if ctx.Err() != nil {
			r.t.Errorf("the cut-off leader still reports a leader after 10 s (%v)", err)
			break
		}
		time.Sleep(50 * time.Millisecond) // polling /v1/cluster: its pace
	}
	fast := probe.Acquire(context.Background(), "probe-"+strconv.FormatInt(r.h.Now(), 10), "probe")
	took := time.Duration(fast.Return - fast.Call)
	r.logf("acquire on the leaderless node: %d %s in %s", fast.Status, fast.Code, took.Round(time.Millisecond))
	if fast.Status != http.StatusServiceUnavailable || took > time.Second {
		r.t.Errorf("acquire on a node without a leader: %d %s in %s; want 503 within 1s", fast.Status, fast.Code, took)
	}
	r.quiet(rng, 2*time.Second, 4*time.Second)
	if err := r.c.Heal(); err != nil {
		r.t.Fatalf("heal: %v", err)
	}
	r.logf("healed")
}

// waitWhole waits until every node is up and ready.
func (r *run) waitWhole() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range r.c.Nodes {
		if err := n.WaitReady(ctx); err != nil {
			r.t.Fatalf("%s did not come back: %v", n.Name, err)
		}
	}
}

// heal ends every fault for the final checks.
func (r *run) heal() {
	r.c.Heal()
	for _, n := range r.c.Nodes {
		n.Cont()
		if !n.Running() {
			n.Restart()
		}
	}
	r.waitWhole()
}

// save writes the history and the nemesis's log to the run's folder (check
// adds the settled audit trail, audit.json), and
// removes the folder of a run that passed unless -chaos.keep.
func (r *run) save() {
	b, _ := json.MarshalIndent(r.h.Ops(), "", " ")
	os.WriteFile(filepath.Join(r.dir, "history.json"), b, 0o644)
	r.mu.Lock()
	os.WriteFile(filepath.Join(r.dir, "nemesis.log"), []byte(strings.Join(r.faults, "\n")+"\n"), 0o644)
	r.mu.Unlock()
	if r.t.Failed() || *flagKeep {
		r.t.Logf("history, nemesis log, node logs and any porcupine visualisation: %s", r.dir)
		return
	}
	// The node logs are in there too; the cluster's cleanup still
	// writes to them, so remove the folder after it.
	r.t.Cleanup(func() { os.RemoveAll(r.dir) })
}

// check runs every checker over the history, once the cluster is whole.
func (r *run) check() {
	t := r.t
	// Wait until no lock is held (every workload TTL has run out) and
	// every hold has its end in the audit trail.
	all := r.settledHistory()
	if b, err := json.MarshalIndent(all, "", " "); err == nil {
		os.WriteFile(filepath.Join(r.dir, "audit.json"), b, 0o644)
	}
	// The scope workload's names are its checker's alone: no op of the
	// history explains their events.
	events := scopecheck.Without(all, narrowPrefix, sharedPrefix)
	ops := r.h.Ops()
	t.Logf("history: %s", check.Summarize(ops))

	for _, op := range ops {
		if op.Status >= 500 && op.Status != http.StatusServiceUnavailable {
			t.Errorf("op %d (%s %s on n%d) answered %d %s", op.ID, op.Kind, op.Name(), op.Node+1, op.Status, op.Code)
		}
		if op.Status >= 400 && op.Status < 500 && op.Result != check.Rejected {
			t.Errorf("op %d (%s %s on n%d): unexpected %d %s", op.ID, op.Kind, op.Name(), op.Node+1, op.Status, op.Code)
		}
		if op.Status == http.StatusServiceUnavailable {
			if op.RetryAfter == "" {
				t.Errorf("op %d: 503 without Retry-After", op.ID)
			}
			// A frozen process answers when it wakes: that wait is the
			// pause's, not an etcd call's; and a waiting campaign's
			// answer comes after its wait.
			wait, _ := time.ParseDuration(op.Wait)
			if took := time.Duration(op.Return - op.Call); took > unavailableBound+wait && !r.wasFrozen(op) {
				t.Errorf("op %d: 503 after %s, over %s", op.ID, took, unavailableBound+wait)
			}
		}
	}
	for _, v := range check.CheckTokenOrder(ops) {
		t.Error("token order:", v)
	}
	for _, v := range check.CheckFencedOrder(ops) {
		t.Error("fenced order:", v)
	}
	for _, v := range check.CheckAudit(ops, events) {
		t.Error("audit:", v)
	}
	r.checkWindows(ops, events)
	for _, e := range all {
		// Compaction waits for the trail's cursor, up to bounds no run
		// reaches: a gap is a loss.
		if e.Type == "gap" {
			t.Errorf("the trail lost revisions %d to %d: %s", e.FromRevision, e.Revision, e.Reason)
		}
	}
	r.linearizable("linearizability", "lock", "linearizability.html", func(html string) (bool, error) { return check.CheckLinearizable(ops, 5*time.Minute, html) })
	r.checkElections(ops, events)
	r.checkSemaphores(ops, events)
	r.checkRWLocks(ops, events)
	r.checkLockSets(ops, events)
	r.checkKeys(ops, events)
	r.checkStreams(ops, events)
	r.checkScope(all)
}

// settledHistory waits until no lock, permit or rwlock hold is held,
// nobody leads an election, every hold, permit and leadership has an
// end event, and the trail has every key event (keysSettled), then
// returns the whole audit trail, oldest first.
func (r *run) settledHistory() []check.AuditEvent {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := r.c.Nodes[0].URL()
	for {
		var locks struct {
			Locks []any `json:"locks"`
		}
		var elections struct {
			Elections []any `json:"elections"`
		}
		var sems struct {
			Semaphores []any `json:"semaphores"`
		}
		var rws struct {
			RWLocks []any `json:"rwlocks"`
		}
		err := r.c.GetJSON(ctx, base+"/v1/locks", &locks)
		if err == nil {
			err = r.c.GetJSON(ctx, base+"/v1/elections", &elections)
		}
		if err == nil {
			err = r.c.GetJSON(ctx, base+"/v1/semaphores", &sems)
		}
		if err == nil {
			err = r.c.GetJSON(ctx, base+"/v1/rwlocks", &rws)
		}
		if err == nil && len(locks.Locks) == 0 && len(elections.Elections) == 0 && len(sems.Semaphores) == 0 && len(rws.RWLocks) == 0 {
			evs, err := r.audit(ctx)
			if err == nil && check.AllEnded(evs) && r.keysSettled(ctx, evs) {
				return evs
			}
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("locks, permits or rwlock holds still held, elections led, sessions live, or holds or keys without their events 30 s after the run (last error %v)", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// audit pages through GET /v1/history.
func (r *run) audit(ctx context.Context) ([]check.AuditEvent, error) {
	var all []check.AuditEvent
	before := int64(0)
	for {
		u := r.c.Nodes[1].URL() + "/v1/history?limit=1000"
		if before > 0 {
			u += "&before=" + strconv.FormatInt(before, 10)
		}
		var page struct {
			Events     []check.AuditEvent `json:"events"`
			NextBefore int64              `json:"next_before"`
		}
		if err := r.c.GetJSON(ctx, u, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Events...)
		if page.NextBefore == 0 {
			break
		}
		before = page.NextBefore
	}
	// Oldest first.
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	return all, nil
}

// The paused client: a separate process (this test binary, run again)
// that holds a lock with auto-renewal, is SIGSTOPped for twice the TTL,
// and on waking writes with its old token at once, as a client in a long
// GC pause would. The write must be rejected.

const helperEnv = "BATON_CHAOS_PAUSED_CLIENT"

// pausedClient is the helper process's main. It acquires, prints
// "token N", renews every second, and on a line on stdin does a fenced
// write with its token and prints "fput STATUS CODE".
func pausedClient() int {
	base, lock := os.Getenv("BATON_CHAOS_URL"), os.Getenv("BATON_CHAOS_LOCK")
	d := &Driver{Base: base, TTL: ttl, H: NewHistory(), HTTP: NewHTTPClient()}
	ctx := context.Background()
	a := d.Acquire(ctx, lock, "paused-client")
	if a.Result != check.OK {
		fmt.Printf("acquire %s %d %s %s\n", a.Result, a.Status, a.Code, a.Err)
		return 1
	}
	fmt.Printf("token %d\n", a.OutToken)
	go func() {
		for range time.Tick(time.Second) {
			d.Renew(ctx, lock, a.OutToken)
		}
	}()
	bufio.NewReader(os.Stdin).ReadString('\n')
	w := d.FPut(ctx, lock, a.OutToken, "paused-client")
	fmt.Printf("fput %d %s\n", w.Status, w.Code)
	return 0
}

func (r *run) pauseClient(rng *rand.Rand) {
	t := r.t
	lock := r.locks[rng.IntN(len(r.locks))] + "-paused"
	node := rng.IntN(len(r.c.Nodes))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "BATON_CHAOS_URL="+r.c.Nodes[node].URL(), "BATON_CHAOS_LOCK="+lock)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	acq := check.Op{Client: nemesisClient(clientPaused), Node: node, Kind: check.Acquire, Lock: lock, Owner: "paused-client", Call: r.h.Now()}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the paused client: %v", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	out := bufio.NewReader(stdout)
	line, _ := out.ReadString('\n')
	acq.Return = r.h.Now()
	tok, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "token "), 10, 64)
	if err != nil {
		// Its node may be between faults' aftermath; not this check's
		// business. Nothing was held, so nothing is recorded.
		r.logf("paused client could not acquire: %q", strings.TrimSpace(line))
		return
	}
	acq.Result, acq.OutToken = check.OK, tok
	r.h.Add(acq)
	cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	r.logf("SIGSTOP the client holding %s with token %d", lock, tok)

	// Someone else waits for the lock on another node and gets it once
	// the paused holder's lease runs out.
	other := (node + 1) % len(r.c.Nodes)
	d := &Driver{Client: nemesisClient(clientSuccessor), Node: other, Base: r.c.Nodes[other].URL(), TTL: ttl, H: r.h, HTTP: NewHTTPClient()}
	next := r.waitingAcquire(d, lock, "successor")
	took := time.Since(stopped)
	if next.Result != check.OK || took > freeBound {
		t.Errorf("the paused client's lock: %s %d %s after %s; want it granted within %s", next.Result, next.Status, next.Code, took, freeBound)
	}
	d.FPut(context.Background(), lock, next.OutToken, "successor")

	// Twice the TTL in all, then it wakes and writes with its old token.
	if rest := 2*ttl - time.Since(stopped); rest > 0 {
		time.Sleep(rest) // the pause's length is the fault itself
	}
	w := check.Op{Client: nemesisClient(clientPaused), Node: node, Kind: check.FPut, Lock: lock, Token: tok, Value: "paused-client", Call: r.h.Now()}
	fmt.Fprintln(stdin, "write")
	cmd.Process.Signal(syscall.SIGCONT)
	line, _ = out.ReadString('\n')
	w.Return = r.h.Now()
	f := strings.Fields(line)
	if len(f) >= 2 {
		w.Status, _ = strconv.Atoi(f[1])
	}
	if len(f) >= 3 {
		w.Code = f[2]
	}
	w = classify(w, "stale_token")
	r.h.Add(w)
	r.logf("SIGCONT the client after %s: its write with token %d answered %d %s", time.Since(stopped).Round(time.Millisecond), tok, w.Status, w.Code)
	if w.Status != http.StatusConflict || w.Code != "stale_token" {
		t.Errorf("the paused client's write with token %d after its lock passed to token %d: %q; want 409 stale_token", tok, next.OutToken, strings.TrimSpace(line))
	}
	d.Release(context.Background(), lock, next.OutToken)
}
