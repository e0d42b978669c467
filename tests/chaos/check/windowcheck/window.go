package windowcheck

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// rounding is the slack a grant's time gets against a window's end: the
// trail's times are truncated to the millisecond.
const rounding = time.Millisecond

// thing is a lock or a semaphore, by the kind its events carry.
type thing struct{ kind, name string }

// asked is an acquire of thing by owner.
type asked struct {
	thing
	owner string
}

// grant is one hold as the trail shows it: granted at revision and time,
// ended at end (math.MaxInt64 while no end event says when), with the
// window its acquire asked for (0: none).
type grant struct {
	token, revision, end int64
	at                   time.Time
	window               time.Duration
}

// windowEnd is when g's window ends; at its grant without one.
func (g grant) windowEnd() time.Time { return g.at.Add(g.window) }

// CheckWindows checks the settled trail events against the at-least
// windows the ops asked for. A lock's grant must not fall inside the
// window of an earlier hold of the lock (its acquired_at ≤ the grant's
// time < its acquired_at plus min_hold); a semaphore's grant must leave at
// most its limit of permits granted before it that are still held at its
// revision or whose window is still open at its time, itself included:
// its limit is the one its acquires asked for (a lock's is 1). Only a grant that a
// window takes past the limit is reported: holds that overlap without one
// are the other audits' to report.
func CheckWindows(ops []check.Op, events []check.AuditEvent) []string {
	windows := map[asked]time.Duration{}
	limits := map[string]int{}
	for _, op := range ops {
		if op.Kind == check.SemAcquire {
			limits[op.Semaphore] = op.Limit
		}
		kind := kindOf(op)
		if kind == "" || op.MinHold == "" {
			continue
		}
		d, err := time.ParseDuration(op.MinHold)
		if err != nil {
			continue // the server refuses it: no window
		}
		windows[asked{thing{kind, op.Name()}, op.Owner}] = d
	}
	grants := map[thing][]grant{}
	ends := map[thing]map[int64]int64{}
	for _, ev := range events {
		th, ok := thingOf(ev)
		if !ok {
			continue
		}
		switch ev.Type {
		case "acquired":
			grants[th] = append(grants[th], grant{token: ev.Token, revision: ev.Revision, end: math.MaxInt64,
				at: ev.Time, window: windows[asked{th, ev.Owner}]})
		case "released", "expired", "revoked", "session_expired":
			// An expiry that does not name its revision ends the hold
			// at its grant, as package check's audits read it (-1).
			rev, ok := ev.EndedAt()
			if !ok {
				rev = -1
			}
			if ends[th] == nil {
				ends[th] = map[int64]int64{}
			}
			if _, seen := ends[th][ev.Token]; !seen {
				ends[th][ev.Token] = rev
			}
		}
	}
	var problems []string
	byName := func(a, b thing) int { return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.name, b.name)) }
	for _, th := range slices.SortedFunc(maps.Keys(grants), byName) {
		gs := grants[th]
		for i := range gs {
			if end, ok := ends[th][gs[i].token]; ok {
				gs[i].end = end
				if end < 0 {
					gs[i].end = gs[i].revision
				}
			}
		}
		limit := limits[th.name]
		if th.kind == "lock" || limit == 0 {
			limit = 1
		}
		problems = append(problems, overWindows(th, gs, limit)...)
	}
	return problems
}

// overWindows checks the grants of one thing, in trail order.
func overWindows(th thing, gs []grant, limit int) []string {
	var problems []string
	for i, g := range gs {
		var held, kept []grant
		for _, p := range gs[:i] {
			switch {
			case p.token == g.token:
				// The same hold again (a set member's event written twice):
				// not another grant.
			case p.revision <= g.revision && p.end > g.revision:
				held = append(held, p)
			case p.window > 0 && g.at.Before(p.windowEnd().Add(-rounding)):
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 && 1+len(held)+len(kept) > limit {
			for _, p := range kept {
				problems = append(problems, fmt.Sprintf("%s %q: token %d granted at %s (revision %d), inside the at-least window of token %d (acquired %s, min_hold %s, until %s, ended at revision %d); %d other holds held, limit %d",
					th.kind, th.name, g.token, g.at.Format(time.RFC3339Nano), g.revision, p.token, p.at.Format(time.RFC3339Nano), p.window,
					p.windowEnd().Format(time.RFC3339Nano), p.end, len(held), limit))
			}
		}
	}
	return problems
}

// kindOf is the kind of thing an acquire op takes ("" for none this
// package checks).
func kindOf(op check.Op) string {
	switch op.Kind {
	case check.Acquire:
		return "lock"
	case check.SemAcquire:
		return "semaphore"
	}
	return ""
}

// thingOf is what the hold event ev is about, if a lock's or a
// semaphore's.
func thingOf(ev check.AuditEvent) (thing, bool) {
	switch ev.Kind {
	case "", "lock":
		return thing{"lock", ev.Lock}, ev.Lock != ""
	case "semaphore":
		return thing{"semaphore", ev.Name}, true
	}
	return thing{}, false
}
