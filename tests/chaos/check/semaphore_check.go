package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// MaxModelLimit bounds the limits SemaphoreModel checks: its state keeps
// the permits held in an array, so that it stays comparable.
const MaxModelLimit = 8

// permit is a permit SemaphoreModel knows to be held.
type permit struct {
	Token int64
	// Mortal is set when the trail ends the permit otherwise than by a
	// release (it expired): it may then vanish unseen at any moment, as
	// a lock's hold may. A permit the trail shows released was held
	// until a release of it took effect, whatever the clocks said.
	Mortal bool
}

// semaphoreState is SemaphoreModel's view of one semaphore. It is
// comparable, as lockState is.
type semaphoreState struct {
	// Limit is the semaphore's limit, from the first op that names one.
	Limit int
	// Held are the permits known to be held, ascending by token, N of
	// them; the rest of the array is zero.
	Held [MaxModelLimit]permit
	N    int
	// Unseen counts permits granted to Unknown acquires whose token
	// nobody saw; each is mortal, and a read may reveal its token, which
	// is above UnseenAbove (Last when the first of them was granted).
	Unseen      int
	UnseenAbove int64
	// Last is the highest token known to have been granted: a new
	// grant's token, a revision, is above it.
	Last int64
}

// find returns the index of token among the permits held, or -1.
func (s semaphoreState) find(token int64) int {
	for i := range s.N {
		if s.Held[i].Token == token {
			return i
		}
	}
	return -1
}

// without is s with the permit at index i gone.
func (s semaphoreState) without(i int) semaphoreState {
	copy(s.Held[i:s.N], s.Held[i+1:s.N])
	s.N--
	s.Held[s.N] = permit{}
	return s
}

// with is s with p held, kept in token order.
func (s semaphoreState) with(p permit) semaphoreState {
	i := s.N
	for i > 0 && s.Held[i-1].Token > p.Token {
		s.Held[i] = s.Held[i-1]
		i--
	}
	s.Held[i] = p
	s.N++
	s.Last = max(s.Last, p.Token)
	return s
}

// withUnseen is s with one more permit of unknown token.
func (s semaphoreState) withUnseen() semaphoreState {
	if s.Unseen == 0 {
		s.UnseenAbove = s.Last
	}
	s.Unseen++
	return s
}

// dropUnseen is s with one unseen permit fewer.
func (s semaphoreState) dropUnseen() semaphoreState {
	s.Unseen--
	if s.Unseen == 0 {
		s.UnseenAbove = 0
	}
	return s
}

// held is how many permits s holds, seen or not.
func (s semaphoreState) held() int { return s.N + s.Unseen }

// pin returns s with token known to be held, and whether it can be: a
// permit held, or one of the unseen ones.
func (s semaphoreState) pin(token int64) (semaphoreState, bool) {
	switch {
	case token <= 0:
		return s, false
	case s.find(token) >= 0:
		return s, true
	case s.Unseen > 0 && token > s.UnseenAbove:
		return s.dropUnseen().with(permit{Token: token, Mortal: true}), true
	}
	return s, false
}

// vanished is s after a refusal of token (not_held): a mortal permit of
// token has expired; an immortal one cannot be refused while held, so
// ok is false.
func (s semaphoreState) vanished(token int64) (next semaphoreState, ok bool) {
	i := s.find(token)
	switch {
	case i < 0:
		return s, true
	case s.Held[i].Mortal:
		return s.without(i), true
	}
	return s, false
}

// room returns every state s may be in with a permit free: s itself
// when fewer than Limit are held, else s with one mortal permit (seen or
// not) expired, each in turn. None means every permit is held until a
// release of it.
func (s semaphoreState) room() []semaphoreState {
	if s.held() < s.Limit {
		return []semaphoreState{s}
	}
	var out []semaphoreState
	if s.Unseen > 0 {
		out = append(out, s.dropUnseen())
	}
	for i := range s.N {
		if s.Held[i].Mortal {
			out = append(out, s.without(i))
		}
	}
	return out
}

// grant returns every state s may move to when a permit is granted:
// with token (0: unseen), mortal or not.
func (s semaphoreState) grant(token int64, mortal bool) []semaphoreState {
	var out []semaphoreState
	for _, r := range s.room() {
		if token == 0 {
			out = append(out, r.withUnseen())
		} else {
			out = append(out, r.with(permit{Token: token, Mortal: mortal}))
		}
	}
	return out
}

// step returns every state s may move to when op takes effect; none means
// op cannot be linearized here.
func (s semaphoreState) step(op Op) []semaphoreState {
	if op.Kind == SemAcquire && op.Result != OK {
		op.OutLimit = 0 // the holders' (see ResolvePermits), not this op's
	}
	if s.Limit == 0 {
		s.Limit = max(op.Limit, op.OutLimit)
	}
	if (op.Limit != 0 && op.Limit != s.Limit) || (op.OutLimit != 0 && op.OutLimit != s.Limit) {
		return nil
	}
	switch op.Kind {
	case SemAcquire:
		return s.acquire(op)
	case SemRenew:
		switch op.Result {
		case OK:
			if next, ok := s.pin(op.Token); ok && op.OutToken == op.Token {
				return []semaphoreState{next}
			}
		case Rejected:
			if next, ok := s.vanished(op.Token); ok {
				return []semaphoreState{next}
			}
		case Unknown:
			return []semaphoreState{s}
		}
	case SemRelease:
		switch op.Result {
		case OK:
			if next, ok := s.pin(op.Token); ok {
				return []semaphoreState{next.without(next.find(op.Token))}
			}
		case Rejected:
			if next, ok := s.vanished(op.Token); ok {
				return []semaphoreState{next}
			}
		case Unknown:
			if i := s.find(op.Token); i >= 0 {
				return []semaphoreState{s, s.without(i)}
			}
			return []semaphoreState{s}
		}
	case SemGet:
		return s.read(op)
	}
	return nil
}

