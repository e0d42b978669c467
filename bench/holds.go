package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// The semaphore and rwlock scenarios are the contention loop on things
// with several holds at once: -contention-clients workers on one
// semaphore of semaphoreLimit permits, each taking a permit (waiting) and
// giving it back at once; and on one read/write lock, each turn a read
// or, one time in rwWriteEvery, a write, held as briefly. Beside baton's
// run, when the zookeeper peer runs, Curator's recipes for the same:
// InterProcessSemaphoreV2 and InterProcessReadWriteLock (zkholds.go).
// etcd's client has no semaphore recipe (clientv3/concurrency has Mutex,
// Election and STM; its experimental recipes a queue, barriers and an
// RWMutex), so the semaphore has no etcd peer.
const (
	kindSemaphore = "semaphore"
	kindRWLock    = "rwlock"
)

// semaphoreLimit is the semaphore scenario's limit: 4 permits among the
// contention scenario's 64 clients.
const semaphoreLimit = 4

// rwWriteShare of the rwlock scenario's turns are writes, drawn from
// each worker's own generator seeded with rwSeed and the worker's number,
// so every run draws the same turns.
const (
	rwWriteShare = 0.1
	rwSeed       = 20
)

// rwHold is how long each of the rwlock scenario's holds lasts: the
// work a reader or writer does, brief beside a turn of the queue, and
// long enough for readers to be seen sharing (most held) and a writer
// beside anyone to be seen at all. The semaphore's permits, as the
// contention scenario's locks, are given back at once.
const rwHold = time.Millisecond

// rwModes returns worker w's draw of read and write turns.
func rwModes(w int) func() holdMode {
	r := rand.New(rand.NewPCG(rwSeed, uint64(w)))
	return func() holdMode {
		if r.Float64() < rwWriteShare {
			return holdWrite
		}
		return holdRead
	}
}

func permits() holdMode { return holdPermit }

// runHolds runs the semaphore and rwlock scenarios for baton and, when
// the zookeeper peer runs, for Curator's recipes.
func (b *bench) runHolds(ctx context.Context, res *Results) error {
	n := b.cfg.ContentionClients
	for _, kind := range []string{kindSemaphore, kindRWLock} {
		if !b.cfg.runs(kind) {
			continue
		}
		b.log.Info("running", "scenario", kind, "clients", n)
		var rep holdsReport
		u, err := measuredLoad(ctx, loadSpec{Kind: kind, URL: b.url, Clients: n, Duration: b.cfg.Duration, Prefix: kind + "-"}, &rep)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		baton := newHoldsResult(kind, n, rep, u)
		var peer *HoldsResult
		if b.zkServer != nil {
			b.log.Info("running", "scenario", "zookeeper "+kind, "clients", n)
			if peer, err = b.zookeeperHolds(ctx, kind); err != nil {
				return fmt.Errorf("zookeeper %s: %w", kind, err)
			}
		}
		if kind == kindSemaphore {
			res.Semaphore, res.ZooKeeperSemaphore = baton, peer
		} else {
			res.RWLock, res.ZooKeeperRWLock = baton, peer
		}
	}
	return nil
}

// genSemaphore is the load generator's side of baton's semaphore scenario.
func genSemaphore(ctx context.Context, spec loadSpec, p *parentConn) error {
	a := newAPI(spec.URL, spec.Clients)
	name := spec.Prefix + "one"
	counter := newHoldCounter(semaphoreLimit)
	return contendThen(ctx, spec, p, func(w int) contender {
		body := acquireBody{Owner: "worker-" + strconv.Itoa(w), TTL: sessionTTL.String(), Wait: contentionWait.String(), Limit: semaphoreLimit}.encode()
		return contender{
			take:  func(ctx context.Context, _ holdMode) (int64, error) { return a.hold(ctx, "/v1/semaphores/"+name, body) },
			give:  func(ctx context.Context, token int64) error { return a.unhold(ctx, "/v1/semaphores/"+name, token) },
			modes: permits,
		}.counted(counter, 0)
	}, counter.report)
}

