package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// setTrail is the lock events of an audit trail as CheckLockSetAudit
// reads them.
type setTrail struct {
	// holdTrail holds the set members' acquired and end events, by lock
	// and token (acquired, ends).
	holdTrail
	// grants are each set's members' acquired events, in trail order.
	grants map[setKey][]AuditEvent
	// holds are every lock hold's acquired event, a set member's or not,
	// by lock, and ends every lock hold's end events.
	holds map[string][]AuditEvent
	ends  map[lockToken][]AuditEvent
}

// setKey names a set's grant: its token and its names, in order, joined
// by commas. The token alone does not: grants batched into one txn share
// its revision.
type setKey struct {
	token int64
	set   string
}

func keyOf(ev AuditEvent) setKey { return setKey{ev.Token, strings.Join(ev.Set, ",")} }

func readSetTrail(events []AuditEvent) setTrail {
	t := setTrail{
		holdTrail: holdTrail{acquired: map[lockToken][]AuditEvent{}, ends: map[lockToken][]AuditEvent{}},
		grants:    map[setKey][]AuditEvent{}, holds: map[string][]AuditEvent{}, ends: map[lockToken][]AuditEvent{},
	}
	for _, ev := range events {
		if !ev.isLock() {
			continue
		}
		k := lockToken{ev.Lock, ev.Token}
		switch {
		case ev.Type == "acquired":
			t.holds[ev.Lock] = append(t.holds[ev.Lock], ev)
			if ev.isSetMember() {
				t.holdTrail.acquired[k] = append(t.holdTrail.acquired[k], ev)
				t.grants[keyOf(ev)] = append(t.grants[keyOf(ev)], ev)
			}
		case slices.Contains(endEventTypes, ev.Type):
			t.ends[k] = append(t.ends[k], ev)
			if ev.isSetMember() {
				t.holdTrail.ends[k] = append(t.holdTrail.ends[k], ev)
			}
		}
	}
	return t
}

// SetGrants counts the set grants of the trail events and the member
// holds they made: what CheckLockSetAudit reads as sets.
func SetGrants(events []AuditEvent) (grants, members int) {
	t := readSetTrail(events)
	for _, evs := range t.grants {
		members += len(evs)
	}
	return len(t.grants), members
}

// ResolveLockSets returns ops with what the trail says of the Unknown
// acquires of lock set pools, for CheckLockSets, as ResolvePermits does
// for permits: an Unknown set acquire (single acquire of a pool's lock)
// whose owner no other one used either has a set grant (an acquired
// event of that lock, not a set's) under that owner, and is then an OK
// with its token, still pending to the end of the history, or has none,
// and then never took effect (Failed). It spares the pool's one
// partition the search over every way each Unknown acquire could have
// gone. And each holder a refused set acquire's answer shows, read after
// the refusal in the same request, becomes a get OK of its own over the
// refusal's interval (ID past every op's). events must be the settled
// trail; CheckLockSetAudit checks it against the ops on its own.
func ResolveLockSets(ops []Op, events []AuditEvent) []Op {
	var end int64
	uses := map[holdOwner]int{}
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
		if op.OnLockSet() && (op.Kind == Acquire || op.Kind == SetAcquire) {
			uses[holdOwner{op.Name(), op.Owner}]++
		}
	}
	t := readSetTrail(events)
	granted := map[holdOwner]int64{}
	for name, evs := range t.holds {
		for _, ev := range evs {
			if len(ev.Set) == 0 {
				granted[holdOwner{name, ev.Owner}] = ev.Token
			}
		}
	}
	for k, evs := range t.grants {
		granted[holdOwner{k.set, evs[0].Owner}] = k.token
	}
	out := slices.Clone(ops)
	var reads []Op
	for i, op := range out {
		if op.Kind == SetAcquire && op.Result == Rejected {
			for _, h := range op.OutHolders {
				reads = append(reads, Op{ID: len(ops) + len(reads), Client: op.Client, Node: op.Node, Kind: Get, Lock: h.Lock, Pool: op.Pool,
					Call: op.Call, Return: op.Return, Result: OK, OutToken: h.Token,
					Err: fmt.Sprintf("a holder of refused op %d", op.ID)})
			}
		}
		o := holdOwner{op.Name(), op.Owner}
		if !op.OnLockSet() || (op.Kind != Acquire && op.Kind != SetAcquire) || op.Result != Unknown || uses[o] != 1 {
			continue
		}
		token, ok := granted[o]
		if !ok {
			out[i].Result, out[i].Err = Failed, "Unknown, and never acquired: "+op.Err
			continue
		}
		out[i].Result, out[i].Err = OK, "Unknown, and acquired by the trail: "+op.Err
		out[i].OutToken, out[i].Return = token, end+1
	}
	return append(out, reads...)
}

