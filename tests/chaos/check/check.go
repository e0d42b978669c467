package check

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// ErrCheckTimeout is returned by CheckLinearizable when porcupine gave up
// before deciding. It is not a pass: the history may still be illegal.
var ErrCheckTimeout = errors.New("linearizability check timed out")

// Special holders of lockState.Holder. Real tokens are etcd revisions, so
// they are always positive and never collide with these.
const (
	holderFree    int64 = 0
	holderUnknown int64 = -1 // granted by an Unknown acquire whose token nobody saw
)

// lockState is the model's view of one lock and the fenced register of the
// same name. It is comparable, so porcupine's default == tells states apart.
type lockState struct {
	hold
	fenced
}

// hold is who holds a lock (or leads an election) as far as a model knows.
type hold struct {
	// Holder is the token that holds the lock as far as the model knows,
	// holderFree or holderUnknown. The real hold may already have expired:
	// the model lets it vanish the moment an op shows it has.
	Holder int64
	// Last is the highest token known to have been granted for this lock.
	// An unknown grant is newer than Last, but its token stays unknown
	// until a get reveals it.
	Last int64
}

// fenced is a fenced register: FMax and FVal are its highest accepted
// token and the value written with it; FMax 0 means never written.
type fenced struct {
	FMax int64
	FVal string
}

// pin returns s with its holder known to be token, and whether token can be
// the holder at all: the known holder, or, when an Unknown acquire took the
// lock, any token newer than every grant the model saw.
func (s hold) pin(token int64) (hold, bool) {
	switch {
	case token <= 0:
		return s, false
	case s.Holder == token:
		return s, true
	case s.Holder == holderUnknown && token > s.Last:
		s.Holder, s.Last = token, token
		return s, true
	}
	return s, false
}

// vanished returns s after the hold of token ended, if token held it. A
// renew or release refused as not_held or token_mismatch proves that
// token's lease ran out; keeping the hold as an alternative would let a
// later renew or release of it pass, which is the very bug to catch.
func (s hold) vanished(token int64) hold {
	if s.Holder == token {
		s.Holder = holderFree
	}
	return s
}

// step returns every state s may move to when op takes effect; none means
// op cannot be linearized here. A lease may run out at any moment, so no
// op needs the holder to still be there except renew, release and get,
// which observe it.
func (s lockState) step(op Op) []lockState {
	switch op.Kind {
	case Acquire:
		return s.acquire(op)
	case Renew:
		switch op.Result {
		case OK:
			if h, ok := s.pin(op.Token); ok {
				s.hold = h
				return []lockState{s}
			}
			return nil
		case Rejected:
			s.hold = s.vanished(op.Token)
			return []lockState{s}
		case Unknown:
			// A renew changes no token: taking effect or not, same state.
			return []lockState{s}
		}
	case Release:
		switch op.Result {
		case OK:
			h, ok := s.pin(op.Token)
			if !ok {
				return nil
			}
			s.hold = h
			s.Holder = holderFree
			return []lockState{s}
		case Rejected:
			s.hold = s.vanished(op.Token)
			return []lockState{s}
		case Unknown:
			gone := s
			gone.hold = s.vanished(op.Token)
			return uniqueStates(s, gone)
		}
	case Get:
		switch op.Result {
		case OK:
			if h, ok := s.pin(op.OutToken); ok {
				s.hold = h
				return []lockState{s}
			}
			return nil
		case Rejected:
			// Nothing held: whatever the model thought held it expired.
			s.Holder = holderFree
			return []lockState{s}
		case Unknown:
			return []lockState{s}
		}
	case FPut:
		var out []lockState
		for _, f := range s.put(op) {
			next := s
			next.fenced = f
			out = append(out, next)
		}
		return out
	case FGet:
		if s.get(op) {
			return []lockState{s}
		}
	}
	return nil
}

// acquire is step for an acquire.
func (s lockState) acquire(op Op) []lockState {
	switch op.Result {
	case OK:
		// Revisions only grow, so a grant below what this lock already
		// handed out is a replayed or invented token. Any holder is
		// replaced: its lease must have expired first.
		if op.OutToken <= s.Last {
			return nil
		}
		s.Holder, s.Last = op.OutToken, op.OutToken
		return []lockState{s}
	case Rejected:
		// Someone held it; whoever it was, nothing changed.
		return []lockState{s}
	case Unknown:
		took := s
		took.Holder = holderUnknown
		return []lockState{s, took}
	}
	return nil
}

