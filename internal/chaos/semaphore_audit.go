package chaos

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

type semaphoreOwner struct{ semaphore, owner string }

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
//     its semaphore (answered or not, but not Failed) was called before
//     it returned: its semaphore's queue was empty all along, so the
//     refusal says every permit was held.
//   - The holders a refusal's answer shows were read after the refusal,
//     in the same request: each such read becomes a sem-get OK of its
//     own over the refusal's interval (ID past every op's), the refusal
//     itself staying as it was.
//
// events must be the settled trail; CheckSemaphoreAudit checks it against
// the ops on its own.
func ResolvePermits(ops []Op, events []AuditEvent) []Op {
	var end int64
	uses := map[semaphoreOwner]int{}
	firstWait := map[string]int64{}
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
		if op.Kind != SemAcquire {
			continue
		}
		uses[semaphoreOwner{op.Semaphore, op.Owner}]++
		if op.Wait != "" && op.Result != Failed {
			if at, ok := firstWait[op.Semaphore]; !ok || op.Call < at {
				firstWait[op.Semaphore] = op.Call
			}
		}
	}
	t := readSemaphoreTrail(events)
	out := slices.Clone(ops)
	var reads []Op
	for i, op := range out {
		if op.Kind != SemAcquire {
			continue
		}
		k := semaphoreOwner{op.Semaphore, op.Owner}
		if op.Result == Unknown && uses[k] == 1 {
			ev, ok := t.byOwner[k]
			if !ok {
				out[i].Result, out[i].Err = Failed, "Unknown, and never acquired: "+op.Err
				continue
			}
			out[i].Result, out[i].Err = OK, "Unknown, and acquired by the trail: "+op.Err
			out[i].OutToken, out[i].Return = ev.Token, end+1
		}
		switch out[i].Result {
		case OK:
			ends := t.ends[lockToken{op.Semaphore, out[i].OutToken}]
			out[i].mortal = len(ends) != 1 || ends[0].Type != "released"
		case Rejected:
			at, waited := firstWait[op.Semaphore]
			out[i].strict = op.Wait == "" && (!waited || op.Return < at)
			if len(op.OutTokens) > 0 {
				reads = append(reads, Op{ID: len(ops) + len(reads), Client: op.Client, Node: op.Node, Kind: SemGet, Semaphore: op.Semaphore,
					Call: op.Call, Return: op.Return, Result: OK, OutTokens: op.OutTokens, OutLimit: op.OutLimit,
					Err: fmt.Sprintf("the holders of refused op %d", op.ID)})
			}
		}
	}
	return append(out, reads...)
}

// semaphoreTrail is the semaphore events of an audit trail.
type semaphoreTrail struct {
	acquired map[lockToken][]AuditEvent
	ends     map[lockToken][]AuditEvent
	byOwner  map[semaphoreOwner]AuditEvent
	// grants is each semaphore's acquired events in trail order.
	grants map[string][]AuditEvent
}

