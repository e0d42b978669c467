package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// The lockset scenario: -contention-clients workers over lockSetNames
// lock names, each turn drawing two distinct names at random, taking
// both (waiting) and giving them back at once. It runs twice in one
// bench run: as a lock set (POST /v1/locksets, then
// /v1/locksets/release), and as the classic deadlock-free way without
// sets, the two names as single locks taken one by one in sorted order
// and released in reverse. Every lock has its own 30s TTL, as in the
// contention scenario; the engine reuses leases, so neither way pays a
// lease grant per cycle.
const (
	kindLockSet  = "lockset"
	kindOneByOne = "lockset-one-by-one"
)

// lockSetNames is how many names the workers draw from; lockSetSize how
// many each turn takes. Each worker draws from its own generator seeded
// with lockSetSeed and the worker's number, so every run draws the same
// turns, the same in both ways.
const (
	lockSetNames = 128
	lockSetSize  = 2
	lockSetSeed  = 21
)

// runLockSets runs the lockset scenario both ways.
func (b *bench) runLockSets(ctx context.Context, res *Results) error {
	if !b.cfg.runs("lockset") {
		return nil
	}
	n := b.cfg.ContentionClients
	var runs [2]LockSetRun
	for i, kind := range []string{kindLockSet, kindOneByOne} {
		b.log.Info("running", "scenario", kind, "clients", n)
		var rep lockSetReport
		u, err := measuredLoad(ctx, loadSpec{Kind: kind, URL: b.url, Clients: n, Duration: b.cfg.Duration, Prefix: kind + "-"}, &rep)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		runs[i] = newLockSetRun(rep, u)
	}
	res.LockSets = &LockSetsResult{
		Clients: n, Names: lockSetNames, SetSize: lockSetSize, Sets: runs[0], OneByOne: runs[1],
		SetsVsOneByOne: per(runs[0].SetsPerSec, runs[1].SetsPerSec),
	}
	return nil
}

// namePairs returns worker w's draw of two distinct names' indices.
func namePairs(w int) func() (int, int) {
	r := rand.New(rand.NewPCG(lockSetSeed, uint64(w)))
	return func() (int, int) {
		i := r.IntN(lockSetNames)
		j := r.IntN(lockSetNames - 1)
		if j >= i {
			j++
		}
		return i, j
	}
}

// occupancy counts, for each name, the workers inside a critical section
// on it: from the answer that granted the name to its release being
// sent, which lies inside the server's hold. So a name with two workers
// in it at once is a breach of exclusion, never a timing artefact.
type occupancy struct {
	held     []atomic.Int32
	checked  atomic.Int64 // entries that found the name free
	breaches errorCount
}

func newOccupancy(names int) *occupancy { return &occupancy{held: make([]atomic.Int32, names)} }

func (o *occupancy) enter(name int) {
	if n := o.held[name].Add(1); n > 1 {
		o.breaches.add(fmt.Errorf("name %d held by %d workers at once", name, n))
		return
	}
	o.checked.Add(1)
}

func (o *occupancy) leave(name int) { o.held[name].Add(-1) }

// err reports the breaches seen, if any: a run that let two workers hold
// one name has no figures worth reading.
func (o *occupancy) err() error {
	if n := o.breaches.n.Load(); n > 0 {
		return fmt.Errorf("%d times a worker found a name it was granted held by another, the first: %s", n, o.breaches.first)
	}
	return nil
}

// lockSetGen is one lockset load generator: its workers' draws, and what
// they measure beside the closed loop's whole cycles.
type lockSetGen struct {
	a       *httpAPI
	prefix  string
	owners  []string
	draws   []func() (int, int)
	occ     *occupancy
	acquire *latencies // first acquire sent → every name granted
}

func (g *lockSetGen) name(i int) string { return g.prefix + strconv.Itoa(i) }