// put returns every state the register may move to when the fput op takes
// effect, as far as the register's own check goes; none means op cannot be
// linearized here. A guard's not_holder says nothing of the register.
func (f fenced) put(op Op) []fenced {
	written := fenced{FMax: op.Token, FVal: op.Value}
	switch op.Result {
	case OK:
		// Equal tokens pass so that one holder can write many times.
		if op.Token < f.FMax {
			return nil
		}
		return []fenced{written}
	case Rejected:
		if op.Code == "not_holder" {
			// Refused by its guard, not by the register: it says
			// nothing of FMax, and the guard may name another lock.
			return []fenced{f}
		}
		if op.Token >= f.FMax {
			return nil
		}
		return []fenced{f}
	case Unknown:
		if op.Token < f.FMax {
			return []fenced{f}
		}
		return uniqueStates(f, written)
	}
	return nil
}

// get reports whether the fget op can read f.
func (f fenced) get(op Op) bool {
	switch op.Result {
	case OK:
		return f.FMax != 0 && op.OutToken == f.FMax && op.OutValue == f.FVal
	case Rejected:
		return f.FMax == 0
	case Unknown:
		return true
	}
	return false
}

func uniqueStates[S comparable](a, b S) []S {
	if a == b {
		return []S{a}
	}
	return []S{a, b}
}

// String is the state as the HTML visualisation shows it.
func (s lockState) String() string {
	var b strings.Builder
	switch s.Holder {
	case holderFree:
		b.WriteString("free")
	case holderUnknown:
		b.WriteString("holder ?")
	default:
		fmt.Fprintf(&b, "holder %d", s.Holder)
	}
	fmt.Fprintf(&b, " last %d", s.Last)
	b.WriteString(s.fenced.String())
	return b.String()
}

// String is the register as the visualisation shows it, after a space.
func (f fenced) String() string {
	if f.FMax == 0 {
		return " fenced none"
	}
	return fmt.Sprintf(" fenced %d=%s", f.FMax, clipValue(f.FVal))
}

// LockModel is the sequential specification of one lock together with the
// fenced register of the same name, for porcupine. Operations' Input,
// Output and Metadata are all the Op: the step reads the request and the
// result from it. The history is partitioned by Op.Lock, since locks (and
// registers) never constrain each other; the global order of tokens across
// locks is CheckTokenOrder's job.
//
// Expiry is nondeterministic: a lease may run out at any moment, so the
// model lets the holder vanish whenever an op shows it has, but a vanished
// hold is never again renewed or released; a renew or release Rejected
// with the holder's token is such a sign. Feed it the ops as
// CheckLinearizable prepares them: without Failed ops, with Unknown ops
// pending to the end, and with JSON values in compact form.
func LockModel() porcupine.Model { return newModel(lockState{}) }

// modelState is a model's state for one partition: comparable, so that
// porcupine's == and a hash tell states apart, with the step of an Op.
type modelState[S any] interface {
	comparable
	step(Op) []S
	String() string
}

// newModel is the porcupine model whose every partition starts at init,
// partitioned by Op.Name.
func newModel[S modelState[S]](init S) porcupine.Model {
	return newModelBy(init, Op.Name)
}

// newModelBy is newModel partitioned by key.
func newModelBy[S modelState[S]](init S, key func(Op) string) porcupine.Model {
	return Model(init, key, func(s S, op Op) []S { return s.step(op) }, S.String)
}

