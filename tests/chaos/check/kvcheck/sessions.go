package kvcheck

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// endedBy reports whether op's answer says its session had ended (or
// never was): a delete of it (which ends it), a renew of it refused, a
// put under it refused as session_not_found.
func endedBy(op check.Op) bool {
	switch op.Kind {
	case check.SessionDelete:
		return op.Result == check.OK || op.Result == check.Rejected
	case check.SessionRenew:
		return op.Result == check.Rejected
	case check.KVPut:
		return op.Session != "" && op.Result == check.Rejected && op.Code == "session_not_found"
	}
	return false
}

// aliveIn is the session op's answer shows alive, "" for none: one made,
// renewed or deleted (a delete finds it first), one a put bound a key to,
// one a read shows a key bound to.
func aliveIn(op check.Op) string {
	if op.Result != check.OK {
		return ""
	}
	switch op.Kind {
	case check.SessionCreate, check.SessionRenew, check.SessionDelete, check.KVPut:
		return op.Session
	case check.KVGet:
		return op.OutSession
	}
	return ""
}

// sessions checks the sessions' ends, as the trail shows them (the
// revision their keys were deleted at), against the ops that found them
// alive or ended, in real time.
func (t trail) sessions(ops []check.Op, c clock) []string {
	ended := map[string]check.Op{} // each session's first op to return saying it had ended
	for _, op := range ops {
		if e, ok := ended[op.Session]; endedBy(op) && (!ok || op.Return < e.Return) {
			ended[op.Session] = op
		}
	}
	var problems []string
	for _, op := range ops {
		s := aliveIn(op)
		if s == "" {
			continue
		}
		if e, ok := ended[s]; ok && e.Return < op.Call {
			problems = append(problems, fmt.Sprintf("%s op %d (called at %s) finds session %s alive, but %s op %d had returned at %s saying it had ended",
				op.Kind, op.ID, time.Duration(op.Call), s, e.Kind, e.ID, time.Duration(e.Return)))
		}
		// A put's revision is the trail's to hold against the end
		// (putFollows).
		if end, ok := t.ends[s]; ok && op.Kind != check.KVPut {
			if p := c.before(op.Call); p.rev >= end {
				problems = append(problems, fmt.Sprintf("%s op %d (called at %s) finds session %s alive, but the session's end had deleted its keys at revision %d before: %s had returned having seen revision %d",
					op.Kind, op.ID, time.Duration(op.Call), s, end, describe(p.op), p.rev))
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(ended)) {
		e := ended[s]
		end, ok := t.ends[s]
		if a := c.after(e.Return); ok && end > a.rev {
			problems = append(problems, fmt.Sprintf("session %s: its end deleted its keys at revision %d, after %s op %d had returned at %s saying it had ended: %s, called later, was at revision %d",
				s, end, e.Kind, e.ID, time.Duration(e.Return), describe(a.op), a.rev))
		}
	}
	return problems
}

// fences checks the fenced puts against the holds of their locks in the
// trail: one accepted was at a revision within the hold of its token; one
// refused as stale_token was not both after the hold began and before it
// ended, as real time bounds the revision it was at.
func (t trail) fences(ops []check.Op, c clock) []string {
	var problems []string
	for _, op := range ops {
		if op.Kind != check.KVPut || op.Lock == "" {
			continue
		}
		h := t.holds[check.LockHolder{Lock: op.Lock, Token: op.Token}]
		held := h.acquired
		what := fmt.Sprintf("kv-put op %d (key %q) fenced by lock %q token %d", op.ID, op.Key, op.Lock, op.Token)
		switch {
		case op.Result == check.OK && !held:
			problems = append(problems, fmt.Sprintf("%s was accepted at revision %d, but the trail has no hold of the lock with that token", what, op.OutRevision))
		case op.Result == check.OK && !t.fenced(op, op.OutRevision):
			problems = append(problems, fmt.Sprintf("%s was accepted at revision %d, outside that hold in the trail (from %d to %s)", what, op.OutRevision, h.from, h.end()))
		case op.Result == check.Rejected && op.Code == "stale_token" && held && h.toKnown:
			lo, hi := c.before(op.Call), c.after(op.Return)
			if lo.rev >= h.from && hi.rev < h.to {
				problems = append(problems, fmt.Sprintf("%s was refused as stale, but its hold (from %d to %d) was current from before it was called (%s had seen revision %d) to after it returned (%s was at revision %d)",
					what, h.from, h.to, describe(lo.op), lo.rev, describe(hi.op), hi.rev))
			}
		}
	}
	return problems
}

// end is where the hold ended, as a problem says it.
func (s span) end() string {
	if !s.toKnown {
		return "an unknown revision"
	}
	return fmt.Sprint(s.to)
}
