package check

import (
	"fmt"
	"math"
	"slices"
	"time"
)

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
//     its rwlock, nor one with an at-least window (answered or not, but
//     not Failed), was called before it returned: the queue was empty
//     and no window kept anyone out all along, so something held was in
//     its way.
//   - The holders a refusal's answer shows were read after the refusal,
//     in the same request: each such read becomes an rw-get OK of its
//     own over the refusal's interval (ID past every op's).
//
// events must be the settled trail; CheckRWLockAudit checks it against
// the ops on its own.
func ResolveRWLocks(ops []Op, events []AuditEvent) []Op {
	return resolveHolds(rwHolds, ops, events)
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
	t := readHoldTrail(rwHolds, events)
	var problems []string
	for _, name := range sortedNames(t.grants) {
		problems = append(problems, rwGrantOrder(name, t.grants[name])...)
		problems = append(problems, t.exclusion(name)...)
	}
	problems = append(problems, t.exactlyOnce("rwlock", t.endModes)...)
	problems = append(problems, t.matchOps(rwHolds, ops)...)
	return append(problems, t.fifo(ops)...)
}

// endModes checks that the end events of the hold k are in its mode.
func (t holdTrail) endModes(k lockToken) []string {
	var problems []string
	for _, ev := range t.ends[k] {
		if ev.Mode != t.acquired[k][0].Mode {
			problems = append(problems, fmt.Sprintf("rwlock %q token %d: acquired in mode %q, but %s in mode %q", k.lock, k.token, t.acquired[k][0].Mode, ev.Type, ev.Mode))
		}
	}
	return problems
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
func (t holdTrail) exclusion(name string) []string {
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
func (t holdTrail) fifo(ops []Op) []string {
	uses := map[holdOwner]int{}
	called := map[holdOwner]Op{}
	for _, op := range ops {
		if op.Kind == RWAcquire {
			o := holdOwner{op.RWLock, op.Owner}
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
			wo := holdOwner{op.RWLock, w}
			wev, granted := t.byOwner[wo]
			if !granted || uses[wo] > 1 {
				continue
			}
			for _, ev := range t.grants[op.RWLock] {
				bo := holdOwner{op.RWLock, ev.Owner}
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

// WaitersGranted counts the waiters that the rw-get OKs of ops showed
// and that the trail events grants: the reads fifo orders later acquires
// after.
func WaitersGranted(ops []Op, events []AuditEvent) int {
	t := readHoldTrail(rwHolds, events)
	n := 0
	for _, op := range ops {
		if op.Kind == RWGet && op.Result == OK {
			for _, w := range op.OutWaiters {
				if _, ok := t.byOwner[holdOwner{op.RWLock, w}]; ok {
					n++
				}
			}
		}
	}
	return n
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
