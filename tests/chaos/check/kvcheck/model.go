package kvcheck

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// revUnknown is keyState.Rev when an Unknown put wrote the key last: its
// revision, at least Floor when it was written, is for a read to reveal.
const revUnknown int64 = -1

// keyState is KeyModel's view of one key: a register with a revision. It
// is comparable, as check's states are.
type keyState struct {
	Present bool
	// Value is the key's value, in compact JSON; Rev the revision of its
	// last put, or revUnknown; Session the session it is bound to.
	Value   string
	Rev     int64
	Session string
	// Floor is the lowest revision a read of the key may be at now: the
	// revision of the last put or read the model placed (one past the
	// last when the write's is unknown). A write's revision is above it.
	Floor int64
}

// pin returns s with its revision known to be rev, and whether it can be:
// the key exists, at rev, or at the unknown revision of an Unknown put,
// which is at least Floor.
func (s keyState) pin(rev int64) (keyState, bool) {
	switch {
	case !s.Present || rev <= 0:
		return s, false
	case s.Rev == rev:
		return s, true
	case s.Rev == revUnknown && rev >= s.Floor:
		s.Rev, s.Floor = rev, rev
		return s, true
	}
	return s, false
}

// compare returns s as the compare of op (its if_revision) needs it, and
// whether the compare holds: none, the key absent (0), or at that revision.
func (s keyState) compare(op check.Op) (keyState, bool) {
	switch {
	case op.IfRevision == nil:
		return s, true
	case *op.IfRevision == 0:
		return s, !s.Present
	}
	return s.pin(*op.IfRevision)
}

// mismatched returns s as op's refusal, revision_mismatch, shows it, and
// whether it can: the key at op.OutRevision (0: absent), which is not what
// op's compare asked for.
func (s keyState) mismatched(op check.Op) (keyState, bool) {
	if op.IfRevision == nil || *op.IfRevision == op.OutRevision {
		return s, false
	}
	if op.OutRevision == 0 {
		return s, !s.Present
	}
	return s.pin(op.OutRevision)
}

// step returns every state s may move to when op takes effect, with or
// without the key vanishing first by its session's end where vanishes
// (the trail's, for this key) say it did; none means op cannot be
// linearized here.
func (s keyState) step(op check.Op, vanishes []Vanish) []keyState {
	out := s.apply(op)
	for _, v := range s.vanish(vanishes) {
		out = append(out, v.apply(op)...)
	}
	return unique(out)
}

// vanish returns the states s may be in once its session's end deleted
// it: none unless the trail shows that end deleting the incarnation s is
// (its last put's revision, its session), after everything placed so far.
func (s keyState) vanish(vanishes []Vanish) []keyState {
	if !s.Present || s.Session == "" {
		return nil
	}
	var out []keyState
	for _, v := range vanishes {
		if v.Session == s.Session && v.At > s.Floor && (v.Put == s.Rev || s.Rev == revUnknown && v.Put >= s.Floor) {
			out = append(out, keyState{Floor: v.At})
		}
	}
	return out
}

// apply is step for op alone.
func (s keyState) apply(op check.Op) []keyState {
	switch op.Kind {
	case check.KVGet:
		return s.get(op)
	case check.KVPut:
		return s.put(op)
	case check.KVDelete:
		return s.del(op)
	}
	return nil
}

// get is apply for a read: it shows the key as it is, or its absence at
// a revision no lower than anything placed before.
func (s keyState) get(op check.Op) []keyState {
	switch op.Result {
	case check.OK:
		if next, ok := s.pin(op.OutRevision); ok && next.Value == op.OutValue && next.Session == op.OutSession {
			return []keyState{next}
		}
	case check.Rejected:
		if !s.Present && op.OutRevision >= s.Floor {
			s.Floor = op.OutRevision
			return []keyState{s}
		}
	case check.Unknown:
		return []keyState{s}
	}
	return nil
}

