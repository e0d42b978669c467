package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// The HTTP plumbing the lock, election, semaphore and read/write lock ops
// share: an acquire is a POST of the owner, the TTL, the wait (when
// waiting) and the at-least window (when d has one); a renew a POST of the token to path/renew; an end a DELETE
// of path?token=.

// acquireAt sends op, an acquire, to path with body plus op's owner under
// ownerKey, d's TTL and MinHold and wait (0: not waiting), and records
// the wait and the window in op.
func (d *Driver) acquireAt(ctx context.Context, op check.Op, path string, body map[string]any, ownerKey string, wait time.Duration) (check.Op, []byte) {
	body[ownerKey], body["ttl"] = op.Owner, d.TTL.String()
	if wait > 0 {
		op.Wait = wait.String()
		body["wait"] = op.Wait
	}
	if d.MinHold > 0 {
		op.MinHold = d.MinHold.String()
		body["min_hold"] = op.MinHold
	}
	return d.do(ctx, op, http.MethodPost, path, body)
}

// renewAt extends the lease of op.Token at path/renew.
func (d *Driver) renewAt(ctx context.Context, op check.Op, path string) (check.Op, []byte) {
	return d.do(ctx, op, http.MethodPost, path+"/renew", map[string]any{"token": op.Token})
}

// endAt gives op.Token up at path, refused with any of the codes rejected.
func (d *Driver) endAt(ctx context.Context, op check.Op, path string, rejected ...string) check.Op {
	op, _ = d.do(ctx, op, http.MethodDelete, fmt.Sprintf("%s?token=%d", path, op.Token), nil)
	return d.H.Add(classify(op, rejected...))
}

// holdAnswer is the part of a Permit or an rwlock Hold the ops record.
type holdAnswer struct {
	Token int64  `json:"token"`
	Limit int    `json:"limit"`
	Mode  string `json:"mode"`
}

// holdOut fills op.OutToken and op.OutLimit from an answer b that must be
// what (a Permit, a Hold), in op.Mode when op has one. An OK that is not
// one has an unknown effect, and the checker reports the op.
func holdOut(op check.Op, b []byte, what string) check.Op {
	if op.Result != check.OK {
		return op
	}
	var h holdAnswer
	if err := json.Unmarshal(b, &h); err != nil || h.Token == 0 || (op.Mode != "" && h.Mode != op.Mode) {
		op.Result, op.Err = check.Unknown, fmt.Sprintf("%s answer %q is not %s", op.Kind, b, what)
		return op
	}
	op.OutToken, op.OutLimit = h.Token, h.Limit
	return op
}

// refusedHolders fills op.OutTokens, op.OutLimit and op.OutMode from the
// holders a refusal b shows.
func refusedHolders(op check.Op, b []byte) check.Op {
	if op.Result != check.Rejected {
		return op
	}
	var p struct {
		Holders []holdAnswer `json:"holders"`
	}
	json.Unmarshal(b, &p)
	op.OutTokens, op.OutLimit, op.OutMode = holders(p.Holders)
	return op
}

// holders are the tokens of hs, ascending, their largest limit and their
// mode ("mixed" if they disagree, which RWLockModel refuses).
func holders(hs []holdAnswer) (tokens []int64, limit int, mode string) {
	for _, h := range hs {
		tokens = append(tokens, h.Token)
		limit = max(limit, h.Limit)
		if mode != "" && mode != h.Mode {
			mode = "mixed"
		} else if mode == "" {
			mode = h.Mode
		}
	}
	slices.Sort(tokens)
	return tokens, limit, mode
}
