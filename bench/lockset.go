package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/report"
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
func (b *bench) runLockSets(ctx context.Context, res *report.Results) error {
	if !b.cfg.runs("lockset") {
		return nil
	}
	n := b.cfg.ContentionClients
	var runs [2]report.LockSetRun
	for i, kind := range []string{kindLockSet, kindOneByOne} {
		b.log.Info("running", "scenario", kind, "clients", n)
		var rep lockSetReport
		u, err := load.Measured(ctx, load.Spec{Kind: kind, URL: b.url, Clients: n, Duration: b.cfg.Duration, Prefix: kind + "-"}, &rep)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		runs[i] = newLockSetRun(rep, u)
	}
	res.LockSets = &report.LockSetsResult{
		Clients: n, Names: lockSetNames, SetSize: lockSetSize, Sets: runs[0], OneByOne: runs[1],
		SetsVsOneByOne: report.Per(runs[0].SetsPerSec, runs[1].SetsPerSec),
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
	breaches measure.ErrorCount
}

func newOccupancy(names int) *occupancy { return &occupancy{held: make([]atomic.Int32, names)} }

func (o *occupancy) enter(name int) {
	if n := o.held[name].Add(1); n > 1 {
		o.breaches.Add(fmt.Errorf("name %d held by %d workers at once", name, n))
		return
	}
	o.checked.Add(1)
}

func (o *occupancy) leave(name int) { o.held[name].Add(-1) }

// err reports the breaches seen, if any: a run that let two workers hold
// one name has no figures worth reading.
func (o *occupancy) err() error {
	if n := o.breaches.Count(); n > 0 {
		return fmt.Errorf("%d times a worker found a name it was granted held by another, the first: %s", n, o.breaches.First())
	}
	return nil
}

// lockSetGen is one lockset load generator: its workers' draws, and what
// they measure beside the closed loop's whole cycles.
type lockSetGen struct {
	a       *httpapi.Client
	prefix  string
	owners  []string
	draws   []func() (int, int)
	occ     *occupancy
	acquire *measure.Latencies // first acquire sent → every name granted
}

func (g *lockSetGen) name(i int) string { return g.prefix + strconv.Itoa(i) }

// genLockSets is the load generator's side of the lockset scenario, the
// set way or the one-by-one way.
func genLockSets(ctx context.Context, spec load.Spec, p *load.Parent) error {
	g := &lockSetGen{a: httpapi.New(spec.URL, spec.Clients), prefix: spec.Prefix, occ: newOccupancy(lockSetNames), acquire: measure.NewLatencies()}
	for w := range spec.Clients {
		g.owners = append(g.owners, "worker-"+strconv.Itoa(w))
		g.draws = append(g.draws, namePairs(w))
	}
	cycle := g.setCycle
	if spec.Kind == kindOneByOne {
		cycle = g.oneByOneCycle
	}
	if err := p.Ready(); err != nil {
		return err
	}
	loop := load.ClosedLoop(ctx, spec.Clients, spec.Duration, cycle)
	if err := g.occ.err(); err != nil {
		return err
	}
	return p.Report(lockSetReport{
		Elapsed: loop.Elapsed, Sets: loop.Cycles, Acquire: g.acquire.Summary(), Cycle: loop.Latency,
		Checked: g.occ.checked.Load(), Errors: loop.Errors, FirstError: loop.FirstError,
	})
}

// setCycle takes worker w's next two names as one set, in the order
// drawn (a set needs no order), and releases the set.
func (g *lockSetGen) setCycle(ctx context.Context, w, _ int) error {
	i, j := g.draws[w]()
	names := []string{g.name(i), g.name(j)}
	body := httpapi.MustJSON(map[string]any{"names": names, "owner": g.owners[w], "ttl": load.SessionTTL.String(), "wait": contend.Wait.String()})
	t0 := time.Now()
	token, err := g.a.AcquireSet(ctx, body, len(names))
	if err != nil {
		return err
	}
	g.acquire.Record(time.Since(t0))
	g.occ.enter(i)
	g.occ.enter(j)
	g.occ.leave(i)
	g.occ.leave(j)
	return g.a.ReleaseSet(ctx, names, token)
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
	body := httpapi.AcquireBody{Owner: g.owners[w], TTL: load.SessionTTL.String(), Wait: contend.Wait.String()}.Encode()
	t0 := time.Now()
	tok1, err := g.a.Acquire(ctx, g.name(first), body)
	if err != nil {
		return err
	}
	g.occ.enter(first)
	tok2, err := g.a.Acquire(ctx, g.name(second), body)
	if err != nil {
		g.occ.leave(first)
		return errors.Join(err, g.a.Release(ctx, g.name(first), tok1))
	}
	g.acquire.Record(time.Since(t0))
	g.occ.enter(second)
	g.occ.leave(second)
	g.occ.leave(first)
	if err := g.a.Release(ctx, g.name(second), tok2); err != nil {
		return errors.Join(err, g.a.Release(ctx, g.name(first), tok1))
	}
	return g.a.Release(ctx, g.name(first), tok1)
}

// lockSetReport is what a lockset load generator reports.
type lockSetReport struct {
	Elapsed time.Duration `json:"elapsed"`
	// Sets counts the whole cycles: every name taken, then released.
	Sets    int64           `json:"sets"`
	Acquire measure.Latency `json:"acquire"`
	Cycle   measure.Latency `json:"cycle"`
	// Checked counts the names found held by their worker alone inside
	// the critical section.
	Checked    int64  `json:"checked"`
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// newLockSetRun is the result of one way of the lockset scenario: its
// generator's report, and what it spent.
func newLockSetRun(r lockSetReport, u measure.Spent) report.LockSetRun {
	secs := r.Elapsed.Seconds()
	return report.LockSetRun{
		Sets: r.Sets, Seconds: secs, SetsPerSec: report.Per(float64(r.Sets), secs),
		Acquire: r.Acquire, Cycle: r.Cycle, Checked: r.Checked,
		CPUSecondsPer1k:   report.Per(u.CPU.Seconds()*1000, float64(r.Sets)),
		RaftEntriesPerSet: report.Per(u.RaftEntries, float64(r.Sets)),
		Cores:             report.NewCPUCores(u), Errors: r.Errors, FirstError: r.FirstError,
	}
}
