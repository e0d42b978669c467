package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// MaxPoolLocks bounds the locks of a pool LockSetModel checks: its state
// keeps them in an array, so that it stays comparable.
const MaxPoolLocks = 8

// poolState is LockSetModel's view of a pool of locks that lock sets and
// single locks share, each with the fenced register named like it. It is
// comparable, as lockState is.
type poolState struct {
	// Names are the pool's locks the ops have named so far, ascending, N
	// of them; Locks[i] is Names[i]'s.
	Names [MaxPoolLocks]string
	N     int
	Locks [MaxPoolLocks]poolLock
}

// poolLock is one lock of a pool and its register, as LockModel keeps
// them (Holder is holderUnknown for an Unknown acquire that took it, its
// token unseen), with the grant that holds it.
type poolLock struct {
	lockState
	// Grant is the ID+1 of the acquire op whose hold holds the lock, 0
	// when free. A set's members share their grant; a token does not tell
	// holds apart, as grants batched into one txn share its revision.
	Grant int
}

// slot returns s with name among its locks, and its index; -1 when the
// pool has more locks than the model keeps.
func (s poolState) slot(name string) (poolState, int) {
	i := 0
	for i < s.N && s.Names[i] < name {
		i++
	}
	if i < s.N && s.Names[i] == name {
		return s, i
	}
	if s.N == MaxPoolLocks {
		return s, -1
	}
	copy(s.Names[i+1:s.N+1], s.Names[i:s.N])
	copy(s.Locks[i+1:s.N+1], s.Locks[i:s.N])
	s.Names[i], s.Locks[i] = name, poolLock{}
	s.N++
	return s, i
}

// slots is slot for every name of names.
func (s poolState) slots(names []string) (poolState, []int, bool) {
	for _, n := range names {
		var i int
		if s, i = s.slot(n); i < 0 {
			return s, nil, false
		}
	}
	ix := make([]int, len(names))
	for k, n := range names {
		_, ix[k] = s.slot(n)
	}
	return s, ix, true
}

// vanish is s after the hold of lock i, if any, ended: every lock its
// grant holds is free. A set's members share one lease, and the workload
// never ends one of them alone, so a set that lost one member lost them
// all; a member seen held after that is a set held in part.
func (s poolState) vanish(i int) poolState {
	g := s.Locks[i].Grant
	if g == 0 {
		return s
	}
	for j := range s.N {
		if s.Locks[j].Grant == g {
			s.Locks[j].Holder, s.Locks[j].Grant = holderFree, 0
		}
	}
	return s
}

// grant is s after op's grant of the locks ix with token (0: an Unknown
// acquire's, unseen), and false when the token is not above every grant
// those locks saw. A hold still on one of them must have expired first,
// on every lock it held.
func (s poolState) grant(op Op, ix []int, token int64) (poolState, bool) {
	for _, i := range ix {
		if token > 0 && token <= s.Locks[i].Last {
			return s, false
		}
	}
	for _, i := range ix {
		s = s.vanish(i)
	}
	for _, i := range ix {
		l := &s.Locks[i]
		l.Holder, l.Grant = holderUnknown, op.ID+1
		if token > 0 {
			l.Holder, l.Last = token, token
		}
	}
	return s, true
}

// pin returns s with lock i known to be held with token, and whether it
// can be: token holds it, or an Unknown acquire holds it whose token can
// be token (above every grant its locks saw). Revealing an Unknown set's
// token reveals it on every member.
func (s poolState) pin(i int, token int64) (poolState, bool) {
	l := s.Locks[i]
	switch {
	case token <= 0:
		return s, false
	case l.Holder == token:
		return s, true
	case l.Holder != holderUnknown:
		return s, false
	}
	for j := range s.N {
		if s.Locks[j].Grant == l.Grant && token <= s.Locks[j].Last {
			return s, false
		}
	}
	for j := range s.N {
		if s.Locks[j].Grant == l.Grant {
			s.Locks[j].Holder, s.Locks[j].Last = token, token
		}
	}
	return s, true
}

// vanished is s after a refusal of token on the locks ix: a hold of
// token on one of them has ended.
func (s poolState) vanished(ix []int, token int64) poolState {
	for _, i := range ix {
		if s.Locks[i].Holder == token {
			s = s.vanish(i)
		}
	}
	return s
}

// freed is s with the locks of ix that token holds free: a release of
// them took effect.
func (s poolState) freed(ix []int, token int64) poolState {
	for _, i := range ix {
		if s.Locks[i].Holder == token {
			s.Locks[i].Holder, s.Locks[i].Grant = holderFree, 0
		}
	}
	return s
}

// step returns every state s may move to when op takes effect; none means
// op cannot be linearized here.
func (s poolState) step(op Op) []poolState {
	names := op.Set
	if len(names) == 0 {
		names = []string{op.Lock}
	}
	s, ix, ok := s.slots(names)
	if !ok {
		return nil
	}
	if len(op.Set) > 0 {
		return s.stepSet(op, ix)
	}
	return s.stepLock(op, ix[0])
}