// put is apply for a put. One that took effect passed its compare and is
// at a revision above every one placed; a revision_mismatch shows the
// key's revision; a refusal by its fence or its session changes nothing
// (CheckKeyOrder and CheckKeyAudit judge those).
func (s keyState) put(op check.Op) []keyState {
	written := keyState{Present: true, Value: op.Value, Session: op.Session}
	switch op.Result {
	case check.OK:
		next, ok := s.compare(op)
		if !ok || op.OutRevision <= next.Floor || op.OutSession != op.Session {
			return nil
		}
		written.Rev, written.Floor = op.OutRevision, op.OutRevision
		return []keyState{written}
	case check.Rejected:
		if op.Code != "revision_mismatch" {
			return []keyState{s}
		}
		if next, ok := s.mismatched(op); ok {
			return []keyState{next}
		}
	case check.Unknown:
		out := []keyState{s}
		if next, ok := s.compare(op); ok {
			written.Rev, written.Floor = revUnknown, next.Floor+1
			out = append(out, written)
		}
		return out
	}
	return nil
}

// del is apply for a delete: one that took effect found the key (at its
// if_revision, if any); a key_not_found shows it absent, as a read does.
func (s keyState) del(op check.Op) []keyState {
	next, ok := s.compare(op)
	gone := keyState{Floor: next.Floor + 1}
	ok = ok && s.Present
	switch op.Result {
	case check.OK:
		if ok {
			return []keyState{gone}
		}
	case check.Rejected:
		switch op.Code {
		case "key_not_found":
			if !s.Present && op.OutRevision >= s.Floor {
				s.Floor = op.OutRevision
				return []keyState{s}
			}
		case "revision_mismatch":
			if mis, mok := s.mismatched(op); mok && s.Present {
				return []keyState{mis}
			}
		default:
			return []keyState{s}
		}
	case check.Unknown:
		if ok {
			return []keyState{s, gone}
		}
		return []keyState{s}
	}
	return nil
}

func unique(states []keyState) []keyState {
	var out []keyState
	for _, s := range states {
		seen := false
		for _, o := range out {
			seen = seen || o == s
		}
		if !seen {
			out = append(out, s)
		}
	}
	return out
}

// String is the state as the HTML visualisation shows it.
func (s keyState) String() string {
	if !s.Present {
		return fmt.Sprintf("absent, from %d", s.Floor)
	}
	rev := fmt.Sprint(s.Rev)
	if s.Rev == revUnknown {
		rev = fmt.Sprintf("?≥%d", s.Floor)
	}
	out := fmt.Sprintf("%s = %s", rev, s.Value)
	if s.Session != "" {
		out += " s " + s.Session
	}
	return out
}

// KeyModel is the sequential specification of one key, for porcupine,
// partitioned by key: a register with compare-and-set whose state is
// whether the key exists, its value, its revision and its session.
// Revisions are etcd's, global: a write's revision is above every
// revision placed before it on the key (a put's, a read's), a
// compare-and-set takes effect exactly when the key's revision is its
// if_revision (0: absent), a revision_mismatch shows the key's revision
// then (0: absent), and a read shows the latest value, revision and
// session, or the key's absence at a revision no lower than the last one
// placed. An Unknown put may take effect, at a revision a later read or
// compare reveals. A key bound to a session may vanish without an op,
// but only where vanishes (ResolveKeys) say the trail shows its
// session's end deleting that incarnation, and then at that revision.
func KeyModel(vanishes Vanishes) porcupine.Model {
	return check.Model(keyState{}, check.Op.Name, func(s keyState, op check.Op) []keyState {
		return s.step(op, vanishes[op.Key])
	}, keyState.String)
}

// CheckKeys checks the key ops of ops (those with Key set) against
// KeyModel, as check.CheckLinearizable checks the lock ops: Failed ops
// left out, Unknown ops pending to the end, Unknown reads left out.
// vanishes are ResolveKeys's: without them no key vanishes with its
// session.
func CheckKeys(ops []check.Op, vanishes Vanishes, timeout time.Duration, htmlPath string) (ok bool, err error) {
	return check.CheckModel(KeyModel(vanishes), isKeyOp, ops, timeout, htmlPath)
}

func isKeyOp(op check.Op) bool { return op.Key != "" }
