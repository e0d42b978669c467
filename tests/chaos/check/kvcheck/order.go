package kvcheck

import (
	"fmt"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// CheckKeyOrder checks what global revisions and fencing promise of the
// key ops of ops, across keys and in real time, with no trail: a put's
// revision is above every revision an op that returned before it was
// called had seen, and no two puts share one; a read that finds a key
// missing reads at a revision no lower than those; and a put fenced by a
// lock's token never succeeds once that token is stale, that is after a
// grant of the lock with a higher token, or a release of that token,
// returned. It returns one line per violation.
func CheckKeyOrder(ops []check.Op) []string {
	c := newClock(ops)
	var problems []string
	puts := map[int64]check.Op{}
	for _, op := range ops {
		s, ok := seenBy(op, nil)
		if !ok || !s.exact {
			continue
		}
		prior := c.before(op.Call)
		switch {
		case op.Kind == check.KVPut:
			if other, dup := puts[s.rev]; dup {
				problems = append(problems, fmt.Sprintf("kv-put op %d (key %q) and kv-put op %d (key %q) both took effect at revision %d",
					other.ID, other.Key, op.ID, op.Key, s.rev))
			}
			puts[s.rev] = op
			if s.rev <= prior.rev {
				problems = append(problems, fmt.Sprintf("kv-put op %d (key %q) called at %s took effect at revision %d, but %s had returned before, having seen revision %d",
					op.ID, op.Key, time.Duration(op.Call), s.rev, describe(prior.op), prior.rev))
			}
		case s.rev < prior.rev:
			problems = append(problems, fmt.Sprintf("%s op %d (key %q) called at %s found the key missing at revision %d, but %s had returned before, having seen revision %d",
				op.Kind, op.ID, op.Key, time.Duration(op.Call), s.rev, describe(prior.op), prior.rev))
		}
	}
	return append(problems, staleFencedPuts(ops)...)
}

// staleFencedPuts checks the fenced puts that took effect against the
// lock ops of their fences, in real time.
func staleFencedPuts(ops []check.Op) []string {
	lockOps := map[string][]check.Op{}
	for _, op := range ops {
		if (op.Kind == check.Acquire || op.Kind == check.Release) && op.Result == check.OK && op.Key == "" {
			lockOps[op.Lock] = append(lockOps[op.Lock], op)
		}
	}
	var problems []string
	for _, op := range ops {
		if op.Kind != check.KVPut || op.Lock == "" || op.Result != check.OK {
			continue
		}
		for _, l := range lockOps[op.Lock] {
			if l.Return >= op.Call {
				continue
			}
			if l.Kind == check.Acquire && l.OutToken > op.Token {
				problems = append(problems, fmt.Sprintf("kv-put op %d (key %q) fenced by lock %q token %d was accepted at revision %d, but acquire op %d had been granted token %d at %s, before it was called at %s",
					op.ID, op.Key, op.Lock, op.Token, op.OutRevision, l.ID, l.OutToken, time.Duration(l.Return), time.Duration(op.Call)))
			}
			if l.Kind == check.Release && l.Token == op.Token {
				problems = append(problems, fmt.Sprintf("kv-put op %d (key %q) fenced by lock %q token %d was accepted at revision %d, but release op %d had ended that hold at %s, before it was called at %s",
					op.ID, op.Key, op.Lock, op.Token, op.OutRevision, l.ID, time.Duration(l.Return), time.Duration(op.Call)))
			}
		}
	}
	return problems
}

// describe names op in a problem: "kv-get op 12 (key "a", client 3)".
func describe(op check.Op) string {
	what := fmt.Sprintf("key %q", op.Key)
	if op.Key == "" {
		what = fmt.Sprintf("lock %q", op.Lock)
	}
	return fmt.Sprintf("%s op %d (%s, client %d)", op.Kind, op.ID, what, op.Client)
}
