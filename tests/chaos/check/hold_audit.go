package check

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// holdOwner is an owner's use of the primitive name.
type holdOwner struct{ name, owner string }

// holdKind is what the audit parts semaphores and read/write locks share
// need to know of one of them: its ops, its events and the words of its
// problems. The logic over it is the same for both; only the mode an
// rwlock hold has and a permit has not shows in the hooks.
type holdKind struct {
	noun                  string // "semaphore", "rwlock"
	acquire, release, get Kind
	// of is the primitive an op names.
	of      func(Op) string
	isEvent func(AuditEvent) bool
	// mismatch is what the acquired event ev of an acquire OK says
	// against the op beyond token and owner, "" when nothing.
	mismatch func(op Op, ev AuditEvent) string
	// asked is what a refused acquire asked for beyond its wait (", "
	// first), granted what the trail gave its owner, in a problem's words.
	asked   func(Op) string
	granted func(AuditEvent) string
}

var semaphoreHolds = holdKind{
	noun: "semaphore", acquire: SemAcquire, release: SemRelease, get: SemGet,
	of:       func(op Op) string { return op.Semaphore },
	isEvent:  AuditEvent.isSemaphore,
	mismatch: func(Op, AuditEvent) string { return "" },
	asked:    func(Op) string { return "" },
	granted:  func(AuditEvent) string { return "a permit" },
}

var rwHolds = holdKind{
	noun: "rwlock", acquire: RWAcquire, release: RWRelease, get: RWGet,
	of:      func(op Op) string { return op.RWLock },
	isEvent: AuditEvent.isRWLock,
	mismatch: func(op Op, ev AuditEvent) string {
		if ev.Mode != op.Mode {
			return fmt.Sprintf("acquired in mode %q, but the audit says %q", op.Mode, ev.Mode)
		}
		return ""
	},
	asked:   func(op Op) string { return ", " + op.Mode },
	granted: func(ev AuditEvent) string { return "a " + ev.Mode + " hold" },
}

// resolveHolds is ResolvePermits and ResolveRWLocks over the ops and
// events of kind k.
func resolveHolds(k holdKind, ops []Op, events []AuditEvent) []Op {
	var end int64
	uses := map[holdOwner]int{}
	firstWait := map[string]int64{}
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
		if op.Kind != k.acquire {
			continue
		}
		name := k.of(op)
		uses[holdOwner{name, op.Owner}]++
		// An acquire with an at-least window keeps its seat after it
		// ends, so a refusal after it says no more than one behind a
		// waiter does.
		if (op.Wait != "" || op.MinHold != "") && op.Result != Failed {
			if at, ok := firstWait[name]; !ok || op.Call < at {
				firstWait[name] = op.Call
			}
		}
	}
	t := readHoldTrail(k, events)
	out := slices.Clone(ops)
	var reads []Op
	for i, op := range out {
		if op.Kind != k.acquire {
			continue
		}
		name := k.of(op)
		o := holdOwner{name, op.Owner}
		if op.Result == Unknown && uses[o] == 1 {
			ev, ok := t.byOwner[o]
			if !ok {
				out[i].Result, out[i].Err = Failed, "Unknown, and never acquired: "+op.Err
				continue
			}
			out[i].Result, out[i].Err = OK, "Unknown, and acquired by the trail: "+op.Err
			out[i].OutToken, out[i].Return = ev.Token, end+1
		}
		switch out[i].Result {
		case OK:
			ends := t.ends[lockToken{name, out[i].OutToken}]
			out[i].mortal = len(ends) != 1 || ends[0].Type != "released"
		case Rejected:
			at, waited := firstWait[name]
			out[i].strict = op.Wait == "" && (!waited || op.Return < at)
			if len(op.OutTokens) > 0 {
				// Only the field of k's primitive is set in op: copying
				// both keeps the read on it.
				reads = append(reads, Op{ID: len(ops) + len(reads), Client: op.Client, Node: op.Node, Kind: k.get,
					Semaphore: op.Semaphore, RWLock: op.RWLock,
					Call: op.Call, Return: op.Return, Result: OK, OutTokens: op.OutTokens, OutLimit: op.OutLimit, OutMode: op.OutMode,
					Err: fmt.Sprintf("the holders of refused op %d", op.ID)})
			}
		}
	}
	return append(out, reads...)
}

