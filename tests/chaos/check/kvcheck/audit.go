package kvcheck

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// CheckKeyAudit checks the keys' audit trail against what the clients
// saw. events must be the whole /v1/history, read when no session lives
// any more, and the keys must be new to the cluster. It checks:
//
//   - each key's events, in revision order: one per revision, and none
//     at a revision another key's request event has; versions 1, 2, 3, …
//     per incarnation with the created_revision of its first put; no
//     delete of a missing key; a delete by a session's end only of a key
//     bound to that session, with the revision its detail names; a key
//     bound to a session gone by that session's end and never put under
//     it after; no key still bound to a session at the end;
//   - every acknowledged put exactly once, at its revision, with its
//     version, created_revision and session, after what its compare
//     asked for, and what every read showed;
//     every acknowledged delete matched to a delete of its own, at a
//     revision between what was seen before its call and after its return
//     (after the put it compared, for a compare-and-delete); no put or
//     delete that no acknowledged or Unknown op could have made (a
//     refused write that took effect);
//   - sessions: a session's keys are deleted by its end in one revision,
//     never while the session lived (an op found it alive after) and
//     never after an op said it had ended; no op finds a session alive
//     after another said it had ended;
//   - fenced puts: an accepted one within its lock's hold in the trail, a
//     refused one (stale_token) not while the hold was current all along.
func CheckKeyAudit(ops []check.Op, events []check.AuditEvent) []string {
	t := readTrail(events)
	c := newClock(ops)
	problems := t.replay()
	problems = append(problems, t.puts(ops, c)...)
	problems = append(problems, t.deletes(ops, c)...)
	problems = append(problems, t.sessions(ops, c)...)
	return append(problems, t.fences(ops, c)...)
}

// replay checks each key's events in revision order.
func (t trail) replay() []string {
	var problems []string
	byRev := map[int64]string{} // a request's event's revision → its key
	for _, key := range slices.Sorted(maps.Keys(t.keys)) {
		evs := t.keys[key]
		var last *check.AuditEvent // the key's last put; nil while it does not exist
		for i, ev := range evs {
			if i > 0 && evs[i-1].Revision == ev.Revision {
				problems = append(problems, fmt.Sprintf("key %q: %s and %s events at revision %d: one change, recorded twice", key, evs[i-1].Type, ev.Type, ev.Revision))
				continue
			}
			if other, dup := byRev[ev.Revision]; dup && (ev.Type == "put" || ev.Session == "") {
				problems = append(problems, fmt.Sprintf("revision %d has events of keys %q and %q: one request writes one key", ev.Revision, other, key))
			} else if ev.Type == "put" || ev.Session == "" {
				byRev[ev.Revision] = key
			}
			problems = append(problems, t.outlived(key, last, ev)...)
			switch ev.Type {
			case "put":
				problems = append(problems, t.putFollows(key, last, ev)...)
				last = &evs[i]
			case "delete":
				problems = append(problems, deleteFollows(key, last, ev)...)
				last = nil
			default:
				problems = append(problems, fmt.Sprintf("key %q: an event of type %q at revision %d", key, ev.Type, ev.Revision))
			}
		}
		if last != nil && last.Session != "" {
			problems = append(problems, fmt.Sprintf("key %q: still bound to session %s by its put at revision %d, when every session had ended", key, last.Session, last.Revision))
		}
	}
	for _, s := range slices.Sorted(maps.Keys(t.endsApart)) {
		problems = append(problems, fmt.Sprintf("session %s: its end deleted its keys at revisions %v, not in one", s, t.endsApart[s]))
	}
	return problems
}

// putFollows checks ev, a put of key, after its last put last (nil: the
// key did not exist).
func (t trail) putFollows(key string, last *check.AuditEvent, ev check.AuditEvent) []string {
	var problems []string
	wantV, wantC, after := int64(1), ev.Revision, "the key did not exist"
	if last != nil {
		wantV, wantC, after = last.Version+1, last.CreatedRevision, fmt.Sprintf("its put at revision %d", last.Revision)
	}
	if ev.Version != wantV || ev.CreatedRevision != wantC {
		problems = append(problems, fmt.Sprintf("key %q: the put at revision %d is version %d, created at %d; after %s, it is version %d, created at %d",
			key, ev.Revision, ev.Version, ev.CreatedRevision, after, wantV, wantC))
	}
	if end, ok := t.ends[ev.Session]; ok && ev.Session != "" && end < ev.Revision {
		problems = append(problems, fmt.Sprintf("key %q: the put at revision %d binds it to session %s, whose end had deleted its keys at revision %d",
			key, ev.Revision, ev.Session, end))
	}
	return problems
}

