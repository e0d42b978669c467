package chaos

import (
	"fmt"
	"math"
	"slices"
	"time"
)

type rwOwner struct{ rwlock, owner string }

// ResolveRWLocks returns ops with what the trail says of their holds, for
// CheckRWLocks, as ResolvePermits does for permits:
//
//   - An Unknown acquire whose owner no other acquire used either has an
//     acquired event under that owner, and is then an OK with the
//     event's token, still pending to the end of the history, or has
//     none, and then never took effect (Failed).
//   - An acquire OK's hold is mortal unless the trail ends it as
//     released.
//   - A refusal is strict when it did not wait and no waiting acquire of
//     its rwlock (answered or not, but not Failed) was called before it
//     returned: the queue was empty all along, so something held was in
//     its way.
//   - The holders a refusal's answer shows were read after the refusal,
//     in the same request: each such read becomes an rw-get OK of its
//     own over the refusal's interval (ID past every op's).
//
// events must be the settled trail; CheckRWLockAudit checks it against
// the ops on its own.
func ResolveRWLocks(ops []Op, events []AuditEvent) []Op {
	var end int64
	uses := map[rwOwner]int{}
	firstWait := map[string]int64{}
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
		if op.Kind != RWAcquire {
			continue
		}
		uses[rwOwner{op.RWLock, op.Owner}]++
		if op.Wait != "" && op.Result != Failed {
			if at, ok := firstWait[op.RWLock]; !ok || op.Call < at {
				firstWait[op.RWLock] = op.Call
			}
		}
	}
	t := readRWTrail(events)
	out := slices.Clone(ops)
	var reads []Op
	for i, op := range out {
		if op.Kind != RWAcquire {
			continue
		}
		k := rwOwner{op.RWLock, op.Owner}
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
			ends := t.ends[lockToken{op.RWLock, out[i].OutToken}]
			out[i].mortal = len(ends) != 1 || ends[0].Type != "released"
		case Rejected:
			at, waited := firstWait[op.RWLock]
			out[i].strict = op.Wait == "" && (!waited || op.Return < at)
			if len(op.OutTokens) > 0 {
				reads = append(reads, Op{ID: len(ops) + len(reads), Client: op.Client, Node: op.Node, Kind: RWGet, RWLock: op.RWLock,
					Call: op.Call, Return: op.Return, Result: OK, OutTokens: op.OutTokens, OutMode: op.OutMode,
					Err: fmt.Sprintf("the holders of refused op %d", op.ID)})
			}
		}
	}
	return append(out, reads...)
}

// rwTrail is the read/write lock events of an audit trail.
type rwTrail struct {
	acquired map[lockToken][]AuditEvent
	ends     map[lockToken][]AuditEvent
	byOwner  map[rwOwner]AuditEvent
	// grants is each rwlock's acquired events in trail order.
	grants map[string][]AuditEvent
}

func readRWTrail(events []AuditEvent) rwTrail {
	t := rwTrail{
		acquired: map[lockToken][]AuditEvent{}, ends: map[lockToken][]AuditEvent{},
		byOwner: map[rwOwner]AuditEvent{}, grants: map[string][]AuditEvent{},
	}
	for _, ev := range events {
		if !ev.isRWLock() {
			continue
		}
		k := lockToken{ev.Name, ev.Token}
		switch {
		case ev.Type == "acquired":
			t.acquired[k] = append(t.acquired[k], ev)
			t.byOwner[rwOwner{ev.Name, ev.Owner}] = ev
			t.grants[ev.Name] = append(t.grants[ev.Name], ev)
		case slices.Contains(endEventTypes, ev.Type):
			t.ends[k] = append(t.ends[k], ev)
		}
	}
	return t
}