// stepLock is step for a lock op on lock i of the pool: LockModel's step,
// except that a hold that ends or is replaced ends on every lock it holds.
func (s poolState) stepLock(op Op, i int) []poolState {
	switch op.Kind {
	case Acquire:
		return s.acquire(op, []int{i})
	case Renew:
		switch op.Result {
		case OK:
			return one(s.pin(i, op.Token))
		case Rejected:
			return []poolState{s.vanished([]int{i}, op.Token)}
		case Unknown:
			return []poolState{s}
		}
	case Release:
		switch op.Result {
		case OK:
			next, ok := s.pin(i, op.Token)
			return one(next.freed([]int{i}, op.Token), ok)
		case Rejected:
			return []poolState{s.vanished([]int{i}, op.Token)}
		case Unknown:
			return uniqueStates(s, s.freed([]int{i}, op.Token))
		}
	case Get:
		switch op.Result {
		case OK:
			return one(s.pin(i, op.OutToken))
		case Rejected:
			// Nothing held: whatever the model thought held it ended.
			return []poolState{s.vanish(i)}
		case Unknown:
			return []poolState{s}
		}
	case FPut:
		var out []poolState
		for _, f := range s.Locks[i].put(op) {
			next := s
			next.Locks[i].fenced = f
			out = append(out, next)
		}
		return out
	case FGet:
		if s.Locks[i].get(op) {
			return []poolState{s}
		}
	}
	return nil
}

// acquire is step for an acquire of the locks ix, one lock's or a set's:
// granted all at once, or, refused, nothing changed.
func (s poolState) acquire(op Op, ix []int) []poolState {
	switch op.Result {
	case OK:
		return one(s.grant(op, ix, op.OutToken))
	case Rejected:
		return []poolState{s}
	case Unknown:
		took, _ := s.grant(op, ix, 0)
		return []poolState{s, took}
	}
	return nil
}

// stepSet is step for a set op on the locks ix: an acquire takes every
// one of them in one step; a renew needs every one held with its token,
// by one grant; a release needs one of them held with its token (it ends
// those still held, and the model holds the members together), and a
// refusal of either proves the set has ended.
func (s poolState) stepSet(op Op, ix []int) []poolState {
	switch op.Kind {
	case SetAcquire:
		return s.acquire(op, ix)
	case SetRenew:
		switch op.Result {
		case OK:
			next, ok := s, op.OutToken == op.Token
			for _, i := range ix {
				if ok {
					next, ok = next.pin(i, op.Token)
				}
				ok = ok && next.Locks[i].Grant == next.Locks[ix[0]].Grant
			}
			return one(next, ok)
		case Rejected:
			return []poolState{s.vanished(ix, op.Token)}
		case Unknown:
			return []poolState{s}
		}
	case SetRelease:
		switch op.Result {
		case OK:
			for _, i := range ix {
				if next, ok := s.pin(i, op.Token); ok {
					return []poolState{next.freed(ix, op.Token)}
				}
			}
			return nil
		case Rejected:
			return []poolState{s.vanished(ix, op.Token)}
		case Unknown:
			return uniqueStates(s, s.freed(ix, op.Token))
		}
	}
	return nil
}

// String is the state as the HTML visualisation shows it.
func (s poolState) String() string {
	parts := make([]string, s.N)
	for i := range s.N {
		l := s.Locks[i]
		holder := "free"
		switch {
		case l.Holder > 0:
			holder = fmt.Sprintf("holder %d", l.Holder)
		case l.Holder == holderUnknown:
			holder = fmt.Sprintf("holder ? (op %d)", l.Grant-1)
		}
		parts[i] = fmt.Sprintf("%s: %s last %d%s", s.Names[i], holder, l.Last, l.fenced.String())
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// LockSetModel is the sequential specification of a pool of locks that
// lock sets and single locks share, with the fenced register named like
// each, for porcupine, partitioned by pool (Op.Pool): a set couples its
// locks, so a pool's ops cannot be checked lock by lock. Each lock has at
// most one holder; a set's acquire is one step that takes every one of
// its locks (whatever held one must have expired, and with it every lock
// it held), with a token above every grant of each; a set's renew needs
// every member held with its token, its release one (and ends them all);
// single locks step as in LockModel. A set's members share one lease and
// the workload never ends one alone, so they end together: once an op
// shows one member free or held by another, every member is free, and
// seeing another still held with the set's token is a violation (a set
// held in part). Expiry, Unknown ops and the registers are as in
// LockModel; a hold is known by its grant, not its token, as grants
// batched into one txn share a token.
func LockSetModel() porcupine.Model {
	return newModelBy(poolState{}, func(op Op) string { return op.Pool })
}

// CheckLockSets checks the ops of lock set pools (those with Pool set)
// against LockSetModel, as CheckLinearizable checks the lock ops. Feed it
// ResolveLockSets's ops: a pool is one partition, whose states multiply
// the ways every Unknown acquire in it could have gone.
func CheckLockSets(ops []Op, timeout time.Duration, htmlPath string) (ok bool, err error) {
	names := map[string]map[string]bool{}
	for _, op := range ops {
		if !op.OnLockSet() {
			continue
		}
		if names[op.Pool] == nil {
			names[op.Pool] = map[string]bool{}
		}
		if op.Lock != "" {
			names[op.Pool][op.Lock] = true
		}
		for _, n := range op.Set {
			names[op.Pool][n] = true
		}
		if n := len(names[op.Pool]); n > MaxPoolLocks {
			return false, fmt.Errorf("op %d: pool %q has %d locks; LockSetModel checks up to %d", op.ID, op.Pool, n, MaxPoolLocks)
		}
	}
	return CheckModel(LockSetModel(), Op.OnLockSet, ops, timeout, htmlPath)
}

// describeSetOp reads like "set-acquire ls3-1 acct-2,acct-0 wait 1s →
// 4711" or "set-release acct-2,acct-0 4711 → ok".
func describeSetOp(op Op) string {
	if op.Kind == SetAcquire {
		return describeAcquire(op, op.Owner+" "+op.Name())
	}
	return fmt.Sprintf("%s %s %d → %s", op.Kind, op.Name(), op.Token, describeResult(op))
}