// genRWLock is the load generator's side of baton's rwlock scenario.
func genRWLock(ctx context.Context, spec loadSpec, p *parentConn) error {
	a := newAPI(spec.URL, spec.Clients)
	path := "/v1/rwlocks/" + spec.Prefix + "one"
	counter := newHoldCounter(0)
	return contendThen(ctx, spec, p, func(w int) contender {
		body := acquireBody{Owner: "worker-" + strconv.Itoa(w), TTL: sessionTTL.String(), Wait: contentionWait.String()}
		body.Mode = "read"
		read := body.encode()
		body.Mode = "write"
		write := body.encode()
		return contender{
			take: func(ctx context.Context, m holdMode) (int64, error) {
				if m == holdWrite {
					return a.hold(ctx, path, write)
				}
				return a.hold(ctx, path, read)
			},
			give:  func(ctx context.Context, token int64) error { return a.unhold(ctx, path, token) },
			modes: rwModes(w),
		}.counted(counter, rwHold)
	}, counter.report)
}

// hold takes a permit or a read/write lock's hold at path, waiting as
// the body says, and returns its token.
func (a *httpAPI) hold(ctx context.Context, path string, body []byte) (int64, error) {
	var h struct {
		Token int64 `json:"token"`
	}
	err := a.call(ctx, http.MethodPost, path, body, http.StatusCreated, &h)
	return h.Token, err
}

func (a *httpAPI) unhold(ctx context.Context, path string, token int64) error {
	return a.call(ctx, http.MethodDelete, path+"?token="+strconv.FormatInt(token, 10), nil, http.StatusNoContent, nil)
}

// holdCounter counts the holds in their critical sections: from a take's
// answer to its give being sent, which lies inside the server's hold
// (granted before the answer, released after the give). So a count
// beyond what the primitive allows is a breach of it, never a timing
// artefact. With a limit, it counts permits; without, read and write
// holds.
type holdCounter struct {
	limit    int64
	shared   atomic.Int64 // permits, or read holds
	writers  atomic.Int64
	most     atomic.Int64 // the most holds seen at once
	breaches errorCount
}

func newHoldCounter(limit int64) *holdCounter { return &holdCounter{limit: limit} }

func (c *holdCounter) enter(m holdMode) {
	var shared, writers int64
	if m == holdWrite {
		writers = c.writers.Add(1)
		shared = c.shared.Load()
	} else {
		shared = c.shared.Add(1)
		writers = c.writers.Load()
	}
	switch {
	case m == holdPermit && shared > c.limit:
		c.breaches.add(fmt.Errorf("%d permits held at once, limit %d", shared, c.limit))
	case m == holdWrite && (writers > 1 || shared > 0):
		c.breaches.add(fmt.Errorf("a write hold beside %d other writes and %d reads", writers-1, shared))
	case m == holdRead && writers > 0:
		c.breaches.add(fmt.Errorf("a read hold beside %d writes", writers))
	}
	for n := shared + writers; ; {
		most := c.most.Load()
		if n <= most || c.most.CompareAndSwap(most, n) {
			break
		}
	}
}

func (c *holdCounter) leave(m holdMode) {
	if m == holdWrite {
		c.writers.Add(-1)
	} else {
		c.shared.Add(-1)
	}
}

// counted is c with n counting its holds, each lasting hold.
func (c contender) counted(n *holdCounter, hold time.Duration) contender {
	var held holdMode // the worker's turns come one after another
	return contender{
		take: func(ctx context.Context, m holdMode) (int64, error) {
			token, err := c.take(ctx, m)
			if err == nil {
				held = m
				n.enter(m)
				if hold > 0 {
					time.Sleep(hold) // the holder's work, not synchronisation
				}
			}
			return token, err
		},
		give: func(ctx context.Context, token int64) error {
			n.leave(held)
			return c.give(ctx, token)
		},
		modes: c.modes,
	}
}