// CheckRWLockAudit checks the read/write locks' audit trail against what
// the clients saw. events must be the whole /v1/history, read when no
// hold is held any more, and the rwlocks must be new to the cluster. Per
// rwlock: every event has a mode, read or write; acquired events carry
// tokens strictly increasing in trail order; every hold has one acquired
// and one end event; replaying the trail (each expiry at the revision
// etcd deleted the hold), no write hold is ever held beside another hold,
// and every write grant's token exceeds every token of a hold that ended
// before it; every acquire OK has its acquired event (token, owner,
// mode), every release OK its released event; no refused acquire's owner
// (when only one acquire used it) is granted; no rwlock shows more grants
// than its OKs and Unknown acquires can explain; and the queue was served
// first come, first served as far as it can be told (fifo).
func CheckRWLockAudit(ops []Op, events []AuditEvent) []string {
	t := readRWTrail(events)
	var problems []string
	for _, name := range sortedNames(t.grants) {
		problems = append(problems, rwGrantOrder(name, t.grants[name])...)
		problems = append(problems, t.exclusion(name)...)
	}
	for _, k := range sortedLockTokens(t.acquired) {
		if n := len(t.acquired[k]); n > 1 {
			problems = append(problems, fmt.Sprintf("rwlock %q token %d: %d acquired events", k.lock, k.token, n))
		}
		switch n := len(t.ends[k]); {
		case n == 0:
			problems = append(problems, fmt.Sprintf("rwlock %q token %d: acquired but never ended", k.lock, k.token))
		case n > 1:
			problems = append(problems, fmt.Sprintf("rwlock %q token %d: %d end events (%s)", k.lock, k.token, n, joinEventTypes(t.ends[k])))
		}
		for _, ev := range t.ends[k] {
			if ev.Mode != t.acquired[k][0].Mode {
				problems = append(problems, fmt.Sprintf("rwlock %q token %d: acquired in mode %q, but %s in mode %q", k.lock, k.token, t.acquired[k][0].Mode, ev.Type, ev.Mode))
			}
		}
	}
	for _, k := range sortedLockTokens(t.ends) {
		if len(t.acquired[k]) == 0 {
			problems = append(problems, fmt.Sprintf("rwlock %q token %d: %s without an acquired event", k.lock, k.token, joinEventTypes(t.ends[k])))
		}
	}
	problems = append(problems, t.matchOps(ops)...)
	return append(problems, t.fifo(ops)...)
}

// rwGrantOrder checks one rwlock's acquired events, in trail order.
func rwGrantOrder(name string, grants []AuditEvent) []string {
	var problems []string
	for i, ev := range grants {
		if ev.Mode != "read" && ev.Mode != "write" {
			problems = append(problems, fmt.Sprintf("rwlock %q token %d: acquired in mode %q", name, ev.Token, ev.Mode))
		}
		if i > 0 && ev.Token <= grants[i-1].Token {
			problems = append(problems, fmt.Sprintf("rwlock %q: token %d is granted after token %d", name, ev.Token, grants[i-1].Token))
		}
	}
	return problems
}

// rwSpan is a hold as the trail replays it: held from its grant's
// revision until (not at) its end's (endRevision).
type rwSpan struct {
	token, from, to int64
	write           bool
}

// exclusion replays one rwlock's trail: at each grant, the holds granted
// at or before it and not yet ended must be none for a write grant, and
// no write hold for a read grant (each overlap begins at some grant, so
// this finds every one); and a write grant's token must exceed the token
// of every hold ended at or before its revision. A release and the grant
// it hands the lock to share a revision; the release ends first.
func (t rwTrail) exclusion(name string) []string {
	var spans []rwSpan
	seen := map[int64]bool{}
	for _, ev := range t.grants[name] {
		if !seen[ev.Token] {
			seen[ev.Token] = true
			spans = append(spans, rwSpan{ev.Token, ev.Revision, endRevision(ev.Revision, t.ends[lockToken{name, ev.Token}]), ev.Mode == "write"})
		}
	}
	var problems []string
	for _, g := range spans {
		for _, s := range spans {
			switch {
			case s.token == g.token:
			case s.from <= g.from && s.to > g.from && (g.write || s.write):
				problems = append(problems, fmt.Sprintf("rwlock %q: the %s grant of token %d at revision %d came while the %s hold of token %d (revisions %d to %s) was held",
					name, rwMode(g.write), g.token, g.from, rwMode(s.write), s.token, s.from, endString(s.to)))
			case g.write && s.to <= g.from && s.token >= g.token:
				problems = append(problems, fmt.Sprintf("rwlock %q: the write grant of token %d at revision %d is not above token %d of a hold that ended at revision %d",
					name, g.token, g.from, s.token, s.to))
			}
		}
	}
	return problems
}

