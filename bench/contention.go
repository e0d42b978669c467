package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// contentionWait is how long each contender waits in the queue: far more
// than a full turn of the queue should take.
const contentionWait = 30 * time.Second

// contention runs clients that each loop on one key: acquire with wait,
// release at once.
func (b *bench) contention(ctx context.Context) (*ContentionResult, error) {
	lg, err := startLoadgen(ctx, loadSpec{
		Kind:     kindContention,
		URL:      b.url,
		Clients:  b.cfg.ContentionClients,
		Duration: b.cfg.Duration,
		Prefix:   "contention-",
	})
	if err != nil {
		return nil, err
	}
	defer lg.close()
	var rep contentionReport
	u, err := measured(func() (time.Duration, error) { return lg.run(&rep) })
	if err != nil {
		return nil, err
	}
	if err := lg.wait(); err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	return newContentionResult(b.cfg.ContentionClients, rep, u), nil
}

// contentionReport is what the contention load generator reports.
type contentionReport struct {
	Elapsed       time.Duration `json:"elapsed"`
	Grants        int64         `json:"grants"`
	Errors        int64         `json:"errors"`
	FirstError    string        `json:"first_error,omitempty"`
	Handoff       Latency       `json:"handoff"`
	HandoffsEarly int64         `json:"handoffs_early"`
	Fairness      fairness      `json:"fairness"`
}

// grant is one acquire+release of the contended key, its times taken on
// the load generator's one monotonic clock, from the start of the run.
type grant struct {
	sent     time.Duration // acquire request about to be written
	granted  time.Duration // acquire answered 201
	released time.Duration // release answered 204
	token    int64
	mode     holdMode
}

// genContention is the load generator's side of contention. Clients are
// goroutines of one process so that every timestamp is on one clock.
func genContention(ctx context.Context, spec loadSpec, p *parentConn) error {
	a := newAPI(spec.URL, spec.Clients)
	name := spec.Prefix + "one"
	return contend(ctx, spec, p, func(w int) contender {
		body := acquireBody{Owner: "contender-" + strconv.Itoa(w), TTL: sessionTTL.String(), Wait: contentionWait.String()}.encode()
		return contender{
			take: func(ctx context.Context, _ holdMode) (int64, error) { return a.acquire(ctx, name, body) },
			give: func(ctx context.Context, token int64) error { return a.release(ctx, name, token) },
		}
	})
}

// holdMode is what a turn takes: the one hold of a lock or an election
// (plain), one of a semaphore's permits, or a read or a write hold of a
// read/write lock.
type holdMode uint8

const (
	holdPlain holdMode = iota
	holdPermit
	holdRead
	holdWrite
)

func (m holdMode) String() string {
	return [...]string{"plain", "permit", "read", "write"}[m]
}

// contender is one worker of the contention loop. Each turn, take waits
// for a hold in the turn's mode and returns its token, and give gives it
// back at once. modes picks each turn's mode; nil means every turn is
// plain.
type contender struct {
	take  func(ctx context.Context, m holdMode) (int64, error)
	give  func(ctx context.Context, token int64) error
	modes func() holdMode
}

func (c contender) mode() holdMode {
	if c.modes == nil {
		return holdPlain
	}
	return c.modes()
}

// turnsOf runs each contender's take then give over and over, one
// goroutine a contender, and returns every turn that succeeded, timed
// from start. No new take after the deadline, but every take started is
// seen through, so each one has its grant for fairness; and every worker
// has at least two turns, so that some requests follow the opening
// burst, however short the run.
func turnsOf(ctx context.Context, start, deadline time.Time, cs []contender, errs *errorCount) []grant {
	perClient := make([][]grant, len(cs))
	var wg sync.WaitGroup
	for w, c := range cs {
		wg.Go(func() {
			for turn := 0; ctx.Err() == nil && (turn < 2 || time.Now().Before(deadline)); turn++ {
				g := grant{mode: c.mode(), sent: time.Since(start)}
				token, err := c.take(ctx, g.mode)
				g.granted = time.Since(start)
				if err != nil {
					errs.add(err)
					continue
				}
				err = c.give(ctx, token)
				g.released = time.Since(start)
				if err != nil {
					errs.add(err)
					continue
				}
				g.token = token
				perClient[w] = append(perClient[w], g)
			}
		})
	}
	wg.Wait()
	return slices.Concat(perClient...)
}