// Model is the porcupine model of the states S, as this package's models
// are built, for a model of another package (kvcheck's): every partition
// (the ops with one key) starts at init, and step returns every state s
// may move to when op takes effect (none: op cannot be linearized
// there). S is comparable, so that == and a hash tell states apart;
// describe is a state as the visualisation shows it. Operations' Input,
// Output and Metadata are all the Op, as CheckModel prepares them.
func Model[S comparable](init S, key func(Op) string, step func(S, Op) []S, describe func(S) string) porcupine.Model {
	// One seed for the model's lifetime: equal states must hash equally.
	seed := maphash.MakeSeed()
	nm := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			return partitionBy(history, key)
		},
		Init: func() []any {
			return []any{init}
		},
		Step: func(state, input, _ any) []any {
			next := step(state.(S), input.(Op))
			out := make([]any, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Hash: func(state any) uint64 {
			return maphash.Comparable(seed, state.(S))
		},
		DescribeOperation: func(input, _ any) string {
			return DescribeOp(input.(Op))
		},
		DescribeState: func(state any) string {
			return describe(state.(S))
		},
		DescribeOperationMetadata: func(info any) string {
			op, ok := info.(Op)
			if !ok {
				return ""
			}
			return DescribeOpDetail(op)
		},
	}
	return nm.ToModel()
}

// partitionBy keeps each partition's ops (one per key: a lock's, an
// election's, a pool's) in their original order, so the visualisation
// lists partitions in the order they first appear.
func partitionBy(history []porcupine.Operation, key func(Op) string) [][]porcupine.Operation {
	index := map[string]int{}
	var parts [][]porcupine.Operation
	for _, o := range history {
		name := key(o.Input.(Op))
		i, ok := index[name]
		if !ok {
			i = len(parts)
			index[name] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], o)
	}
	return parts
}

// DescribeOp reads like "acquire c3 → 4711" or "release 4711 → ok".
func DescribeOp(op Op) string {
	switch op.Kind {
	case Acquire:
		who := op.Owner
		if who == "" {
			who = fmt.Sprintf("c%d", op.Client)
		}
		switch op.Result {
		case OK:
			return fmt.Sprintf("acquire %s → %d", who, op.OutToken)
		case Rejected:
			return fmt.Sprintf("acquire %s → held", who)
		}
		return fmt.Sprintf("acquire %s → %s", who, op.Result)
	case Renew, Release:
		return fmt.Sprintf("%s %d → %s", op.Kind, op.Token, describeResult(op))
	case Get:
		switch op.Result {
		case OK:
			if op.OutOwner != "" {
				return fmt.Sprintf("get → %d (%s)", op.OutToken, op.OutOwner)
			}
			return fmt.Sprintf("get → %d", op.OutToken)
		case Rejected:
			return "get → free"
		}
		return fmt.Sprintf("get → %s", op.Result)
	case FPut:
		return fmt.Sprintf("fput %d %s → %s", op.Token, clipValue(op.Value), describeResult(op))
	case Campaign, Proclaim, Resign, RenewLeader, Leader:
		return describeElectionOp(op)
	case SemAcquire, SemRenew, SemRelease, SemGet:
		return describeSemaphoreOp(op)
	case RWAcquire, RWRenew, RWRelease, RWGet:
		return describeRWOp(op)
	case SetAcquire, SetRenew, SetRelease:
		return describeSetOp(op)
	case KVPut, KVGet, KVDelete:
		return describeKVOp(op)
	case FGet:
		switch op.Result {
		case OK:
			return fmt.Sprintf("fget → %d %s", op.OutToken, clipValue(op.OutValue))
		case Rejected:
			return "fget → none"
		}
		return fmt.Sprintf("fget → %s", op.Result)
	}
	return fmt.Sprintf("%s → %s", op.Kind, op.Result)
}

// describeKVOp reads like "kv-put "v" if 0 s 694d fenced l/4711 → 4712"
// or "kv-get → none at 4715": what a key op sent, and what it saw.
func describeKVOp(op Op) string {
	var b strings.Builder
	b.WriteString(string(op.Kind))
	if op.Kind == KVPut {
		b.WriteString(" " + clipValue(op.Value))
	}
	if op.IfRevision != nil {
		fmt.Fprintf(&b, " if %d", *op.IfRevision)
	}
	if op.Session != "" {
		b.WriteString(" s " + op.Session)
	}
	if op.Lock != "" {
		fmt.Fprintf(&b, " fenced %s/%d", op.Lock, op.Token)
	}
	switch {
	case op.Result == OK && op.Kind == KVGet:
		fmt.Fprintf(&b, " → %d %s", op.OutRevision, clipValue(op.OutValue))
	case op.Result == OK && op.Kind == KVPut:
		fmt.Fprintf(&b, " → %d", op.OutRevision)
	case op.Code == "key_not_found":
		fmt.Fprintf(&b, " → none at %d", op.OutRevision)
	case op.Code == "revision_mismatch":
		fmt.Fprintf(&b, " → mismatch, at %d", op.OutRevision)
	default:
		b.WriteString(" → " + describeResult(op))
	}
	if op.OutSession != "" {
		b.WriteString(" s " + op.OutSession)
	}
	return b.String()
}

