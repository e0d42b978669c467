package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// maxModelHolds bounds the holds RWLockModel keeps at once, as
// MaxModelLimit does a semaphore's: its state keeps them in an array, so
// that it stays comparable. A client holds one hold at a time, but a
// hold whose acquire was Unknown (and settled as granted by the trail)
// lives on unused beside its client's next one until it expires.
const maxModelHolds = 24

// rwHold is a hold RWLockModel knows to be held.
type rwHold struct {
	Token int64
	Write bool
	// Mortal is as for a permit: the trail ends the hold otherwise than
	// by a release, so it may vanish unseen at any moment.
	Mortal bool
}

// rwState is RWLockModel's view of one read/write lock and the fenced
// resource named like it. It is comparable, as lockState is.
type rwState struct {
	// Held are the holds known to be held, ascending by token, N of
	// them: one writer, or readers.
	Held [maxModelHolds]rwHold
	N    int
	// Unseen counts holds granted to Unknown acquires whose token nobody
	// saw (the trail could not settle them), all of mode UnseenWrite;
	// each is mortal, with a token above UnseenAbove.
	Unseen      int
	UnseenWrite bool
	UnseenAbove int64
	// Last is the highest token known to have been granted.
	Last int64
	fenced
}

func (s rwState) find(token int64) int {
	for i := range s.N {
		if s.Held[i].Token == token {
			return i
		}
	}
	return -1
}

func (s rwState) without(i int) rwState {
	copy(s.Held[i:s.N], s.Held[i+1:s.N])
	s.N--
	s.Held[s.N] = rwHold{}
	return s
}

// with is s with h held, in token order; ok is false when the model has
// no room left for it.
func (s rwState) with(h rwHold) (rwState, bool) {
	if s.N == maxModelHolds {
		return s, false
	}
	i := s.N
	for i > 0 && s.Held[i-1].Token > h.Token {
		s.Held[i] = s.Held[i-1]
		i--
	}
	s.Held[i] = h
	s.N++
	s.Last = max(s.Last, h.Token)
	return s, true
}

// writerHeld reports whether s holds a write hold, seen or not.
func (s rwState) writerHeld() bool {
	return (s.N > 0 && s.Held[0].Write) || (s.Unseen > 0 && s.UnseenWrite)
}

func (s rwState) held() int { return s.N + s.Unseen }

// clear returns s with the holds for which keep is false gone, and false
// if one of them is immortal (held until a release of it).
func (s rwState) clear(keep func(rwHold) bool) (rwState, bool) {
	for i := s.N - 1; i >= 0; i-- {
		if keep(s.Held[i]) {
			continue
		}
		if !s.Held[i].Mortal {
			return s, false
		}
		s = s.without(i)
	}
	return s, true
}

// room returns s with every hold in the way of a grant of write (or
// read) expired, and false when one of them cannot have: a writer needs
// nothing held, a reader no writer.
func (s rwState) room(write bool) (rwState, bool) {
	next, ok := s.clear(func(h rwHold) bool { return !write && !h.Write })
	if !ok {
		return s, false
	}
	if write || next.UnseenWrite {
		next.Unseen, next.UnseenWrite, next.UnseenAbove = 0, false, 0
	}
	return next, true
}

// pin returns s with token known to be held in mode write, and whether it
// can be: a hold held in that mode, or one of the unseen ones.
func (s rwState) pin(token int64, write bool) (rwState, bool) {
	if i := s.find(token); i >= 0 {
		return s, s.Held[i].Write == write
	}
	if token <= 0 || s.Unseen == 0 || s.UnseenWrite != write || token <= s.UnseenAbove {
		return s, false
	}
	s.Unseen--
	if s.Unseen == 0 {
		s.UnseenWrite, s.UnseenAbove = false, 0
	}
	return s.with(rwHold{Token: token, Write: write, Mortal: true})
}

// pinAny is pin in whichever mode token can be held.
func (s rwState) pinAny(token int64) (rwState, bool) {
	if next, ok := s.pin(token, false); ok {
		return next, true
	}
	return s.pin(token, true)
}

