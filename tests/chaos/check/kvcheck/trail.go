package kvcheck

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// Vanish is an incarnation of a key that the trail shows deleted by its
// session's end: the key's last put before the delete was at revision
// Put, bound to Session, and etcd deleted it at revision At.
type Vanish struct {
	Put, At int64
	Session string
}

// Vanishes are the trail's vanishes of each key, by key.
type Vanishes map[string][]Vanish

// ResolveKeys reads, from the settled trail events, which incarnations
// of keys their session's end deleted, and at which revision: for
// KeyModel, which lets those vanish without an op, and no others. A
// delete by a session's end is a key's delete event naming the session;
// CheckKeyAudit checks that the put before it was bound to it.
func ResolveKeys(events []check.AuditEvent) Vanishes {
	t := readTrail(events)
	out := Vanishes{}
	for key, evs := range t.keys {
		for i, ev := range evs {
			if ev.Type == "delete" && ev.Session != "" && i > 0 && evs[i-1].Type == "put" {
				out[key] = append(out[key], Vanish{Put: evs[i-1].Revision, At: ev.Revision, Session: ev.Session})
			}
		}
	}
	return out
}

// keyRev is a key at a revision.
type keyRev struct {
	key string
	rev int64
}

// span is a lock's hold in the trail: from its acquired event's revision
// (its token; acquired is whether there is one) to the revision it ended
// at, to, when the end names it (toKnown).
type span struct {
	from, to          int64
	acquired, toKnown bool
}

// trail is what the audit trail says of keys, their sessions, and the
// locks that fence their puts.
type trail struct {
	// keys are each key's events, in revision order; at each key's event
	// at a revision (the first, if there are more).
	keys map[string][]check.AuditEvent
	at   map[keyRev]check.AuditEvent
	// ends is the revision each session's end deleted its keys at (the
	// first such delete's, in trail order), and endsApart the sessions
	// whose keys were deleted at more than one revision.
	ends      map[string]int64
	endsApart map[string][]int64
	// holds are the single locks' holds, by lock and token.
	holds map[check.LockHolder]span
}

func readTrail(events []check.AuditEvent) trail {
	t := trail{
		keys: map[string][]check.AuditEvent{}, at: map[keyRev]check.AuditEvent{},
		ends: map[string]int64{}, endsApart: map[string][]int64{}, holds: map[check.LockHolder]span{},
	}
	for _, ev := range events {
		switch {
		case ev.Kind == "key":
			t.keys[ev.Name] = append(t.keys[ev.Name], ev)
			if _, dup := t.at[keyRev{ev.Name, ev.Revision}]; !dup {
				t.at[keyRev{ev.Name, ev.Revision}] = ev
			}
			if ev.Type == "delete" && ev.Session != "" {
				t.sessionEnd(ev)
			}
		case ev.Kind == "" || ev.Kind == "lock":
			t.lockEvent(ev)
		}
	}
	for _, evs := range t.keys {
		slices.SortStableFunc(evs, func(a, b check.AuditEvent) int { return cmp.Compare(a.Revision, b.Revision) })
	}
	return t
}

// sessionEnd records ev, a key's delete by its session's end.
func (t trail) sessionEnd(ev check.AuditEvent) {
	end, seen := t.ends[ev.Session]
	switch {
	case !seen:
		t.ends[ev.Session] = ev.Revision
	case end != ev.Revision && !slices.Contains(t.endsApart[ev.Session], ev.Revision):
		if len(t.endsApart[ev.Session]) == 0 {
			t.endsApart[ev.Session] = []int64{end}
		}
		t.endsApart[ev.Session] = append(t.endsApart[ev.Session], ev.Revision)
	}
}

// lockEvent records ev, a lock's event, in the span of its hold.
func (t trail) lockEvent(ev check.AuditEvent) {
	if len(ev.Set) > 0 {
		return // a lock set member's: no key names a set as its fence
	}
	h := check.LockHolder{Lock: ev.Lock, Token: ev.Token}
	s, ok := t.holds[h]
	if !ok {
		s = span{from: ev.Token, to: math.MaxInt64}
	}
	switch {
	case ev.Type == "acquired":
		s.acquired = true
	case ev.IsLockEnd():
		if rev, known := ev.EndedAt(); known {
			s.to, s.toKnown = rev, true
		}
	}
	t.holds[h] = s
}

// before is the event of key just before revision rev in the trail, if any.
func (t trail) before(key string, rev int64) (check.AuditEvent, bool) {
	evs := t.keys[key]
	i, _ := slices.BinarySearchFunc(evs, rev, func(ev check.AuditEvent, r int64) int { return cmp.Compare(ev.Revision, r) })
	if i == 0 {
		return check.AuditEvent{}, false
	}
	return evs[i-1], true
}

// detailRevision is the revision a session end's delete says etcd deleted
// the key at ("… etcd deleted the key at revision N").
func detailRevision(detail string) (int64, bool) {
	const mark = "deleted the key at revision "
	_, rest, found := strings.Cut(detail, mark)
	if !found {
		return 0, false
	}
	rev, err := strconv.ParseInt(strings.Fields(rest + " ")[0], 10, 64)
	return rev, err == nil
}
