package contend

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// Wait is how long each contender waits in the queue: far more
// than a full turn of the queue should take.
const Wait = 30 * time.Second

// Report is what a contention loop reports: its grants, their handoffs
// and their fairness.
type Report struct {
	Elapsed       time.Duration   `json:"elapsed"`
	Grants        int64           `json:"grants"`
	Errors        int64           `json:"errors"`
	FirstError    string          `json:"first_error,omitempty"`
	Handoff       measure.Latency `json:"handoff"`
	HandoffsEarly int64           `json:"handoffs_early"`
	Fairness      Fairness        `json:"fairness"`
}

// Grant is one acquire+release of the contended key, its times taken on
// the loop's one monotonic clock, from the start of the run.
type Grant struct {
	Sent     time.Duration // acquire request about to be written
	Granted  time.Duration // acquire answered 201
	Released time.Duration // release answered 204
	Token    int64
	Mode     HoldMode
}

// HoldMode is what a turn takes: the one hold of a lock or an election
// (plain), one of a semaphore's permits, or a read or a write hold of a
// read/write lock.
type HoldMode uint8

const (
	HoldPlain HoldMode = iota
	HoldPermit
	HoldRead
	HoldWrite
)

func (m HoldMode) String() string {
	return [...]string{"plain", "permit", "read", "write"}[m]
}

// Contender is one worker of the contention loop. Each turn, Take waits
// for a hold in the turn's mode and returns its token, and Give gives it
// back at once. Modes picks each turn's mode; nil means every turn is
// plain.
type Contender struct {
	Take  func(ctx context.Context, m HoldMode) (int64, error)
	Give  func(ctx context.Context, token int64) error
	Modes func() HoldMode
}

// Mode draws the mode of c's next turn.
func (c Contender) Mode() HoldMode {
	if c.Modes == nil {
		return HoldPlain
	}
	return c.Modes()
}

// Turns runs each contender's take then give over and over, one
// goroutine a contender, and returns every turn that succeeded, timed
// from start. No new take after the deadline, but every take started is
// seen through, so each one has its grant for fairness; and every worker
// has at least two turns, so that some requests follow the opening
// burst, however short the run.
func Turns(ctx context.Context, start, deadline time.Time, cs []Contender, errs *measure.ErrorCount) []Grant {
	perClient := make([][]Grant, len(cs))
	var wg sync.WaitGroup
	for w, c := range cs {
		wg.Go(func() {
			for turn := 0; ctx.Err() == nil && (turn < 2 || time.Now().Before(deadline)); turn++ {
				g := Grant{Mode: c.Mode(), Sent: time.Since(start)}
				token, err := c.Take(ctx, g.Mode)
				g.Granted = time.Since(start)
				if err != nil {
					errs.Add(err)
					continue
				}
				err = c.Give(ctx, token)
				g.Released = time.Since(start)
				if err != nil {
					errs.Add(err)
					continue
				}
				g.Token = token
				perClient[w] = append(perClient[w], g)
			}
		})
	}
	wg.Wait()
	return slices.Concat(perClient...)
}

// GrantReport is the contention report of grants, the run's, over
// elapsed.
func GrantReport(elapsed time.Duration, errs *measure.ErrorCount, grants []Grant) Report {
	rep := Report{Elapsed: elapsed, Grants: int64(len(grants)), Errors: errs.Count(), FirstError: errs.First()}
	lat, early := handoffs(grants)
	rep.Handoff, rep.HandoffsEarly = lat.Summary(), early
	rep.Fairness = judgeFairness(afterOpening(grants))
	return rep
}

// afterOpening drops the opening burst: every client sends at once, before
// anyone is queued, so the order those requests reach the server in is a
// race, and no order of their grants is unfair. Every request sent after
// the first grant was answered has a well-defined place in the queue.
func afterOpening(grants []Grant) []Grant {
	if len(grants) == 0 {
		return nil
	}
	first := slices.MinFunc(grants, func(x, y Grant) int { return cmp.Compare(x.Granted, y.Granted) }).Granted
	return slices.DeleteFunc(slices.Clone(grants), func(g Grant) bool { return g.Sent < first })
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
func handoffs(grants []Grant) (lat *measure.Latencies, early int64) {
	byToken := slices.SortedFunc(slices.Values(grants), func(x, y Grant) int { return cmp.Compare(x.Token, y.Token) })
	lat = measure.NewLatencies()
	for i := 1; i < len(byToken); i++ {
		d := byToken[i].Granted - byToken[i-1].Released
		if d < 0 {
			early++
		}
		lat.Record(d)
	}
	return lat, early
}

// Fairness compares the order locks were granted in (their tokens) with
// the order the acquire requests were sent in.
type Fairness struct {
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
func judgeFairness(grants []Grant) Fairness {
	n := len(grants)
	if n == 0 {
		return Fairness{}
	}
	bySent := slices.SortedFunc(slices.Values(grants), func(x, y Grant) int { return cmp.Compare(x.Sent, y.Sent) })
	byToken := slices.SortedFunc(slices.Values(grants), func(x, y Grant) int { return cmp.Compare(x.Token, y.Token) })
	rankOf := make(map[int64]int, n)
	for i, g := range byToken {
		rankOf[g.Token] = i
	}
	ranks := make([]int, n) // grant rank of the i-th request sent
	for i, g := range bySent {
		ranks[i] = rankOf[g.Token]
	}

	f := Fairness{Judged: n}
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

// Generate is a load generator's contention loop: spec.Clients workers,
// each looping on the Contender turns gives it, Take (which waits for its
// turn) then Give at once, and reports their grants as the contention
// scenario does. No take starts after the duration, every take started
// is seen through, and each worker has at least two turns.
func Generate(ctx context.Context, spec load.Spec, p *load.Parent, turns func(w int) Contender) error {
	return GenerateThen(ctx, spec, p, turns, func(elapsed time.Duration, errs *measure.ErrorCount, grants []Grant) (any, error) {
		return GrantReport(elapsed, errs, grants), nil
	})
}

// GenerateThen is Generate with the report report makes of the grants;
// an error from report fails the load generator instead.
func GenerateThen(ctx context.Context, spec load.Spec, p *load.Parent, turns func(w int) Contender,
	report func(elapsed time.Duration, errs *measure.ErrorCount, grants []Grant) (any, error)) error {
	cs := make([]Contender, spec.Clients)
	for w := range spec.Clients {
		cs[w] = turns(w)
	}
	if err := p.Ready(); err != nil {
		return err
	}
	var errs measure.ErrorCount
	start := time.Now()
	grants := Turns(ctx, start, start.Add(spec.Duration), cs, &errs)
	rep, err := report(time.Since(start), &errs, grants)
	if err != nil {
		return err
	}
	return p.Report(rep)
}