// grantReport is the contention report of grants, the run's, over
// elapsed.
func grantReport(elapsed time.Duration, errs *errorCount, grants []grant) contentionReport {
	rep := contentionReport{Elapsed: elapsed, Grants: int64(len(grants)), Errors: errs.n.Load(), FirstError: errs.first}
	lat, early := handoffs(grants)
	rep.Handoff, rep.HandoffsEarly = lat.summary(), early
	rep.Fairness = judgeFairness(afterOpening(grants))
	return rep
}

// afterOpening drops the opening burst: every client sends at once, before
// anyone is queued, so the order those requests reach the server in is a
// race, and no order of their grants is unfair. Every request sent after
// the first grant was answered has a well-defined place in the queue.
func afterOpening(grants []grant) []grant {
	if len(grants) == 0 {
		return nil
	}
	first := slices.MinFunc(grants, func(x, y grant) int { return cmp.Compare(x.granted, y.granted) }).granted
	return slices.DeleteFunc(slices.Clone(grants), func(g grant) bool { return g.sent < first })
}

// handoffs measures each handoff: from the previous holder's release
// being answered to the next holder's acquire being answered. Tokens
// order the holds, as only these clients take the key.
//
// A handoff is early when the next acquire was answered first: the lock
// was free before the release's answer was sent (a release that does more
// work after freeing the key, such as revoking the lock's lease), or the
// previous holder's goroutine ran late to read it. Early handoffs count as
// 0 in the histogram; early says how many there were.
func handoffs(grants []grant) (lat *latencies, early int64) {
	byToken := slices.SortedFunc(slices.Values(grants), func(x, y grant) int { return cmp.Compare(x.token, y.token) })
	lat = newLatencies()
	for i := 1; i < len(byToken); i++ {
		d := byToken[i].granted - byToken[i-1].released
		if d < 0 {
			early++
		}
		lat.record(d)
	}
	return lat, early
}

// fairness compares the order locks were granted in (their tokens) with
// the order the acquire requests were sent in.
type fairness struct {
	// Judged is how many requests were compared: those sent after the
	// opening burst (see afterOpening).
	Judged int `json:"judged"`
	// InOrder is the fraction of grants that went to a request sent before
	// every request still waiting: no request sent earlier was granted
	// later. 1 is strict first come, first served.
	InOrder float64 `json:"in_order"`
	// MaxOvertaken is the most requests sent after one request that were
	// granted before it. 0 is strict first come, first served.
	MaxOvertaken int `json:"max_overtaken"`
}

// judgeFairness counts inversions between send order and grant order with
// a Fenwick tree over grant ranks, in O(n log n): a 10s run has tens of
// thousands of grants. Requests sent within microseconds of each other
// may reach the server in the other order, so a strictly fair server can
// still show a few small inversions.
func judgeFairness(grants []grant) fairness {
	n := len(grants)
	if n == 0 {
		return fairness{}
	}
	bySent := slices.SortedFunc(slices.Values(grants), func(x, y grant) int { return cmp.Compare(x.sent, y.sent) })
	byToken := slices.SortedFunc(slices.Values(grants), func(x, y grant) int { return cmp.Compare(x.token, y.token) })
	rankOf := make(map[int64]int, n)
	for i, g := range byToken {
		rankOf[g.token] = i
	}
	ranks := make([]int, n) // grant rank of the i-th request sent
	for i, g := range bySent {
		ranks[i] = rankOf[g.token]
	}

	f := fairness{Judged: n}
	// Walking from the last sent back: how many sent later got an
	// earlier grant.
	later := newFenwick(n)
	for i := n - 1; i >= 0; i-- {
		f.MaxOvertaken = max(f.MaxOvertaken, later.countBelow(ranks[i]))
		later.add(ranks[i])
	}
	// Walking from the first sent on: how many sent earlier got a later
	// grant; none means this grant kept arrival order.
	earlier := newFenwick(n)
	inOrder := 0
	for i, r := range ranks {
		if i-earlier.countBelow(r) == 0 {
			inOrder++
		}
		earlier.add(r)
	}
	f.InOrder = float64(inOrder) / float64(n)
	return f
}

// fenwick counts which of the ranks 0…n-1 were added.
type fenwick []int

func newFenwick(n int) fenwick { return make(fenwick, n+1) }

func (t fenwick) add(rank int) {
	for i := rank + 1; i < len(t); i += i & -i {
		t[i]++
	}
}

// countBelow is how many added ranks are below rank.
func (t fenwick) countBelow(rank int) int {
	c := 0
	for i := rank; i > 0; i -= i & -i {
		c += t[i]
	}
	return c
}