// CheckLockSetAudit checks the lock sets' audit trail against what the
// clients saw. events must be the whole /v1/history, read when nothing is
// held any more, and the pools' locks must be new to the cluster. Every
// set grant (the acquired events of one token that name a set) has one
// acquired event per member of its set, each naming that set, all at one
// revision equal to the token, under one owner; every member's hold
// ends exactly once, and the members of a set end together: the same end,
// at one revision (for an expiry, the revision etcd deleted the members
// at, when the recorder names it). Every set-acquire OK has its grant
// (its set, in its order, and its owner), every set-release OK a released
// end of each member; no refused set acquire's owner (when only one
// acquire used it) is granted, and no grant is left that neither an OK
// nor an Unknown acquire explains. And no two holds of a pool's lock, a
// set's or a single lock's, overlap in the trail.
func CheckLockSetAudit(ops []Op, events []AuditEvent) []string {
	t := readSetTrail(events)
	pool := map[string]bool{}
	for _, op := range ops {
		if op.OnLockSet() {
			pool[op.Lock] = true
			for _, n := range op.Set {
				pool[n] = true
			}
		}
	}
	delete(pool, "")
	problems := t.exactlyOnce("set member", nil)
	for _, k := range t.sortedGrants() {
		if !slices.ContainsFunc(t.grants[k][0].Set, func(n string) bool { return pool[n] }) {
			continue // a set the run never touched is not its business
		}
		problems = append(problems, t.whole(k)...)
		problems = append(problems, t.together(k)...)
	}
	problems = append(problems, t.matchSetOps(ops, pool)...)
	for _, name := range sortedNames(pool) {
		problems = append(problems, t.overlaps(name)...)
	}
	return problems
}

// whole checks the set grant k: every member acquired, and nothing else,
// at the token's revision, for one owner.
func (t setTrail) whole(k setKey) []string {
	evs := t.grants[k]
	first := evs[0]
	label := fmt.Sprintf("lock set %v token %d", first.Set, k.token)
	var problems []string
	var at []string
	split := false
	for _, ev := range evs {
		at = append(at, fmt.Sprintf("%s at %d", ev.Lock, ev.Revision))
		split = split || ev.Revision != k.token
		switch {
		case !slices.Contains(first.Set, ev.Lock):
			problems = append(problems, fmt.Sprintf("%s: %q is acquired with it, but is not in its set", label, ev.Lock))
		case ev.Owner != first.Owner:
			problems = append(problems, fmt.Sprintf("%s: %q is acquired by %q, %q by %q", label, ev.Lock, ev.Owner, first.Lock, first.Owner))
		}
	}
	if split {
		problems = append(problems, fmt.Sprintf("%s: acquired at revisions %s; want every member at revision %d, its token", label, strings.Join(at, ", "), k.token))
	}
	for _, n := range first.Set {
		if !slices.ContainsFunc(evs, func(ev AuditEvent) bool { return ev.Lock == n }) {
			problems = append(problems, fmt.Sprintf("%s: no acquired event of %q", label, n))
		}
	}
	return problems
}

// together checks that the members of the set grant k ended together:
// one end each (else exactlyOnce reports it), of one type, at one
// revision where the trail says which.
func (t setTrail) together(k setKey) []string {
	evs := t.grants[k]
	var ends []AuditEvent
	for _, ev := range evs {
		e := t.holdTrail.ends[lockToken{ev.Lock, k.token}]
		if len(e) != 1 {
			return nil
		}
		ends = append(ends, e[0])
	}
	apart := false
	var rev int64
	var seen []string
	for _, e := range ends {
		r, ok := e.EndedAt()
		if (ok && rev != 0 && r != rev) || e.Type != ends[0].Type {
			apart = true
		}
		if ok && rev == 0 {
			rev = r
		}
		at := "at an unknown revision"
		if ok {
			at = fmt.Sprintf("at %d", r)
		}
		seen = append(seen, fmt.Sprintf("%s %s %s", e.Lock, e.Type, at))
	}
	if !apart {
		return nil
	}
	return []string{fmt.Sprintf("lock set %v token %d: its members end apart: %s", evs[0].Set, k.token, strings.Join(seen, ", "))}
}