func readSemaphoreTrail(events []AuditEvent) semaphoreTrail {
	t := semaphoreTrail{
		acquired: map[lockToken][]AuditEvent{}, ends: map[lockToken][]AuditEvent{},
		byOwner: map[semaphoreOwner]AuditEvent{}, grants: map[string][]AuditEvent{},
	}
	for _, ev := range events {
		if !ev.isSemaphore() {
			continue
		}
		k := lockToken{ev.Name, ev.Token}
		switch {
		case ev.Type == "acquired":
			t.acquired[k] = append(t.acquired[k], ev)
			t.byOwner[semaphoreOwner{ev.Name, ev.Owner}] = ev
			t.grants[ev.Name] = append(t.grants[ev.Name], ev)
		case slices.Contains(endEventTypes, ev.Type):
			t.ends[k] = append(t.ends[k], ev)
		}
	}
	return t
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
	t := readSemaphoreTrail(events)
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
	for _, k := range sortedLockTokens(t.acquired) {
		if n := len(t.acquired[k]); n > 1 {
			problems = append(problems, fmt.Sprintf("semaphore %q token %d: %d acquired events", k.lock, k.token, n))
		}
		switch n := len(t.ends[k]); {
		case n == 0:
			problems = append(problems, fmt.Sprintf("semaphore %q token %d: acquired but never ended", k.lock, k.token))
		case n > 1:
			problems = append(problems, fmt.Sprintf("semaphore %q token %d: %d end events (%s)", k.lock, k.token, n, joinEventTypes(t.ends[k])))
		}
	}
	for _, k := range sortedLockTokens(t.ends) {
		if len(t.acquired[k]) == 0 {
			problems = append(problems, fmt.Sprintf("semaphore %q token %d: %s without an acquired event", k.lock, k.token, joinEventTypes(t.ends[k])))
		}
	}
	return append(problems, t.matchOps(ops)...)
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

// endRevision is the revision at which a permit whose end events are
// ends stopped being held: a release's or revoke's own, which ended it in
// its txn, or for an expiry the revision etcd deleted it at, which the
// recorder's detail names. An expiry that does not name it (one recorded
// by a reconcile) may have happened at any revision after the grant, so
// it counts as ended at once: the replay then never counts it against
// the limit. A permit without an end is held to the end of the trail.
func endRevision(acquired int64, ends []AuditEvent) int64 {
	if len(ends) == 0 {
		return math.MaxInt64
	}
	ev := ends[0]
	if ev.Type != "expired" && ev.Type != "session_expired" {
		return ev.Revision
	}
	const mark = "deleted the lock at revision "
	if _, rest, ok := strings.Cut(ev.Detail, mark); ok {
		if rev, err := strconv.ParseInt(strings.Fields(rest + " ")[0], 10, 64); err == nil {
			return rev
		}
	}
	return acquired
}

// overLimit replays one semaphore's trail: at each grant, the permits
// granted at or before it and not yet ended must be at most limit (the
// ops' limit, else the grant's own). A release and the grant it hands
// its seat to share a revision; the release ends first.
func (t semaphoreTrail) overLimit(name string, limit int) []string {
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

// matchOps checks the ops that changed a semaphore against the trail.
func (t semaphoreTrail) matchOps(ops []Op) []string {
	var problems []string
	explained := map[lockToken]bool{}
	unknown := map[string]int{}
	uses := map[semaphoreOwner]int{}
	refused := map[semaphoreOwner]Op{}
	for _, op := range ops {
		k := lockToken{op.Semaphore, op.Token}
		switch {
		case op.Kind == SemAcquire:
			o := semaphoreOwner{op.Semaphore, op.Owner}
			uses[o]++
			switch op.Result {
			case Unknown:
				unknown[op.Semaphore]++
			case Rejected, Failed:
				refused[o] = op
			case OK:
				k.token = op.OutToken
				explained[k] = true
				evs := t.acquired[k]
				if len(evs) == 0 {
					problems = append(problems, fmt.Sprintf("sem-acquire op %d: semaphore %q token %d has no acquired event", op.ID, op.Semaphore, op.OutToken))
				} else if op.Owner != "" && evs[0].Owner != op.Owner {
					problems = append(problems, fmt.Sprintf("sem-acquire op %d: semaphore %q token %d acquired by %q, but the audit says %q", op.ID, op.Semaphore, op.OutToken, op.Owner, evs[0].Owner))
				}
			}
		case op.Kind == SemRelease && op.Result == OK:
			if !slices.ContainsFunc(t.ends[k], func(ev AuditEvent) bool { return ev.Type == "released" }) {
				problems = append(problems, fmt.Sprintf("sem-release op %d: semaphore %q token %d has no released event (ends: %s)", op.ID, op.Semaphore, op.Token, joinEventTypes(t.ends[k])))
			}
		}
	}
	phantoms := map[string][]int64{}
	for _, k := range sortedLockTokens(t.acquired) {
		if explained[k] {
			continue
		}
		ev := t.acquired[k][0]
		o := semaphoreOwner{k.lock, ev.Owner}
		if op, ok := refused[o]; ok && uses[o] == 1 {
			problems = append(problems, fmt.Sprintf("sem-acquire op %d (client %d, node %d) was refused (%s %d %s after %s, wait %q), but the trail shows its owner %q granted a permit of %q with token %d",
				op.ID, op.Client, op.Node, op.Result, op.Status, op.Code, time.Duration(op.Return-op.Call).Round(time.Millisecond), op.Wait, ev.Owner, k.lock, k.token))
			continue
		}
		phantoms[k.lock] = append(phantoms[k.lock], k.token)
	}
	for _, name := range sortedNames(phantoms) {
		if n := len(phantoms[name]); n > unknown[name] {
			problems = append(problems, fmt.Sprintf("semaphore %q: %d acquired events (tokens %v) match no acquire OK, but only %d acquires were Unknown",
				name, n, phantoms[name], unknown[name]))
		}
	}
	return problems
}