// deleteFollows checks ev, a delete of key, after its last put last.
func deleteFollows(key string, last *check.AuditEvent, ev check.AuditEvent) []string {
	switch {
	case last == nil:
		return []string{fmt.Sprintf("key %q: deleted at revision %d while it did not exist", key, ev.Revision)}
	case ev.Session == "":
		return nil
	case last.Session != ev.Session:
		return []string{fmt.Sprintf("key %q: deleted at revision %d by the end of session %s, but its put at revision %d bound it to session %q",
			key, ev.Revision, ev.Session, last.Revision, last.Session)}
	}
	if rev, ok := detailRevision(ev.Detail); !ok || rev != ev.Revision {
		return []string{fmt.Sprintf("key %q: deleted at revision %d by the end of session %s, but the event's detail says %q",
			key, ev.Revision, ev.Session, ev.Detail)}
	}
	return nil
}

// outlived checks that the incarnation of key that last put bound to a
// session did not outlive that session: its next event, ev, is not a
// put or a request's delete after the session's end.
func (t trail) outlived(key string, last *check.AuditEvent, ev check.AuditEvent) []string {
	if last == nil || last.Session == "" || ev.Type == "delete" && ev.Session != "" {
		return nil
	}
	if end, ok := t.ends[last.Session]; ok && end > last.Revision && end < ev.Revision {
		return []string{fmt.Sprintf("key %q: bound to session %s by its put at revision %d, it outlived the session's end at revision %d (its next event: %s at %d)",
			key, last.Session, last.Revision, end, ev.Type, ev.Revision)}
	}
	return nil
}

// puts matches the ops that put or read a key with the trail's puts.
func (t trail) puts(ops []check.Op, c clock) []string {
	var problems []string
	explained := map[keyRev]bool{}
	var unknown []check.Op
	for _, op := range ops {
		switch {
		case op.Key == "":
		case op.Kind == check.KVPut && op.Result == check.OK:
			explained[keyRev{op.Key, op.OutRevision}] = true
			problems = append(problems, t.shows(op, op.Session)...)
			if ev, ok := t.at[keyRev{op.Key, op.OutRevision}]; ok && !t.compared(op, ev) {
				prev, _ := t.before(op.Key, op.OutRevision)
				problems = append(problems, fmt.Sprintf("kv-put op %d (key %q, if_revision %d) took effect at revision %d, but the trail's event before it is a %s at revision %d",
					op.ID, op.Key, *op.IfRevision, op.OutRevision, cmp.Or(prev.Type, "nothing"), prev.Revision))
			}
		case op.Kind == check.KVGet && op.Result == check.OK:
			problems = append(problems, t.shows(op, op.OutSession)...)
		case op.Kind == check.KVPut && op.Result == check.Unknown:
			unknown = append(unknown, op)
		}
	}
	var evs []check.AuditEvent
	for _, key := range slices.Sorted(maps.Keys(t.keys)) {
		for _, ev := range t.keys[key] {
			if ev.Type == "put" && !explained[keyRev{key, ev.Revision}] {
				evs = append(evs, ev)
			}
		}
	}
	m := newMatching(len(unknown), len(evs), func(o, e int) bool { return t.couldPut(unknown[o], evs[e], c) })
	for e, ev := range evs {
		if !m.matchEvent(e) {
			problems = append(problems, fmt.Sprintf("key %q: the put at revision %d (session %q) matches no kv-put OK, and no Unknown kv-put could have made it",
				ev.Name, ev.Revision, ev.Session))
		}
	}
	return problems
}