// vanished is s after a refusal of token (not_held): a mortal hold of
// token has expired; an immortal one cannot be refused while held.
func (s rwState) vanished(token int64) (rwState, bool) {
	i := s.find(token)
	switch {
	case i < 0:
		return s, true
	case s.Held[i].Mortal:
		return s.without(i), true
	}
	return s, false
}

// one is the states a step that moves to s, if ok, may move to.
func one[S any](s S, ok bool) []S {
	if !ok {
		return nil
	}
	return []S{s}
}

// step returns every state s may move to when op takes effect; none means
// op cannot be linearized here.
func (s rwState) step(op Op) []rwState {
	switch op.Kind {
	case RWAcquire:
		return s.acquire(op)
	case RWRenew:
		switch op.Result {
		case OK:
			next, ok := s.pinAny(op.Token)
			return one(next, ok && op.OutToken == op.Token)
		case Rejected:
			return one(s.vanished(op.Token))
		case Unknown:
			return []rwState{s}
		}
	case RWRelease:
		switch op.Result {
		case OK:
			next, ok := s.pinAny(op.Token)
			if !ok {
				return nil
			}
			return []rwState{next.without(next.find(op.Token))}
		case Rejected:
			return one(s.vanished(op.Token))
		case Unknown:
			if i := s.find(op.Token); i >= 0 {
				return []rwState{s, s.without(i)}
			}
			return []rwState{s}
		}
	case RWGet:
		return s.read(op)
	case FPut:
		return s.fput(op)
	case FGet:
		if s.get(op) {
			return []rwState{s}
		}
	}
	return nil
}

// acquire is step for an acquire, with or without wait. A grant's token
// is above every earlier grant's (so a write grant's is above every
// token of a hold that ended before it), and needs the holds in its way
// gone: for a writer every hold, for a reader the writer; those must be
// mortal (they expired). A refusal is checked only when strict (see
// ResolveRWLocks): no waiter could be ahead of it, so a hold in its way
// was held (for a writer, any hold; for a reader, a writer). Even then
// the model cannot tell a mortal hold that had expired unseen from one
// still held, so a strict refusal fails only when nothing in its way is
// known at all. A refusal that is not strict may have been behind a
// waiter, which this model does not track (the queue is the audit's:
// see CheckRWLockAudit), and passes whatever is held.
func (s rwState) acquire(op Op) []rwState {
	write := op.Mode == "write"
	switch op.Result {
	case OK:
		if op.OutToken <= s.Last {
			return nil
		}
		next, ok := s.room(write)
		if !ok {
			return nil
		}
		return one(next.with(rwHold{Token: op.OutToken, Write: write, Mortal: op.mortal}))
	case Rejected:
		if op.strict && ((write && s.held() == 0) || (!write && !s.writerHeld())) {
			return nil
		}
		return []rwState{s}
	case Unknown:
		// Granted unseen, or not at all. room leaves no unseen hold
		// beside a writer, and only unseen readers beside a reader.
		next, ok := s.room(write)
		if !ok {
			return []rwState{s}
		}
		if next.Unseen == 0 {
			next.UnseenAbove, next.UnseenWrite = next.Last, write
		}
		next.Unseen++
		return []rwState{s, next}
	}
	return nil
}

// read is step for a read of the holds: exactly the tokens it shows are
// held, in the mode it shows. A hold it does not show must be mortal (it
// expired unseen); a token it shows that the model does not know must be
// one of the unseen holds'.
func (s rwState) read(op Op) []rwState {
	var shown []int64
	switch op.Result {
	case OK:
		shown = op.OutTokens
		if op.OutMode != "read" && op.OutMode != "write" || (op.OutMode == "write" && len(shown) != 1) {
			return nil
		}
	case Rejected:
	default:
		return []rwState{s}
	}
	write := op.OutMode == "write"
	for _, token := range shown {
		next, ok := s.pin(token, write)
		if !ok {
			return nil
		}
		s = next
	}
	next, ok := s.clear(func(h rwHold) bool { return slices.Contains(shown, h.Token) })
	if !ok {
		return nil
	}
	next.Unseen, next.UnseenWrite, next.UnseenAbove = 0, false, 0
	return []rwState{next}
}

