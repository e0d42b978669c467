package kvcheck

import (
	"cmp"
	"math"
	"slices"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// seen is what an op's answer shows of the etcd revision it took effect
// or read at: at least rev, or, exact, exactly rev.
type seen struct {
	op    check.Op
	rev   int64
	exact bool
}

// seenBy is what op's answer shows of its revision; ok is false when it
// shows none. A put's revision is its write's; a key_not_found's the
// revision it read (the header's); a read of the key, or a
// revision_mismatch, shows the key's revision, which the read was at or
// after; a lock's grant is at its token, a revision. A linearizable
// read or a write is at one revision between its call and its return.
func seenBy(op check.Op, fences map[string]bool) (s seen, ok bool) {
	s.op = op
	switch {
	case op.Key != "" && op.Result == check.OK && op.Kind == check.KVPut:
		s.rev, s.exact = op.OutRevision, true
	case op.Key != "" && op.Result == check.OK && op.Kind == check.KVGet:
		s.rev = op.OutRevision
	case op.Key != "" && op.Result == check.Rejected && op.Code == "key_not_found":
		s.rev, s.exact = op.OutRevision, true
	case op.Key != "" && op.Result == check.Rejected && op.Code == "revision_mismatch":
		s.rev = op.OutRevision
	case op.Kind == check.Acquire && op.Result == check.OK && fences[op.Lock]:
		s.rev, s.exact = op.OutToken, true
	default:
		return s, false
	}
	return s, s.rev > 0
}

// clock orders revisions by real time. Revisions are etcd's, one sequence
// for every key and lock: whatever happens after an op returned is at a
// revision no lower than the one the op saw (above it, for a write), and
// whatever happened before an op was called is at a revision no higher
// than the one the op was at.
type clock struct {
	// byReturn is what the ops that saw a revision saw, by return, and
	// most the highest of them up to each.
	byReturn []seen
	most     []seen
	// byCall is what the ops at a known revision were at, by call, and
	// least the lowest of them from each on.
	byCall []seen
	least  []seen
}

// newClock reads the clock of ops: their key ops and the grants of the
// locks that fence their puts.
func newClock(ops []check.Op) clock {
	fences := map[string]bool{}
	for _, op := range ops {
		if op.Key != "" && op.Lock != "" {
			fences[op.Lock] = true
		}
	}
	var c clock
	for _, op := range ops {
		if s, ok := seenBy(op, fences); ok {
			c.byReturn = append(c.byReturn, s)
			if s.exact {
				c.byCall = append(c.byCall, s)
			}
		}
	}
	slices.SortStableFunc(c.byReturn, func(a, b seen) int { return cmp.Compare(a.op.Return, b.op.Return) })
	slices.SortStableFunc(c.byCall, func(a, b seen) int { return cmp.Compare(a.op.Call, b.op.Call) })
	c.most = make([]seen, len(c.byReturn))
	for i, s := range c.byReturn {
		c.most[i] = s
		if i > 0 && c.most[i-1].rev >= s.rev {
			c.most[i] = c.most[i-1]
		}
	}
	c.least = make([]seen, len(c.byCall))
	for i := len(c.byCall) - 1; i >= 0; i-- {
		c.least[i] = c.byCall[i]
		if i+1 < len(c.byCall) && c.least[i+1].rev <= c.byCall[i].rev {
			c.least[i] = c.least[i+1]
		}
	}
	return c
}

// before is the highest revision seen by an op that returned before t,
// with that op; rev 0 when none did.
func (c clock) before(t int64) seen {
	i, _ := slices.BinarySearchFunc(c.byReturn, t, func(s seen, t int64) int { return cmp.Compare(s.op.Return, t) })
	if i == 0 {
		return seen{}
	}
	return c.most[i-1]
}

// after is the lowest revision an op called after t is known to have been
// at, with that op; rev math.MaxInt64 when none is.
func (c clock) after(t int64) seen {
	i, _ := slices.BinarySearchFunc(c.byCall, t+1, func(s seen, t int64) int { return cmp.Compare(s.op.Call, t) })
	if i == len(c.byCall) {
		return seen{rev: math.MaxInt64}
	}
	return c.least[i]
}