// genLockSets is the load generator's side of the lockset scenario, the
// set way or the one-by-one way.
func genLockSets(ctx context.Context, spec loadSpec, p *parentConn) error {
	g := &lockSetGen{a: newAPI(spec.URL, spec.Clients), prefix: spec.Prefix, occ: newOccupancy(lockSetNames), acquire: newLatencies()}
	for w := range spec.Clients {
		g.owners = append(g.owners, "worker-"+strconv.Itoa(w))
		g.draws = append(g.draws, namePairs(w))
	}
	cycle := g.setCycle
	if spec.Kind == kindOneByOne {
		cycle = g.oneByOneCycle
	}
	if err := p.ready(); err != nil {
		return err
	}
	loop := closedLoop(ctx, spec.Clients, spec.Duration, cycle)
	if err := g.occ.err(); err != nil {
		return err
	}
	return p.report(lockSetReport{
		Elapsed: loop.Elapsed, Sets: loop.Cycles, Acquire: g.acquire.summary(), Cycle: loop.Latency,
		Checked: g.occ.checked.Load(), Errors: loop.Errors, FirstError: loop.FirstError,
	})
}

// setCycle takes worker w's next two names as one set, in the order
// drawn (a set needs no order), and releases the set.
func (g *lockSetGen) setCycle(ctx context.Context, w, _ int) error {
	i, j := g.draws[w]()
	names := []string{g.name(i), g.name(j)}
	body := mustJSON(map[string]any{"names": names, "owner": g.owners[w], "ttl": sessionTTL.String(), "wait": contentionWait.String()})
	t0 := time.Now()
	token, err := g.a.acquireSet(ctx, body, len(names))
	if err != nil {
		return err
	}
	g.acquire.record(time.Since(t0))
	g.occ.enter(i)
	g.occ.enter(j)
	g.occ.leave(i)
	g.occ.leave(j)
	return g.a.releaseSet(ctx, names, token)
}

// oneByOneCycle takes worker w's next two names as single locks, the
// lower name first (every worker takes them in one total order, so none
// waits for a lock while holding one another waits for), and releases
// them in reverse.
func (g *lockSetGen) oneByOneCycle(ctx context.Context, w, _ int) error {
	first, second := g.draws[w]()
	if g.name(second) < g.name(first) {
		first, second = second, first
	}
	body := acquireBody{Owner: g.owners[w], TTL: sessionTTL.String(), Wait: contentionWait.String()}.encode()
	t0 := time.Now()
	tok1, err := g.a.acquire(ctx, g.name(first), body)
	if err != nil {
		return err
	}
	g.occ.enter(first)
	tok2, err := g.a.acquire(ctx, g.name(second), body)
	if err != nil {
		g.occ.leave(first)
		return errors.Join(err, g.a.release(ctx, g.name(first), tok1))
	}
	g.acquire.record(time.Since(t0))
	g.occ.enter(second)
	g.occ.leave(second)
	g.occ.leave(first)
	if err := g.a.release(ctx, g.name(second), tok2); err != nil {
		return errors.Join(err, g.a.release(ctx, g.name(first), tok1))
	}
	return g.a.release(ctx, g.name(first), tok1)
}

// acquireSet takes the set the body names (waiting as it says), checks
// that the answer has size locks, every one with the set's token, and
// returns the token.
func (a *httpAPI) acquireSet(ctx context.Context, body []byte, size int) (int64, error) {
	var s struct {
		Token int64 `json:"token"`
		Locks []struct {
			Name  string `json:"name"`
			Token int64  `json:"token"`
		} `json:"locks"`
	}
	if err := a.call(ctx, http.MethodPost, "/v1/locksets", body, http.StatusCreated, &s); err != nil {
		return 0, err
	}
	if len(s.Locks) != size {
		return 0, fmt.Errorf("POST /v1/locksets: %d locks granted, want %d", len(s.Locks), size)
	}
	for _, l := range s.Locks {
		if l.Token != s.Token {
			return 0, fmt.Errorf("POST /v1/locksets: lock %s has token %d, the set %d", l.Name, l.Token, s.Token)
		}
	}
	return s.Token, nil
}

func (a *httpAPI) releaseSet(ctx context.Context, names []string, token int64) error {
	body := mustJSON(map[string]any{"names": names, "token": token})
	return a.call(ctx, http.MethodPost, "/v1/locksets/release", body, http.StatusNoContent, nil)
}