// fput is step for a fenced write whose guard is the rwlock: accepted
// only while its token is the write hold, and not_holder proves it is
// not (a reader's write is refused so; a writer's after its hold ended).
func (s rwState) fput(op Op) []rwState {
	if op.Result == Rejected {
		if op.Code == "not_holder" {
			if i := s.find(op.Token); i >= 0 && s.Held[i].Write {
				return one(s.vanished(op.Token))
			}
			return []rwState{s}
		}
		if len(s.put(op)) == 0 {
			return nil
		}
		return []rwState{s}
	}
	next, ok := s.pin(op.Token, true)
	if !ok {
		if op.Result == OK {
			return nil
		}
		return []rwState{s}
	}
	var out []rwState
	for _, f := range s.put(op) {
		if f == s.fenced {
			out = append(out, s)
			continue
		}
		w := next
		w.fenced = f
		out = append(out, w)
	}
	return out
}

// String is the state as the HTML visualisation shows it.
func (s rwState) String() string {
	var b strings.Builder
	b.WriteString("held")
	if s.held() == 0 {
		b.WriteString(" none")
	}
	for _, h := range s.Held[:s.N] {
		mode, mark := "r", ""
		if h.Write {
			mode = "w"
		}
		if h.Mortal {
			mark = "†"
		}
		fmt.Fprintf(&b, " %s%d%s", mode, h.Token, mark)
	}
	for range s.Unseen {
		if s.UnseenWrite {
			b.WriteString(" w?")
		} else {
			b.WriteString(" r?")
		}
	}
	fmt.Fprintf(&b, " last %d", s.Last)
	b.WriteString(s.fenced.String())
	return b.String()
}

// RWLockModel is the sequential specification of one read/write lock
// together with the fenced resource named like it, for porcupine, built
// as SemaphoreModel is and partitioned by rwlock. At any time one write
// hold or any number of read holds; each grant's token above every
// earlier one; renew and release succeed only for a hold held; a read
// shows exactly the holds held, in their mode; a fenced write naming the
// rwlock is accepted only for the current write hold's token (a reader's
// is refused) and, as LockModel's register, never with a token below one
// already accepted. Expiry is SemaphoreModel's: a hold may end unseen,
// but only one the trail shows expired (ResolveRWLocks marks them), and
// a refusal of its token proves it has; a hold the trail shows released
// was held until a release of it took effect. What it does not check:
// the queue (FIFO order, a direct acquire refused behind a waiter) — see
// acquire and CheckRWLockAudit.
func RWLockModel() porcupine.Model { return newModel(rwState{}) }

// CheckRWLocks checks the rw ops of ops (those with RWLock set) against
// RWLockModel, as CheckSemaphores does the semaphore ops. Feed it
// ResolveRWLocks's ops: without the trail's word, every hold is immortal
// and every refusal unchecked.
func CheckRWLocks(ops []Op, timeout time.Duration, htmlPath string) (ok bool, err error) {
	return CheckModel(RWLockModel(), Op.OnRWLock, ops, timeout, htmlPath)
}

// describeRWOp reads like "rw-acquire w3-1 write wait 1s → 4711".
func describeRWOp(op Op) string {
	out := describeResult(op)
	switch op.Kind {
	case RWAcquire:
		return describeAcquire(op, op.Owner+" "+op.Mode)
	case RWGet:
		switch op.Result {
		case OK:
			return fmt.Sprintf("rw-get → %s %v", op.OutMode, op.OutTokens)
		case Rejected:
			return "rw-get → none"
		}
	}
	return fmt.Sprintf("%s %d → %s", op.Kind, op.Token, out)
}