// matchSetOps checks the set ops that changed a hold against the trail,
// as holdTrail.matchOps does a semaphore's: pool names the locks the ops
// touched.
func (t setTrail) matchSetOps(ops []Op, pool map[string]bool) []string {
	var problems []string
	explained := map[setKey]bool{}
	uses := map[string]int{}
	for _, op := range ops {
		if op.Kind == SetAcquire {
			uses[op.Owner]++
		}
	}
	byOwner := map[string]setKey{}
	for _, k := range t.sortedGrants() {
		byOwner[t.grants[k][0].Owner] = k
	}
	refused := map[string]Op{}
	unknown := 0 // Unknown acquires whose owner cannot say which grant is theirs
	for _, op := range ops {
		switch {
		case op.Kind == SetAcquire && op.Result == OK:
			k, ok := t.grantOf(op.OutToken, op.Set)
			explained[k] = ok
			problems = append(problems, t.grantedAs(op, k, ok)...)
		case op.Kind == SetAcquire && op.Result == Unknown:
			if k, ok := byOwner[op.Owner]; ok && uses[op.Owner] == 1 {
				explained[k] = true
				problems = append(problems, t.grantedAs(op, k, true)...)
			} else if uses[op.Owner] > 1 {
				unknown++
			}
		case op.Kind == SetAcquire:
			refused[op.Owner] = op
		case op.Kind == SetRelease && op.Result == OK:
			problems = append(problems, t.releasedAs(op)...)
		}
	}
	var phantoms []int64
	for _, k := range t.sortedGrants() {
		first := t.grants[k][0]
		if explained[k] || !slices.ContainsFunc(first.Set, func(n string) bool { return pool[n] }) {
			continue
		}
		if op, ok := refused[first.Owner]; ok && uses[first.Owner] == 1 {
			problems = append(problems, fmt.Sprintf("set-acquire op %d (client %d, node %d) was refused (%s %d %s after %s, wait %q), but the trail shows its owner %q granted lock set %v with token %d",
				op.ID, op.Client, op.Node, op.Result, op.Status, op.Code, time.Duration(op.Return-op.Call).Round(time.Millisecond), op.Wait, first.Owner, first.Set, k.token))
			continue
		}
		phantoms = append(phantoms, k.token)
	}
	if len(phantoms) > unknown {
		problems = append(problems, fmt.Sprintf("%d lock set grants (tokens %v) match no set-acquire OK, but only %d set acquires were Unknown with an owner used twice",
			len(phantoms), phantoms, unknown))
	}
	return problems
}

// grantOf finds the set grant of token that names the locks names: the
// one that names them in that order, else one that names one of them.
func (t setTrail) grantOf(token int64, names []string) (setKey, bool) {
	k := setKey{token, strings.Join(names, ",")}
	if _, ok := t.grants[k]; ok {
		return k, true
	}
	for _, g := range t.sortedGrants() {
		if g.token == token && slices.ContainsFunc(t.grants[g][0].Set, func(n string) bool { return slices.Contains(names, n) }) {
			return g, true
		}
	}
	return k, false
}

// grantedAs checks the set grant k (none when !found) that the
// set-acquire op was answered (or, Unknown, settled by its owner) with.
func (t setTrail) grantedAs(op Op, k setKey, found bool) []string {
	evs := t.grants[k]
	token := k.token
	var problem string
	switch {
	case !found:
		problem = "has no acquired event"
	case !slices.Equal(evs[0].Set, op.Set):
		problem = fmt.Sprintf("is the set %v in the trail", evs[0].Set)
	case op.Owner != "" && evs[0].Owner != op.Owner:
		problem = fmt.Sprintf("acquired by %q, but the audit says %q", op.Owner, evs[0].Owner)
	default:
		return nil
	}
	return []string{fmt.Sprintf("set-acquire op %d: lock set %v token %d %s", op.ID, op.Set, token, problem)}
}

// releasedAs checks the set-release OK op: every member held with its
// token ends as released (the set's members are held together, so that
// is each of them).
func (t setTrail) releasedAs(op Op) []string {
	var problems []string
	for _, n := range op.Set {
		k := lockToken{n, op.Token}
		if !slices.ContainsFunc(t.holdTrail.ends[k], func(ev AuditEvent) bool { return ev.Type == "released" }) {
			problems = append(problems, fmt.Sprintf("set-release op %d: lock %q token %d has no released event (ends: %s)", op.ID, n, op.Token, joinEventTypes(t.holdTrail.ends[k])))
		}
	}
	return problems
}

// overlaps replays the trail of the lock name: each hold, a set member's
// or a single lock's, is held from its acquired event's revision until
// (not at) its end's (endRevision), and none may begin before the one
// before it ended. A release and the grant it hands the lock to share a
// revision.
func (t setTrail) overlaps(name string) []string {
	type span struct {
		token, from, to int64
		set             []string
	}
	var spans []span
	seen := map[int64]bool{} // a hold acquired twice is exactlyOnce's (CheckAudit's) report
	for _, ev := range t.holds[name] {
		if !seen[ev.Token] {
			seen[ev.Token] = true
			spans = append(spans, span{ev.Token, ev.Revision, endRevision(ev.Revision, t.ends[lockToken{name, ev.Token}]), ev.Set})
		}
	}
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	what := func(s span) string {
		if len(s.set) > 0 {
			return fmt.Sprintf("token %d (set %v, revisions %d to %s)", s.token, s.set, s.from, endString(s.to))
		}
		return fmt.Sprintf("token %d (revisions %d to %s)", s.token, s.from, endString(s.to))
	}
	var problems []string
	if len(spans) == 0 {
		return nil
	}
	last := spans[0] // of the spans begun so far, the one that ends last
	for _, s := range spans[1:] {
		if s.from < last.to {
			problems = append(problems, fmt.Sprintf("lock %q: the hold of %s began while the hold of %s was held", name, what(s), what(last)))
		}
		if s.to > last.to {
			last = s
		}
	}
	return problems
}

// sortedGrants are the keys of t.grants, by token, then names.
func (t setTrail) sortedGrants() []setKey {
	keys := make([]setKey, 0, len(t.grants))
	for k := range t.grants {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b setKey) int { return cmp.Or(cmp.Compare(a.token, b.token), strings.Compare(a.set, b.set)) })
	return keys
}