// shows checks that the trail has the put op (a put or a read OK) shows:
// at its revision, with its version, created_revision and session.
func (t trail) shows(op check.Op, session string) []string {
	ev, ok := t.at[keyRev{op.Key, op.OutRevision}]
	switch {
	case !ok || ev.Type != "put":
		return []string{fmt.Sprintf("%s op %d: key %q at revision %d has no put event", op.Kind, op.ID, op.Key, op.OutRevision)}
	case ev.Version != op.OutVersion || ev.CreatedRevision != op.OutCreated || ev.Session != session:
		return []string{fmt.Sprintf("%s op %d: key %q at revision %d is version %d, created at %d, session %q; the trail's put says version %d, created at %d, session %q",
			op.Kind, op.ID, op.Key, op.OutRevision, op.OutVersion, op.OutCreated, session, ev.Version, ev.CreatedRevision, ev.Session)}
	}
	return nil
}

// couldPut reports whether op, an Unknown put, could have made ev: of its
// key, with its session, above what was seen before its call, after what
// its compare asked for, within its fence's hold.
func (t trail) couldPut(op check.Op, ev check.AuditEvent, c clock) bool {
	if op.Key != ev.Name || op.Session != ev.Session || ev.Revision <= c.before(op.Call).rev || !t.fenced(op, ev.Revision) {
		return false
	}
	return t.compared(op, ev)
}

// compared reports whether ev, a write of op's key, follows what op's
// compare asked for.
func (t trail) compared(op check.Op, ev check.AuditEvent) bool {
	if op.IfRevision == nil {
		return true
	}
	prev, ok := t.before(ev.Name, ev.Revision)
	if *op.IfRevision == 0 {
		return !ok || prev.Type == "delete"
	}
	return ok && prev.Type == "put" && prev.Revision == *op.IfRevision
}

// fenced reports whether a write of op at rev is within its fence's hold,
// if it has one.
func (t trail) fenced(op check.Op, rev int64) bool {
	if op.Lock == "" {
		return true
	}
	h := t.holds[check.LockHolder{Lock: op.Lock, Token: op.Token}]
	return h.acquired && rev > h.from && (!h.toKnown || rev < h.to)
}

// deletes matches the ops that deleted a key with the trail's deletes by
// a request: every acknowledged one to one of its own, then every event
// to an op, acknowledged or Unknown.
func (t trail) deletes(ops []check.Op, c clock) []string {
	var dels []check.Op // the OKs, then the Unknowns
	for _, r := range []check.Result{check.OK, check.Unknown} {
		for _, op := range ops {
			if op.Kind == check.KVDelete && op.Result == r {
				dels = append(dels, op)
			}
		}
	}
	var evs []check.AuditEvent
	for _, key := range slices.Sorted(maps.Keys(t.keys)) {
		for _, ev := range t.keys[key] {
			if ev.Type == "delete" && ev.Session == "" {
				evs = append(evs, ev)
			}
		}
	}
	m := newMatching(len(dels), len(evs), func(o, e int) bool { return t.couldDelete(dels[o], evs[e], c) })
	var problems []string
	for o, op := range dels {
		if op.Result == check.OK && !m.matchOp(o) {
			problems = append(problems, fmt.Sprintf("kv-delete op %d (key %q%s): no delete of the key in the trail fits it, above revision %d and at most %d",
				op.ID, op.Key, ifRevision(op), c.before(op.Call).rev, c.after(op.Return).rev))
		}
	}
	for e, ev := range evs {
		if m.opOf[e] < 0 && !m.matchEvent(e) {
			problems = append(problems, fmt.Sprintf("key %q: the delete at revision %d matches no kv-delete OK, and no Unknown kv-delete could have made it",
				ev.Name, ev.Revision))
		}
	}
	return problems
}

// couldDelete reports whether op could have made ev: of its key, above
// what was seen before its call and, acknowledged, at most what was seen
// after its return, after the put its compare asked for.
func (t trail) couldDelete(op check.Op, ev check.AuditEvent, c clock) bool {
	if op.Key != ev.Name || ev.Revision <= c.before(op.Call).rev {
		return false
	}
	if op.Result == check.OK && ev.Revision > c.after(op.Return).rev {
		return false
	}
	return t.compared(op, ev)
}

func ifRevision(op check.Op) string {
	if op.IfRevision == nil {
		return ""
	}
	return fmt.Sprintf(", if_revision %d", *op.IfRevision)
}