// holdsReport is what a semaphore or rwlock run reports.
type holdsReport struct {
	Elapsed    time.Duration `json:"elapsed"`
	Holds      int64         `json:"holds"`
	Wait       Latency       `json:"wait"`
	Modes      []modeReport  `json:"modes"`
	MostHeld   int64         `json:"most_held"`
	Fairness   fairness      `json:"fairness"`
	Errors     int64         `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
}

// modeReport is one mode's holds: their count and their waits, from the
// take sent to its answer.
type modeReport struct {
	Mode  string  `json:"mode"`
	Holds int64   `json:"holds"`
	Wait  Latency `json:"wait"`
}

// report is the holds report of grants, or an error if c saw a breach:
// a primitive that lets too many in has no figures worth reading.
func (c *holdCounter) report(elapsed time.Duration, errs *errorCount, grants []grant) (any, error) {
	if n := c.breaches.n.Load(); n > 0 {
		return nil, fmt.Errorf("%d of %d holds broke the primitive's rule, the first: %s", n, len(grants), c.breaches.first)
	}
	all := newLatencies()
	byMode := map[holdMode]*latencies{}
	for _, g := range grants {
		if byMode[g.mode] == nil {
			byMode[g.mode] = newLatencies()
		}
		all.record(g.granted - g.sent)
		byMode[g.mode].record(g.granted - g.sent)
	}
	rep := holdsReport{Elapsed: elapsed, Holds: int64(len(grants)), Wait: all.summary(), MostHeld: c.most.Load(),
		Fairness: judgeFairness(afterOpening(grants)), Errors: errs.n.Load(), FirstError: errs.first}
	for _, m := range slices.Sorted(maps.Keys(byMode)) {
		sum := byMode[m].summary()
		rep.Modes = append(rep.Modes, modeReport{Mode: m.String(), Holds: sum.Count, Wait: sum})
	}
	return rep, nil
}

// HoldsResult is the semaphore or the rwlock scenario, baton's or a
// peer's: Clients workers on one semaphore of Limit permits, or on one
// read/write lock, each taking a hold (waiting) and giving it back at
// once.
type HoldsResult struct {
	Clients int `json:"clients"`
	Limit   int `json:"limit,omitempty"`
	// WriteShare is the rwlock scenario's share of write turns.
	WriteShare  float64 `json:"write_share,omitempty"`
	Holds       int64   `json:"holds"`
	Seconds     float64 `json:"seconds"`
	HoldsPerSec float64 `json:"holds_per_sec"`
	// Wait is from a take sent to its answer, over every hold; Modes has
	// each mode's (one, permit, for the semaphore; read and write).
	Wait  Latency     `json:"wait"`
	Modes []ModeHolds `json:"modes"`
	// MostHeld is the most holds the workers had at once: at most Limit
	// permits; with a write, only it.
	MostHeld           int64    `json:"most_held"`
	Fairness           fairness `json:"fairness"`
	CPUSecondsPer1k    float64  `json:"cpu_seconds_per_1k"`
	RaftEntriesPerHold float64  `json:"raft_entries_per_hold,omitempty"`
	Cores              CPUCores `json:"cores"`
	Errors             int64    `json:"errors"`
	FirstError         string   `json:"first_error,omitempty"`
	// BatonVs divides baton's holds/s by this peer's (above 1 is baton
	// ahead); absent for baton's own.
	BatonVs float64 `json:"baton_vs,omitempty"`
}

// ModeHolds is one mode's holds in a HoldsResult.
type ModeHolds struct {
	Mode        string  `json:"mode"`
	Holds       int64   `json:"holds"`
	HoldsPerSec float64 `json:"holds_per_sec"`
	Wait        Latency `json:"wait"`
	// BatonVs divides baton's holds/s of this mode by the peer's.
	BatonVs float64 `json:"baton_vs,omitempty"`
}

func newHoldsResult(kind string, clients int, r holdsReport, u spent) *HoldsResult {
	secs := r.Elapsed.Seconds()
	h := &HoldsResult{
		Clients: clients, Holds: r.Holds, Seconds: secs, HoldsPerSec: per(float64(r.Holds), secs),
		Wait: r.Wait, MostHeld: r.MostHeld, Fairness: r.Fairness,
		CPUSecondsPer1k:    per(u.cpu.Seconds()*1000, float64(r.Holds)),
		RaftEntriesPerHold: per(u.raftEntries, float64(r.Holds)),
		Cores:              u.cores(), Errors: r.Errors, FirstError: r.FirstError,
	}
	if kind == kindSemaphore {
		h.Limit = semaphoreLimit
	} else {
		h.WriteShare = rwWriteShare
	}
	for _, m := range r.Modes {
		h.Modes = append(h.Modes, ModeHolds{Mode: m.Mode, Holds: m.Holds, HoldsPerSec: per(float64(m.Holds), secs), Wait: m.Wait})
	}
	return h
}

// compareTo fills in peer's ratios: baton's holds/s, in all and in each
// mode, divided by the peer's.
func (h *HoldsResult) compareTo(peer *HoldsResult) {
	peer.BatonVs = per(h.HoldsPerSec, peer.HoldsPerSec)
	for i := range peer.Modes {
		for _, m := range h.Modes {
			if m.Mode == peer.Modes[i].Mode {
				peer.Modes[i].BatonVs = per(m.HoldsPerSec, peer.Modes[i].HoldsPerSec)
			}
		}
	}
}

// printHolds prints baton's semaphore and rwlock figures beside the
// peers'.
func printHolds(tw io.Writer, r *Results) {
	if s := r.Semaphore; s != nil {
		fmt.Fprintf(tw, "\nsemaphore: %d clients, limit %d, take a permit (waiting) then give it back, one semaphore (×: baton's holds/s ÷ the peer's)\n", s.Clients, s.Limit)
		printHoldRows(tw, []peerHolds{{"baton", s}, {"zookeeper", r.ZooKeeperSemaphore}})
	}
	if rw := r.RWLock; rw != nil {
		fmt.Fprintf(tw, "\nrwlock: %d clients, %.0f%% of turns writes, take a hold (waiting) then release it, one read/write lock (×: baton's holds/s ÷ the peer's)\n", rw.Clients, 100*rw.WriteShare)
		printHoldRows(tw, []peerHolds{{"baton", rw}, {"zookeeper", r.ZooKeeperRWLock}})
	}
	if r.Semaphore != nil || r.RWLock != nil {
		fmt.Fprintln(tw, "wait: take sent → answered; most held: the most holds the workers had at once (checked in each run: ≤ limit, a write alone)")
		if r.ZooKeeperSemaphore != nil || r.ZooKeeperRWLock != nil {
			fmt.Fprintln(tw, "zookeeper: Curator's InterProcessSemaphoreV2 and InterProcessReadWriteLock, one session per worker; cpu and node cores are the server's")
		}
	}
}

// peerHolds is a HoldsResult, named; result is nil when it did not run.
type peerHolds struct {
	name   string
	result *HoldsResult
}

func printHoldRows(tw io.Writer, ps []peerHolds) {
	fmt.Fprintln(tw, "peer\tmode\tholds/s\t×\twait p50\twait p99\tmost held\tjudged\tin order\tcpu s/1k\traft/hold\tcores node/gen/other\terrors\t")
	for _, p := range ps {
		h := p.result
		if h == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\tall\t%.0f\t%s\t%s\t%s\t%d\t%d\t%.4f\t%s\t%s\t%s\t%d\t\n",
			p.name, h.HoldsPerSec, ratio(h.BatonVs), ms(h.Wait.P50), ms(h.Wait.P99), h.MostHeld, h.Fairness.Judged, h.Fairness.InOrder,
			figure(h.CPUSecondsPer1k, 3), figure(h.RaftEntriesPerHold, 2), h.Cores, h.Errors)
		if len(h.Modes) < 2 {
			continue
		}
		for _, m := range h.Modes {
			fmt.Fprintf(tw, "\t%s\t%.0f\t%s\t%s\t%s\t\t\t\t\t\t\t\t\n", m.Mode, m.HoldsPerSec, ratio(m.BatonVs), ms(m.Wait.P50), ms(m.Wait.P99))
		}
	}
}