// holdTrail is the events of one kind of hold in an audit trail.
type holdTrail struct {
	acquired map[lockToken][]AuditEvent
	ends     map[lockToken][]AuditEvent
	byOwner  map[holdOwner]AuditEvent
	// grants is each primitive's acquired events in trail order.
	grants map[string][]AuditEvent
}

func readHoldTrail(k holdKind, events []AuditEvent) holdTrail {
	t := holdTrail{
		acquired: map[lockToken][]AuditEvent{}, ends: map[lockToken][]AuditEvent{},
		byOwner: map[holdOwner]AuditEvent{}, grants: map[string][]AuditEvent{},
	}
	for _, ev := range events {
		if !k.isEvent(ev) {
			continue
		}
		tk := lockToken{ev.Name, ev.Token}
		switch {
		case ev.Type == "acquired":
			t.acquired[tk] = append(t.acquired[tk], ev)
			t.byOwner[holdOwner{ev.Name, ev.Owner}] = ev
			t.grants[ev.Name] = append(t.grants[ev.Name], ev)
		case slices.Contains(endEventTypes, ev.Type):
			t.ends[tk] = append(t.ends[tk], ev)
		}
	}
	return t
}

// exactlyOnce checks that every hold has one acquired and one end event,
// and that no end event lacks its acquired event. each, when not nil,
// adds its own problems of each acquired hold after those.
func (t holdTrail) exactlyOnce(noun string, each func(lockToken) []string) []string {
	var problems []string
	for _, k := range sortedLockTokens(t.acquired) {
		if n := len(t.acquired[k]); n > 1 {
			problems = append(problems, fmt.Sprintf("%s %q token %d: %d acquired events", noun, k.lock, k.token, n))
		}
		switch n := len(t.ends[k]); {
		case n == 0:
			problems = append(problems, fmt.Sprintf("%s %q token %d: acquired but never ended", noun, k.lock, k.token))
		case n > 1:
			problems = append(problems, fmt.Sprintf("%s %q token %d: %d end events (%s)", noun, k.lock, k.token, n, joinEventTypes(t.ends[k])))
		}
		if each != nil {
			problems = append(problems, each(k)...)
		}
	}
	for _, k := range sortedLockTokens(t.ends) {
		if len(t.acquired[k]) == 0 {
			problems = append(problems, fmt.Sprintf("%s %q token %d: %s without an acquired event", noun, k.lock, k.token, joinEventTypes(t.ends[k])))
		}
	}
	return problems
}

// endRevision is the revision at which a hold whose end events are ends
// stopped being held: a release's or revoke's own, which ended it in its
// txn, or for an expiry the revision etcd deleted it at, which the
// recorder's detail names. An expiry that does not name it (one recorded
// by a reconcile) may have happened at any revision after the grant, so
// it counts as ended at once: a replay then never counts it against
// another grant. A hold without an end is held to the end of the trail.
func endRevision(acquired int64, ends []AuditEvent) int64 {
	if len(ends) == 0 {
		return math.MaxInt64
	}
	if rev, ok := ends[0].EndedAt(); ok {
		return rev
	}
	return acquired
}

// EndedAt is the revision the end event ev ended its hold at, as
// endRevision reads it; ok is false for an expiry that does not name it.
func (ev AuditEvent) EndedAt() (rev int64, ok bool) {
	if ev.Type != "expired" && ev.Type != "session_expired" {
		return ev.Revision, true
	}
	const mark = "deleted the lock at revision "
	if _, rest, found := strings.Cut(ev.Detail, mark); found {
		if rev, err := strconv.ParseInt(strings.Fields(rest + " ")[0], 10, 64); err == nil {
			return rev, true
		}
	}
	return 0, false
}