func rwMode(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

func endString(rev int64) string {
	if rev == math.MaxInt64 {
		return "the end"
	}
	return fmt.Sprint(rev)
}

// matchOps checks the ops that changed an rwlock against the trail.
func (t rwTrail) matchOps(ops []Op) []string {
	var problems []string
	explained := map[lockToken]bool{}
	unknown := map[string]int{}
	uses := map[rwOwner]int{}
	refused := map[rwOwner]Op{}
	for _, op := range ops {
		k := lockToken{op.RWLock, op.Token}
		switch {
		case op.Kind == RWAcquire:
			o := rwOwner{op.RWLock, op.Owner}
			uses[o]++
			switch op.Result {
			case Unknown:
				unknown[op.RWLock]++
			case Rejected, Failed:
				refused[o] = op
			case OK:
				k.token = op.OutToken
				explained[k] = true
				evs := t.acquired[k]
				switch {
				case len(evs) == 0:
					problems = append(problems, fmt.Sprintf("rw-acquire op %d: rwlock %q token %d has no acquired event", op.ID, op.RWLock, op.OutToken))
				case op.Owner != "" && evs[0].Owner != op.Owner:
					problems = append(problems, fmt.Sprintf("rw-acquire op %d: rwlock %q token %d acquired by %q, but the audit says %q", op.ID, op.RWLock, op.OutToken, op.Owner, evs[0].Owner))
				case evs[0].Mode != op.Mode:
					problems = append(problems, fmt.Sprintf("rw-acquire op %d: rwlock %q token %d acquired in mode %q, but the audit says %q", op.ID, op.RWLock, op.OutToken, op.Mode, evs[0].Mode))
				}
			}
		case op.Kind == RWRelease && op.Result == OK:
			if !slices.ContainsFunc(t.ends[k], func(ev AuditEvent) bool { return ev.Type == "released" }) {
				problems = append(problems, fmt.Sprintf("rw-release op %d: rwlock %q token %d has no released event (ends: %s)", op.ID, op.RWLock, op.Token, joinEventTypes(t.ends[k])))
			}
		}
	}
	phantoms := map[string][]int64{}
	for _, k := range sortedLockTokens(t.acquired) {
		if explained[k] {
			continue
		}
		ev := t.acquired[k][0]
		o := rwOwner{k.lock, ev.Owner}
		if op, ok := refused[o]; ok && uses[o] == 1 {
			problems = append(problems, fmt.Sprintf("rw-acquire op %d (client %d, node %d) was refused (%s %d %s after %s, %s, wait %q), but the trail shows its owner %q granted a %s hold of %q with token %d",
				op.ID, op.Client, op.Node, op.Result, op.Status, op.Code, time.Duration(op.Return-op.Call).Round(time.Millisecond), op.Mode, op.Wait, ev.Owner, ev.Mode, k.lock, k.token))
			continue
		}
		phantoms[k.lock] = append(phantoms[k.lock], k.token)
	}
	for _, name := range sortedNames(phantoms) {
		if n := len(phantoms[name]); n > unknown[name] {
			problems = append(problems, fmt.Sprintf("rwlock %q: %d acquired events (tokens %v) match no acquire OK, but only %d acquires were Unknown",
				name, n, phantoms[name], unknown[name]))
		}
	}
	return problems
}

// fifoSlack bounds how long after an acquirer reads its clock for
// queued_at its queue entry can commit in this suite: its node frozen
// for up to 2×TTL+1 s (7 s at the workload's 3 s TTL) in between, then
// baton's 5 s bound on the etcd call, with a margin. queued_at is read
// before the txn that puts the entry, at a distance the trail does not
// bound, so the trail alone orders two entries only when their
// queued_at are further apart.
const fifoSlack = 15 * time.Second

// fifo checks that each rwlock's queue was served first come, first
// served, where the history and the trail can tell:
//
//   - A read (rw-get OK) that shows W waiting proves W's queue entry was
//     in the queue when the read returned. An acquirer puts one entry at
//     most (it queues again only when its first put was refused) and is
//     granted only from it, so if the trail grants W, its entry stayed in
//     the queue until that grant. An acquire whose op was called after
//     the read returned came after W's entry, so the trail must not grant
//     it before W (a direct acquire never passes a writer waiting, a
//     writer's never passes anyone waiting), unless both are reads: the
//     readers between two writers in line are let in together, in no
//     order among themselves.
//   - From the trail alone: a hold whose queued_at is more than
//     fifoSlack after another's joined the queue after it, and must not
//     be granted before it, unless both are reads. This catches only
//     gross reorderings: what the workload's short waits could show lies
//     within the slack.
//
// Neither needs the clients' owners to be unique, but both are skipped
// for an owner used twice on one rwlock.
func (t rwTrail) fifo(ops []Op) []string {
	uses := map[rwOwner]int{}
	called := map[rwOwner]Op{}
	for _, op := range ops {
		if op.Kind == RWAcquire {
			o := rwOwner{op.RWLock, op.Owner}
			uses[o]++
			called[o] = op
		}
	}
	var problems []string
	for _, op := range ops {
		if op.Kind != RWGet || op.Result != OK {
			continue
		}
		for _, w := range op.OutWaiters {
			wo := rwOwner{op.RWLock, w}
			wev, granted := t.byOwner[wo]
			if !granted || uses[wo] > 1 {
				continue
			}
			for _, ev := range t.grants[op.RWLock] {
				bo := rwOwner{op.RWLock, ev.Owner}
				b, ok := called[bo]
				if ev.Revision >= wev.Revision || !ok || uses[bo] > 1 || b.Call <= op.Return || bothReads(wev.Mode, ev.Mode) {
					continue
				}
				problems = append(problems, fmt.Sprintf("rwlock %q: rw-get op %d showed %q waiting at %s; rw-acquire op %d (%s, owner %q) called after, at %s, was granted token %d at revision %d, before %q's token %d at revision %d",
					op.RWLock, op.ID, w, time.Duration(op.Return), b.ID, b.Mode, ev.Owner, time.Duration(b.Call), ev.Token, ev.Revision, w, wev.Token, wev.Revision))
			}
		}
	}
	for _, name := range sortedNames(t.grants) {
		problems = append(problems, queuedOrder(name, t.grants[name])...)
	}
	return problems
}

// bothReads reports whether two holds of modes a and b are both reads,
// which FIFO does not order among themselves.
func bothReads(a, b string) bool { return a == "read" && b == "read" }

// queuedOrder is fifo's check from the trail alone, over one rwlock's
// acquired events: in revision order, no grant's queued_at may be more
// than fifoSlack before that of a hold granted earlier, unless both are
// reads.
func queuedOrder(name string, grants []AuditEvent) []string {
	byRev := slices.Clone(grants)
	slices.SortStableFunc(byRev, func(a, b AuditEvent) int { return int(a.Revision - b.Revision) })
	var problems []string
	// The earlier grants with the latest queued_at: of any mode, and of
	// a write (all a read is ordered against).
	var latest, latestWrite *AuditEvent
	for i, ev := range byRev {
		if ev.QueuedAt == nil {
			continue
		}
		before := latest
		if ev.Mode == "read" {
			before = latestWrite
		}
		if before != nil && before.QueuedAt.Sub(*ev.QueuedAt) > fifoSlack {
			problems = append(problems, fmt.Sprintf("rwlock %q: token %d (owner %q) queued at %s, %s before token %d (owner %q) queued at %s, but was granted after it, at revision %d > %d",
				name, ev.Token, ev.Owner, ev.QueuedAt.Format(time.RFC3339Nano), before.QueuedAt.Sub(*ev.QueuedAt).Round(time.Millisecond),
				before.Token, before.Owner, before.QueuedAt.Format(time.RFC3339Nano), ev.Revision, before.Revision))
		}
		if latest == nil || ev.QueuedAt.After(*latest.QueuedAt) {
			latest = &byRev[i]
		}
		if ev.Mode != "read" && (latestWrite == nil || ev.QueuedAt.After(*latestWrite.QueuedAt)) {
			latestWrite = &byRev[i]
		}
	}
	return problems
}