// acquire is step for a permit's acquire, with or without wait. A grant's
// token is above every earlier grant's, and needs a permit free: when
// Limit are held, one of the mortal ones must have expired. A refusal is
// checked only when strict (see ResolvePermits): then no waiter could be
// ahead of it, so every permit was held. A refusal that is not strict may
// have been behind a waiter (one in flight, or one whose client gave up
// and whose queue entry outlived it), which this model does not track, so
// it is allowed whatever is held.
func (s semaphoreState) acquire(op Op) []semaphoreState {
	switch op.Result {
	case OK:
		if op.OutToken <= s.Last {
			return nil
		}
		return s.grant(op.OutToken, op.mortal)
	case Rejected:
		if op.strict && s.held() < s.Limit {
			return nil
		}
		return []semaphoreState{s}
	case Unknown:
		return append([]semaphoreState{s}, s.grant(0, true)...)
	}
	return nil
}

// read is step for a read of the permits held: exactly the tokens it
// shows are held. A permit it does not show must be mortal (it expired
// unseen); a token it shows that the model does not know must be one of
// the unseen permits'.
func (s semaphoreState) read(op Op) []semaphoreState {
	var shown []int64
	if op.Result == OK {
		shown = op.OutTokens
	} else if op.Result != Rejected {
		return []semaphoreState{s}
	}
	if len(shown) > s.Limit {
		return nil
	}
	for _, token := range shown {
		next, ok := s.pin(token)
		if !ok {
			return nil
		}
		s = next
	}
	for i := s.N - 1; i >= 0; i-- {
		if slices.Contains(shown, s.Held[i].Token) {
			continue
		}
		if !s.Held[i].Mortal {
			return nil
		}
		s = s.without(i)
	}
	s.Unseen, s.UnseenAbove = 0, 0
	return []semaphoreState{s}
}

// String is the state as the HTML visualisation shows it.
func (s semaphoreState) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %d held", s.Limit)
	if s.held() == 0 {
		b.WriteString(" none")
	}
	for _, p := range s.Held[:s.N] {
		mark := ""
		if p.Mortal {
			mark = "†"
		}
		fmt.Fprintf(&b, " %d%s", p.Token, mark)
	}
	for range s.Unseen {
		b.WriteString(" ?")
	}
	fmt.Fprintf(&b, " last %d", s.Last)
	return b.String()
}

// SemaphoreModel is the sequential specification of one semaphore, for
// porcupine, built as LockModel is and partitioned by semaphore. Never
// more than Limit permits held at once; each grant's token above every
// earlier one; renew and release succeed only for a permit held; a read
// shows exactly the permits held. Expiry is as LockModel's: a permit may
// end unseen, but only one the trail shows expired (ResolvePermits marks
// them), and a refusal of such a permit's token proves it has; a permit
// the trail shows released was held until a release of it took effect,
// so a refusal of its token before then, or a grant while it and Limit-1
// others are held, is a violation. An acquire refused as full is checked
// only when no waiter can have been ahead of it (see acquire).
func SemaphoreModel() porcupine.Model { return newModel(semaphoreState{}) }

// CheckSemaphores checks the semaphore ops of ops against SemaphoreModel,
// as CheckLinearizable checks the lock ops. Feed it ResolvePermits's
// ops: without the trail's word, every permit is immortal and every
// refusal unchecked.
func CheckSemaphores(ops []Op, timeout time.Duration, htmlPath string) (ok bool, err error) {
	for _, op := range ops {
		if op.OnSemaphore() && (op.Limit > MaxModelLimit || op.OutLimit > MaxModelLimit) {
			return false, fmt.Errorf("op %d: semaphore %q has limit %d; SemaphoreModel checks limits up to %d",
				op.ID, op.Semaphore, max(op.Limit, op.OutLimit), MaxModelLimit)
		}
	}
	return CheckModel(SemaphoreModel(), Op.OnSemaphore, ops, timeout, htmlPath)
}

// describeSemaphoreOp reads like "sem-acquire s3-1 wait 1s → 4711".
func describeSemaphoreOp(op Op) string {
	out := describeResult(op)
	switch op.Kind {
	case SemAcquire:
		return describeAcquire(op, op.Owner)
	case SemGet:
		switch op.Result {
		case OK:
			return fmt.Sprintf("sem-get → %v", op.OutTokens)
		case Rejected:
			return "sem-get → none"
		}
	}
	if op.Token != 0 {
		return fmt.Sprintf("%s %d → %s", op.Kind, op.Token, out)
	}
	return fmt.Sprintf("%s → %s", op.Kind, out)
}