func describeResult(op Op) string {
	if op.Result == Rejected && op.Code != "" {
		return op.Code
	}
	return string(op.Result)
}

// DescribeOpDetail is the visualisation's tooltip: enough to find the op
// in the run's log.
func DescribeOpDetail(op Op) string {
	s := fmt.Sprintf("op %d client %d node %d lock %s", op.ID, op.Client, op.Node, op.Lock)
	if op.onElection() {
		s = fmt.Sprintf("op %d client %d node %d election %s", op.ID, op.Client, op.Node, op.Election)
	}
	if op.OnSemaphore() {
		s = fmt.Sprintf("op %d client %d node %d semaphore %s", op.ID, op.Client, op.Node, op.Semaphore)
	}
	if op.OnRWLock() {
		s = fmt.Sprintf("op %d client %d node %d rwlock %s", op.ID, op.Client, op.Node, op.RWLock)
	}
	if len(op.Set) > 0 {
		s = fmt.Sprintf("op %d client %d node %d lock set %s", op.ID, op.Client, op.Node, op.Name())
	}
	if op.OnKV() {
		s = fmt.Sprintf("op %d client %d node %d key %s", op.ID, op.Client, op.Node, op.Key)
		if op.Key == "" {
			s = fmt.Sprintf("op %d client %d node %d session %s", op.ID, op.Client, op.Node, op.Session)
		}
	}
	if op.Status != 0 {
		s += fmt.Sprintf(" status %d", op.Status)
	}
	if op.Code != "" {
		s += " " + op.Code
	}
	if op.Err != "" {
		s += " err " + op.Err
	}
	return s
}