// matchOps checks the ops of kind k that changed a hold against the
// trail: every acquire OK has its acquired event (token, owner, and what
// k.mismatch checks), every release OK its released event; no refused
// acquire's owner (when only one acquire used it) is granted; and no
// primitive shows more grants than its OKs and Unknown acquires can
// explain.
func (t holdTrail) matchOps(k holdKind, ops []Op) []string {
	var problems []string
	explained := map[lockToken]bool{}
	unknown := map[string]int{}
	uses := map[holdOwner]int{}
	refused := map[holdOwner]Op{}
	for _, op := range ops {
		name := k.of(op)
		tk := lockToken{name, op.Token}
		switch {
		case op.Kind == k.acquire:
			o := holdOwner{name, op.Owner}
			uses[o]++
			switch op.Result {
			case Unknown:
				unknown[name]++
			case Rejected, Failed:
				refused[o] = op
			case OK:
				tk.token = op.OutToken
				explained[tk] = true
				problems = append(problems, t.acquiredAs(k, op)...)
			}
		case op.Kind == k.release && op.Result == OK:
			if !slices.ContainsFunc(t.ends[tk], func(ev AuditEvent) bool { return ev.Type == "released" }) {
				problems = append(problems, fmt.Sprintf("%s op %d: %s %q token %d has no released event (ends: %s)", op.Kind, op.ID, k.noun, name, op.Token, joinEventTypes(t.ends[tk])))
			}
		}
	}
	phantoms := map[string][]int64{}
	for _, tk := range sortedLockTokens(t.acquired) {
		if explained[tk] {
			continue
		}
		ev := t.acquired[tk][0]
		o := holdOwner{tk.lock, ev.Owner}
		if op, ok := refused[o]; ok && uses[o] == 1 {
			problems = append(problems, fmt.Sprintf("%s op %d (client %d, node %d) was refused (%s %d %s after %s%s, wait %q), but the trail shows its owner %q granted %s of %q with token %d",
				op.Kind, op.ID, op.Client, op.Node, op.Result, op.Status, op.Code, time.Duration(op.Return-op.Call).Round(time.Millisecond), k.asked(op), op.Wait, ev.Owner, k.granted(ev), tk.lock, tk.token))
			continue
		}
		phantoms[tk.lock] = append(phantoms[tk.lock], tk.token)
	}
	for _, name := range sortedNames(phantoms) {
		if n := len(phantoms[name]); n > unknown[name] {
			problems = append(problems, fmt.Sprintf("%s %q: %d acquired events (tokens %v) match no acquire OK, but only %d acquires were Unknown",
				k.noun, name, n, phantoms[name], unknown[name]))
		}
	}
	return problems
}

// acquiredAs checks the acquired event of the acquire OK op.
func (t holdTrail) acquiredAs(k holdKind, op Op) []string {
	name := k.of(op)
	evs := t.acquired[lockToken{name, op.OutToken}]
	var problem string
	switch {
	case len(evs) == 0:
		problem = "has no acquired event"
	case op.Owner != "" && evs[0].Owner != op.Owner:
		problem = fmt.Sprintf("acquired by %q, but the audit says %q", op.Owner, evs[0].Owner)
	default:
		problem = k.mismatch(op, evs[0])
	}
	if problem == "" {
		return nil
	}
	return []string{fmt.Sprintf("%s op %d: %s %q token %d %s", op.Kind, op.ID, k.noun, name, op.OutToken, problem)}
}

// describeAcquire reads like "sem-acquire s3-1 wait 1s → 4711†": the
// kind, what the acquire asked for (asked), its wait and its outcome,
// with a mortal grant (see ResolvePermits, ResolveRWLocks) marked † and a
// strict refusal marked so.
func describeAcquire(op Op, asked string) string {
	wait := ""
	if op.Wait != "" {
		wait = " wait " + op.Wait
	}
	out := describeResult(op)
	if op.Result == OK {
		out = fmt.Sprint(op.OutToken)
		if op.mortal {
			out += "†"
		}
	}
	if op.strict {
		out += " (strict)"
	}
	return fmt.Sprintf("%s %s%s → %s", op.Kind, asked, wait, out)
}