// lockSetReport is what a lockset load generator reports.
type lockSetReport struct {
	Elapsed time.Duration `json:"elapsed"`
	// Sets counts the whole cycles: every name taken, then released.
	Sets    int64   `json:"sets"`
	Acquire Latency `json:"acquire"`
	Cycle   Latency `json:"cycle"`
	// Checked counts the names found held by their worker alone inside
	// the critical section.
	Checked    int64  `json:"checked"`
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// LockSetsResult is the lockset scenario: Clients workers, each turn
// taking SetSize distinct names of Names drawn at random (waiting) and
// releasing them at once, as one lock set (Sets) and as single locks
// taken one by one in sorted order (OneByOne).
type LockSetsResult struct {
	Clients  int        `json:"clients"`
	Names    int        `json:"names"`
	SetSize  int        `json:"set_size"`
	Sets     LockSetRun `json:"sets"`
	OneByOne LockSetRun `json:"one_by_one"`
	// SetsVsOneByOne divides the sets' cycles/s by the one-by-one
	// way's: above 1, sets are ahead.
	SetsVsOneByOne float64 `json:"sets_vs_one_by_one"`
}

// LockSetRun is one way of the lockset scenario. Its acquire latency is
// from the first acquire sent to the last name granted.
type LockSetRun struct {
	Sets              int64    `json:"sets"`
	Seconds           float64  `json:"seconds"`
	SetsPerSec        float64  `json:"sets_per_sec"`
	Acquire           Latency  `json:"acquire"`
	Cycle             Latency  `json:"cycle"`
	Checked           int64    `json:"checked"`
	CPUSecondsPer1k   float64  `json:"cpu_seconds_per_1k"`
	RaftEntriesPerSet float64  `json:"raft_entries_per_set"`
	Cores             CPUCores `json:"cores"`
	Errors            int64    `json:"errors"`
	FirstError        string   `json:"first_error,omitempty"`
}

func newLockSetRun(r lockSetReport, u spent) LockSetRun {
	secs := r.Elapsed.Seconds()
	return LockSetRun{
		Sets: r.Sets, Seconds: secs, SetsPerSec: per(float64(r.Sets), secs),
		Acquire: r.Acquire, Cycle: r.Cycle, Checked: r.Checked,
		CPUSecondsPer1k:   per(u.cpu.Seconds()*1000, float64(r.Sets)),
		RaftEntriesPerSet: per(u.raftEntries, float64(r.Sets)),
		Cores:             u.cores(), Errors: r.Errors, FirstError: r.FirstError,
	}
}

// firstErrors lists each way's first error, if it had any.
func (r *LockSetsResult) firstErrors() []string {
	var errs []string
	if e := r.Sets.FirstError; e != "" {
		errs = append(errs, "lockset: "+e)
	}
	if e := r.OneByOne.FirstError; e != "" {
		errs = append(errs, "lockset one by one: "+e)
	}
	return errs
}

// printLockSets prints the lockset scenario's two ways, one beside the
// other.
func printLockSets(tw io.Writer, r *LockSetsResult) {
	fmt.Fprintf(tw, "\nlockset: %d clients, each turn %d distinct names of %d drawn at random, taken (waiting) then released at once (×: sets/s ÷ one by one's)\n",
		r.Clients, r.SetSize, r.Names)
	fmt.Fprintln(tw, "way\tsets/s\t×\tacquire p50\tacquire p99\tcycle p99\tchecked\tcpu s/1k\traft/set\tcores node/gen/other\terrors\t")
	for _, w := range []struct {
		name string
		run  LockSetRun
		vs   float64
	}{{"lock set", r.Sets, r.SetsVsOneByOne}, {"one by one", r.OneByOne, 0}} {
		c := w.run
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t\n", w.name, c.SetsPerSec, ratio(w.vs),
			ms(c.Acquire.P50), ms(c.Acquire.P99), ms(c.Cycle.P99), c.Checked, figure(c.CPUSecondsPer1k, 3), figure(c.RaftEntriesPerSet, 2), c.Cores, c.Errors)
	}
	fmt.Fprintln(tw, "lock set: POST /v1/locksets, then /v1/locksets/release; one by one: the names as single locks, lower first, released in reverse")
	fmt.Fprintln(tw, "acquire: first acquire sent → every name granted; checked: names found held by their worker alone in the critical section (any other fails the run)")
}