// clipValue keeps large fenced values from swamping the visualisation.
func clipValue(s string) string {
	const runes = 40
	n := 0
	for i := range s {
		if n == runes {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// CheckLinearizable checks the lock ops of ops (those with no Election,
// Semaphore, RWLock, Set or Pool) against LockModel. Failed ops are left
// out (they never reached etcd), Unknown ops are pending until after the
// last op returned (they may take effect at any time after their call),
// and Unknown gets, fgets and renews are left out: taking effect or not,
// they change nothing the model holds.
//
// ok is true only when porcupine proved the history linearizable. When it
// found it illegal and htmlPath is not empty, the visualisation is written
// there; failing to write it is err, alongside ok false. When the timeout
// (0: none) runs out first, err is ErrCheckTimeout: not a pass.
func CheckLinearizable(ops []Op, timeout time.Duration, htmlPath string) (ok bool, err error) {
	return CheckModel(LockModel(), func(op Op) bool { return op.onLock() && !op.OnLockSet() }, ops, timeout, htmlPath)
}

// CheckModel checks the ops that model takes against it, as
// CheckLinearizable describes; model is one of Model's.
func CheckModel(model porcupine.Model, takes func(Op) bool, ops []Op, timeout time.Duration, htmlPath string) (ok bool, err error) {
	history, err := porcupineHistory(ops, takes)
	if err != nil {
		return false, err
	}
	res, info := porcupine.CheckOperationsVerbose(model, history, timeout)
	switch res {
	case porcupine.Ok:
		return true, nil
	case porcupine.Illegal:
		if htmlPath != "" {
			if err := porcupine.VisualizePath(model, info, htmlPath); err != nil {
				return false, fmt.Errorf("write linearizability visualisation: %w", err)
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("%w after %s (%d ops)", ErrCheckTimeout, timeout, len(history))
}

// porcupineHistory prepares the ops a model takes for it. Every op's kind
// must be one of some model's.
func porcupineHistory(ops []Op, takes func(Op) bool) ([]porcupine.Operation, error) {
	var end int64
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
	}
	history := make([]porcupine.Operation, 0, len(ops))
	kinds := allKinds()
	for _, op := range ops {
		if !slices.Contains(kinds, op.Kind) {
			return nil, fmt.Errorf("op %d: unknown kind %q", op.ID, op.Kind)
		}
		if !takes(op) {
			continue
		}
		switch op.Result {
		case OK, Rejected:
		case Failed:
			continue
		case Unknown:
			switch op.Kind {
			case Get, FGet, Renew, Leader, RenewLeader, SemRenew, SemGet, RWRenew, RWGet, SetRenew, KVGet:
				// Their step is the identity; leaving them out only
				// spares the search.
				continue
			}
			// Its effect, if any, may land after the client gave up,
			// even after every other op returned.
			op.Return = end + 1
		default:
			return nil, fmt.Errorf("op %d: unknown result %q", op.ID, op.Result)
		}
		// The server returns fenced values re-encoded, so only compact
		// forms compare equal to what was sent.
		op.Value, op.OutValue = compactValue(op.Value), compactValue(op.OutValue)
		history = append(history, porcupine.Operation{
			ClientId: op.Client,
			Input:    op,
			Call:     op.Call,
			Output:   op,
			Return:   op.Return,
			Metadata: op,
		})
	}
	return history, nil
}

// compactValue returns s compacted, or s itself when it is not JSON.
func compactValue(s string) string {
	if s == "" {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// CheckTokenOrder checks what global revisions promise of acquire,
// campaign, permit, rw-acquire and set-acquire OKs on any locks,
// elections, semaphores, rwlocks and lock sets: a grant
// that started after another grant returned carries a strictly higher
// token, and no two grants of one lock (election, semaphore) share a
// token. It returns one line per
// violation; none means the order holds.
func CheckTokenOrder(ops []Op) []string {
	var grants []Op
	for _, op := range ops {
		if slices.Contains([]Kind{Acquire, Campaign, SemAcquire, RWAcquire, SetAcquire}, op.Kind) && op.Result == OK {
			grants = append(grants, op)
		}
	}
	var problems []string
	first := map[lockToken]Op{}
	var unique []Op // a duplicate is reported once, not again as an inversion
	for _, op := range grants {
		k := lockToken{string(op.Kind) + " " + op.Name(), op.OutToken}
		if prev, dup := first[k]; dup {
			problems = append(problems, fmt.Sprintf("%s %q: token %d granted twice: op %d (client %d) and op %d (client %d)",
				grantOf(op), op.Name(), op.OutToken, prev.ID, prev.Client, op.ID, op.Client))
			continue
		}
		first[k] = op
		unique = append(unique, op)
	}
	outToken := func(op Op) int64 { return op.OutToken }
	for _, v := range realTimeInversions(unique, outToken, false) {
		problems = append(problems, fmt.Sprintf("%s op %d (%s %q) returned token %d at %s, but %s op %d (%s %q) called later at %s got token %d",
			v.before.Kind, v.before.ID, grantOf(v.before), v.before.Name(), v.before.OutToken, time.Duration(v.before.Return),
			v.after.Kind, v.after.ID, grantOf(v.after), v.after.Name(), time.Duration(v.after.Call), v.after.OutToken))
	}
	return problems
}

// grantOf names what a grant is of: "lock", "election", "semaphore",
// "rwlock" or "lock set".
func grantOf(op Op) string {
	switch {
	case len(op.Set) > 0:
		return "lock set"
	case op.OnRWLock():
		return "rwlock"
	case op.onElection():
		return "election"
	case op.OnSemaphore():
		return "semaphore"
	}
	return "lock"
}

// CheckFencedOrder checks that no fenced register accepted a write after
// it had accepted one with a higher token: for fput OKs A and B on one
// resource, A returning before B was called means A.Token <= B.Token.
func CheckFencedOrder(ops []Op) []string {
	byResource := map[string][]Op{}
	for _, op := range ops {
		if op.Kind == FPut && op.Result == OK {
			byResource[op.Name()] = append(byResource[op.Name()], op)
		}
	}
	var problems []string
	token := func(op Op) int64 { return op.Token }
	for _, name := range sortedNames(byResource) {
		for _, v := range realTimeInversions(byResource[name], token, true) {
			problems = append(problems, fmt.Sprintf("fenced %q: fput op %d with token %d was accepted at %s after fput op %d with token %d was accepted at %s",
				name, v.after.ID, v.after.Token, time.Duration(v.after.Return),
				v.before.ID, v.before.Token, time.Duration(v.before.Return)))
		}
	}
	return problems
}

// inversion is a pair of ops whose tokens contradict their real-time order.
type inversion struct{ before, after Op }

// realTimeInversions finds, for each op, the highest-token op that
// returned before it was called, and reports the pair if that token is
// above the op's own (or equal, unless allowEqual). Two sorts and one sweep
// keep it O(n log n) on long runs.
func realTimeInversions(ops []Op, token func(Op) int64, allowEqual bool) []inversion {
	byReturn := slices.Clone(ops)
	slices.SortStableFunc(byReturn, func(a, b Op) int {
		return cmp.Or(cmp.Compare(a.Return, b.Return), cmp.Compare(a.ID, b.ID))
	})
	byCall := slices.Clone(ops)
	slices.SortStableFunc(byCall, func(a, b Op) int {
		return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.ID, b.ID))
	})
	var found []inversion
	var best Op
	seen := false
	i := 0
	for _, b := range byCall {
		for ; i < len(byReturn) && byReturn[i].Return < b.Call; i++ {
			if !seen || token(byReturn[i]) > token(best) {
				best, seen = byReturn[i], true
			}
		}
		if !seen {
			continue
		}
		if token(best) > token(b) || (!allowEqual && token(best) == token(b)) {
			found = append(found, inversion{before: best, after: b})
		}
	}
	return found
}

type lockToken struct {
	lock  string
	token int64
}

// The audit event types that end a hold.
var endEventTypes = []string{"released", "expired", "revoked", "session_expired"}

// CheckAudit checks the audit trail against what the clients saw. events
// must be the whole /v1/history, read when nothing is held any more, so
// every hold has ended. It checks that every acquire OK has exactly one
// acquired event with its lock, token and owner; that every release OK's
// hold ended as released; that every hold has exactly one acquired and one
// end event; and that no lock the ops touched shows more grants than its
// acquire OKs and Unknown acquires can explain (an Unknown acquire may or
// may not have taken effect, so its event may or may not be there). The
// events of lock sets' members are CheckLockSetAudit's: a lock op of a
// pool is checked here against the single locks' events of its lock.
func CheckAudit(ops []Op, events []AuditEvent) []string {
	acquired := map[lockToken][]AuditEvent{}
	ends := map[lockToken][]AuditEvent{}
	for _, ev := range events {
		if !ev.isLock() || ev.isSetMember() {
			continue // CheckElectionAudit's, CheckLockSetAudit's, …
		}
		k := lockToken{ev.Lock, ev.Token}
		switch {
		case ev.Type == "acquired":
			acquired[k] = append(acquired[k], ev)
		case slices.Contains(endEventTypes, ev.Type):
			ends[k] = append(ends[k], ev)
		}
	}

	var problems []string
	for _, k := range sortedLockTokens(acquired) {
		if n := len(acquired[k]); n > 1 {
			problems = append(problems, fmt.Sprintf("lock %q token %d: %d acquired events", k.lock, k.token, n))
		}
		switch n := len(ends[k]); {
		case n == 0:
			problems = append(problems, fmt.Sprintf("lock %q token %d: acquired but never ended", k.lock, k.token))
		case n > 1:
			problems = append(problems, fmt.Sprintf("lock %q token %d: %d end events (%s)", k.lock, k.token, n, joinEventTypes(ends[k])))
		}
	}
	for _, k := range sortedLockTokens(ends) {
		if len(acquired[k]) == 0 {
			problems = append(problems, fmt.Sprintf("lock %q token %d: %s without an acquired event", k.lock, k.token, joinEventTypes(ends[k])))
		}
	}

	explained := map[lockToken]bool{}
	unknownAcquires := map[string]int{}
	touched := map[string]bool{}
	for _, op := range ops {
		if !op.onLock() {
			continue
		}
		touched[op.Lock] = true
		switch {
		case op.Kind == Acquire && op.Result == Unknown:
			unknownAcquires[op.Lock]++
		case op.Kind == Acquire && op.Result == OK:
			k := lockToken{op.Lock, op.OutToken}
			explained[k] = true
			evs := acquired[k]
			if len(evs) == 0 {
				problems = append(problems, fmt.Sprintf("acquire op %d: lock %q token %d has no acquired event", op.ID, op.Lock, op.OutToken))
				continue
			}
			if op.Owner != "" && evs[0].Owner != op.Owner {
				problems = append(problems, fmt.Sprintf("acquire op %d: lock %q token %d acquired by %q, but the audit says %q", op.ID, op.Lock, op.OutToken, op.Owner, evs[0].Owner))
			}
		case op.Kind == Release && op.Result == OK:
			k := lockToken{op.Lock, op.Token}
			if !slices.ContainsFunc(ends[k], func(ev AuditEvent) bool { return ev.Type == "released" }) {
				problems = append(problems, fmt.Sprintf("release op %d: lock %q token %d has no released event (ends: %s)", op.ID, op.Lock, op.Token, joinEventTypes(ends[k])))
			}
		}
	}

	// A grant that no op can account for was made by an acquire the
	// clients were told failed or was refused.
	phantoms := map[string][]int64{}
	for _, k := range sortedLockTokens(acquired) {
		if touched[k.lock] && !explained[k] {
			phantoms[k.lock] = append(phantoms[k.lock], k.token)
		}
	}
	for _, name := range sortedNames(phantoms) {
		if n := len(phantoms[name]); n > unknownAcquires[name] {
			problems = append(problems, fmt.Sprintf("lock %q: %d acquired events (tokens %v) match no acquire OK, but only %d acquires were Unknown",
				name, n, phantoms[name], unknownAcquires[name]))
		}
	}
	return problems
}

// AllEnded reports whether every hold and leadership the trail evs
// grants has ended in it as often as it was granted: the audits read
// only a settled trail, where nothing is held any more.
func AllEnded(evs []AuditEvent) bool {
	open := map[string]int{}
	for _, e := range evs {
		k := fmt.Sprintf("lock %s/%d", e.Lock, e.Token)
		if !e.isLock() {
			k = fmt.Sprintf("%s %s/%d", e.Kind, e.Name, e.Token)
		}
		switch {
		case e.Type == "acquired" || e.Type == "elected":
			open[k]++
		case slices.Contains(endEventTypes, e.Type) || slices.Contains(leadershipEnds, e.Type):
			open[k]--
		}
	}
	for _, n := range open {
		if n != 0 {
			return false
		}
	}
	return true
}

func joinEventTypes(evs []AuditEvent) string {
	if len(evs) == 0 {
		return "none"
	}
	types := make([]string, len(evs))
	for i, ev := range evs {
		types[i] = ev.Type
	}
	return strings.Join(types, ", ")
}

func sortedLockTokens[V any](m map[lockToken]V) []lockToken {
	keys := make([]lockToken, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b lockToken) int {
		return cmp.Or(strings.Compare(a.lock, b.lock), cmp.Compare(a.token, b.token))
	})
	return keys
}

func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Summarize counts ops per kind and result on one line for the run's log,
// e.g. "acquire ok=120 rejected=30 unknown=2 failed=5; release ok=…".
// Kinds that never occurred are left out.
func Summarize(ops []Op) string {
	kinds := allKinds()
	results := []Result{OK, Rejected, Unknown, Failed}
	counts := map[Kind]map[Result]int{}
	for _, op := range ops {
		if counts[op.Kind] == nil {
			counts[op.Kind] = map[Result]int{}
			if !slices.Contains(kinds, op.Kind) {
				kinds = append(kinds, op.Kind) // a workload bug is worth seeing
			}
		}
		counts[op.Kind][op.Result]++
		if !slices.Contains(results, op.Result) {
			results = append(results, op.Result)
		}
	}
	var parts []string
	for _, k := range kinds {
		c := counts[k]
		if c == nil {
			continue
		}
		fields := []string{string(k)}
		for _, r := range results {
			fields = append(fields, fmt.Sprintf("%s=%d", r, c[r]))
		}
		parts = append(parts, strings.Join(fields, " "))
	}
	if len(parts) == 0 {
		return "no ops"
	}
	return strings.Join(parts, "; ")
}
