package check

import (
	"cmp"
	"fmt"
)

// ResolvePermits returns ops with what the trail says of their permits,
// for CheckSemaphores, as ResolveCampaigns does for campaigns:
//
//   - An Unknown acquire whose owner no other acquire used either has an
//     acquired event under that owner, and is then an OK with the
//     event's token, still pending to the end of the history, or has
//     none, and then never took effect (Failed).
//   - An acquire OK's permit is mortal unless the trail ends it as
//     released: only then may SemaphoreModel let it vanish unseen.
//   - A refusal is strict when it did not wait and no waiting acquire of
//     its semaphore, nor one with an at-least window (answered or not,
//     but not Failed), was called before it returned: its semaphore's
//     queue was empty and no window kept a seat all along, so the refusal
//     says every permit was held.
//   - The holders a refusal's answer shows were read after the refusal,
//     in the same request: each such read becomes a sem-get OK of its
//     own over the refusal's interval (ID past every op's), the refusal
//     itself staying as it was.
//
// events must be the settled trail; CheckSemaphoreAudit checks it against
// the ops on its own.
func ResolvePermits(ops []Op, events []AuditEvent) []Op {
	return resolveHolds(semaphoreHolds, ops, events)
}

// CheckSemaphoreAudit checks the semaphores' audit trail against what the
// clients saw. events must be the whole /v1/history, read when no permit
// is held any more, and the semaphores must be new to the cluster. Per
// semaphore: acquired events carry the limit the ops asked for and tokens
// strictly increasing in trail order; every permit has one acquired and
// one end event; replaying the trail, never more than the limit are held
// at once; every acquire OK has its acquired event (token, owner), every
// release OK its released event; no refused acquire's owner (when only
// one acquire used it) is granted; and no semaphore shows more grants
// than its OKs and Unknown acquires can explain.
func CheckSemaphoreAudit(ops []Op, events []AuditEvent) []string {
	t := readHoldTrail(semaphoreHolds, events)
	limits := map[string]int{}
	for _, op := range ops {
		if op.Kind == SemAcquire {
			limits[op.Semaphore] = op.Limit
		}
	}
	var problems []string
	for _, name := range sortedNames(t.grants) {
		problems = append(problems, grantOrder(name, t.grants[name], limits[name])...)
		problems = append(problems, t.overLimit(name, limits[name])...)
	}
	problems = append(problems, t.exactlyOnce("semaphore", nil)...)
	return append(problems, t.matchOps(semaphoreHolds, ops)...)
}

// grantOrder checks one semaphore's acquired events, in trail order.
func grantOrder(name string, grants []AuditEvent, limit int) []string {
	var problems []string
	for i, ev := range grants {
		if limit != 0 && ev.Limit != limit {
			problems = append(problems, fmt.Sprintf("semaphore %q token %d: acquired under limit %d, but the clients asked for %d", name, ev.Token, ev.Limit, limit))
		}
		if i > 0 && ev.Token <= grants[i-1].Token {
			problems = append(problems, fmt.Sprintf("semaphore %q: token %d is granted after token %d", name, ev.Token, grants[i-1].Token))
		}
	}
	return problems
}

// overLimit replays one semaphore's trail: at each grant, the permits
// granted at or before it and not yet ended must be at most limit (the
// ops' limit, else the grant's own). A release and the grant it hands
// its seat to share a revision; the release ends first.
func (t holdTrail) overLimit(name string, limit int) []string {
	type span struct{ token, from, to int64 }
	var spans []span
	seen := map[int64]bool{} // a token acquired twice is CheckSemaphoreAudit's report, held once here
	for _, ev := range t.grants[name] {
		if !seen[ev.Token] {
			seen[ev.Token] = true
			spans = append(spans, span{ev.Token, ev.Revision, endRevision(ev.Revision, t.ends[lockToken{name, ev.Token}])})
		}
	}
	var problems []string
	for _, g := range t.grants[name] {
		lim := cmp.Or(limit, g.Limit)
		var held []int64
		for _, s := range spans {
			if s.from <= g.Revision && s.to > g.Revision {
				held = append(held, s.token)
			}
		}
		if len(held) > lim {
			problems = append(problems, fmt.Sprintf("semaphore %q: after the grant of token %d at revision %d, %d permits are held (tokens %v), over its limit %d",
				name, g.Token, g.Revision, len(held), held, lim))
		}
	}
	return problems
}
