package contend

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/baton-dev/baton/bench/internal/measure"
)

// The semaphore and rwlock scenarios are the contention loop on things
// with several holds at once, named here as their load kinds and results
// are: -contention-clients workers on one semaphore of SemaphoreLimit
// permits, each taking a permit (waiting) and giving it back at once; and
// on one read/write lock, each turn a read or, RWWriteShare of the turns,
// a write, held for RWHold. Beside baton's run, when the zookeeper peer
// runs, Curator's recipes for the same: InterProcessSemaphoreV2 and
// InterProcessReadWriteLock (package zookeeper's zkholds.go). etcd's
// client has no semaphore recipe (clientv3/concurrency has Mutex,
// Election and STM; its experimental recipes a queue, barriers and an
// RWMutex), so the semaphore has no etcd peer.
const (
	KindSemaphore = "semaphore"
	KindRWLock    = "rwlock"
)

// SemaphoreLimit is the semaphore scenario's limit: 4 permits among the
// contention scenario's 64 clients.
const SemaphoreLimit = 4

// RWWriteShare of the rwlock scenario's turns are writes, drawn from
// each worker's own generator seeded with rwSeed and the worker's number,
// so every run draws the same turns.
const (
	RWWriteShare = 0.1
	rwSeed       = 20
)

// RWHold is how long each of the rwlock scenario's holds lasts: the
// work a reader or writer does, brief beside a turn of the queue, and
// long enough for readers to be seen sharing (most held) and a writer
// beside anyone to be seen at all. The semaphore's permits, as the
// contention scenario's locks, are given back at once.
const RWHold = time.Millisecond

// RWModes returns worker w's draw of read and write turns.
func RWModes(w int) func() HoldMode {
	r := rand.New(rand.NewPCG(rwSeed, uint64(w)))
	return func() HoldMode {
		if r.Float64() < RWWriteShare {
			return HoldWrite
		}
		return HoldRead
	}
}

// Permits is the modes of a semaphore's taker: a permit every turn.
func Permits() HoldMode { return HoldPermit }

// HoldCounter counts the holds in their critical sections: from a take's
// answer to its give being sent, which lies inside the server's hold
// (granted before the answer, released after the give). So a count
// beyond what the primitive allows is a breach of it, never a timing
// artefact. With a limit, it counts permits; without, read and write
// holds.
type HoldCounter struct {
	limit    int64
	shared   atomic.Int64 // permits, or read holds
	writers  atomic.Int64
	most     atomic.Int64 // the most holds seen at once
	breaches measure.ErrorCount
}

// NewHoldCounter returns a counter of permits, at most limit at once,
// or with limit 0 of read and write holds.
func NewHoldCounter(limit int64) *HoldCounter { return &HoldCounter{limit: limit} }

func (c *HoldCounter) enter(m HoldMode) {
	var shared, writers int64
	if m == HoldWrite {
		writers = c.writers.Add(1)
		shared = c.shared.Load()
	} else {
		shared = c.shared.Add(1)
		writers = c.writers.Load()
	}
	switch {
	case m == HoldPermit && shared > c.limit:
		c.breaches.Add(fmt.Errorf("%d permits held at once, limit %d", shared, c.limit))
	case m == HoldWrite && (writers > 1 || shared > 0):
		c.breaches.Add(fmt.Errorf("a write hold beside %d other writes and %d reads", writers-1, shared))
	case m == HoldRead && writers > 0:
		c.breaches.Add(fmt.Errorf("a read hold beside %d writes", writers))
	}
	for n := shared + writers; ; {
		most := c.most.Load()
		if n <= most || c.most.CompareAndSwap(most, n) {
			break
		}
	}
}

func (c *HoldCounter) leave(m HoldMode) {
	if m == HoldWrite {
		c.writers.Add(-1)
	} else {
		c.shared.Add(-1)
	}
}

// Counted is c with n counting its holds, each lasting hold.
func (c Contender) Counted(n *HoldCounter, hold time.Duration) Contender {
	var held HoldMode // the worker's turns come one after another
	return Contender{
		Take: func(ctx context.Context, m HoldMode) (int64, error) {
			token, err := c.Take(ctx, m)
			if err == nil {
				held = m
				n.enter(m)
				if hold > 0 {
					time.Sleep(hold) // the holder's work, not synchronisation
				}
			}
			return token, err
		},
		Give: func(ctx context.Context, token int64) error {
			n.leave(held)
			return c.Give(ctx, token)
		},
		Modes: c.Modes,
	}
}

// HoldsReport is what a semaphore or rwlock run reports.
type HoldsReport struct {
	Elapsed    time.Duration   `json:"elapsed"`
	Holds      int64           `json:"holds"`
	Wait       measure.Latency `json:"wait"`
	Modes      []ModeReport    `json:"modes"`
	MostHeld   int64           `json:"most_held"`
	Fairness   Fairness        `json:"fairness"`
	Errors     int64           `json:"errors"`
	FirstError string          `json:"first_error,omitempty"`
}

// ModeReport is one mode's holds: their count and their waits, from the
// take sent to its answer.
type ModeReport struct {
	Mode  string          `json:"mode"`
	Holds int64           `json:"holds"`
	Wait  measure.Latency `json:"wait"`
}

// Report is the holds report (a HoldsReport) of grants, or an error if
// c saw a breach: a primitive that lets too many in has no figures worth
// reading.
func (c *HoldCounter) Report(elapsed time.Duration, errs *measure.ErrorCount, grants []Grant) (any, error) {
	if n := c.breaches.Count(); n > 0 {
		return nil, fmt.Errorf("%d of %d holds broke the primitive's rule, the first: %s", n, len(grants), c.breaches.First())
	}
	all := measure.NewLatencies()
	byMode := map[HoldMode]*measure.Latencies{}
	for _, g := range grants {
		if byMode[g.Mode] == nil {
			byMode[g.Mode] = measure.NewLatencies()
		}
		all.Record(g.Granted - g.Sent)
		byMode[g.Mode].Record(g.Granted - g.Sent)
	}
	rep := HoldsReport{Elapsed: elapsed, Holds: int64(len(grants)), Wait: all.Summary(), MostHeld: c.most.Load(),
		Fairness: judgeFairness(afterOpening(grants)), Errors: errs.Count(), FirstError: errs.First()}
	for _, m := range slices.Sorted(maps.Keys(byMode)) {
		sum := byMode[m].Summary()
		rep.Modes = append(rep.Modes, ModeReport{Mode: m.String(), Holds: sum.Count, Wait: sum})
	}
	return rep, nil
}
