package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

func rwlockPath(rwlock, rest string) string {
	return "/v1/rwlocks/" + url.PathEscape(rwlock) + rest
}

// rwHoldAnswer is the part of a Hold the rw ops record.
type rwHoldAnswer struct {
	Token int64  `json:"token"`
	Mode  string `json:"mode"`
}

// rwHoldOut fills op.OutToken from a Hold answer b, whose mode must be the
// one asked for (on an acquire). An OK without a token is not a Hold: its
// effect is unknown, and the checker reports the op.
func rwHoldOut(op Op, b []byte) Op {
	if op.Result != OK {
		return op
	}
	var h rwHoldAnswer
	if err := json.Unmarshal(b, &h); err != nil || h.Token == 0 || (op.Mode != "" && h.Mode != op.Mode) {
		op.Result, op.Err = Unknown, fmt.Sprintf("%s answer %q is not a %s Hold", op.Kind, b, op.Mode)
		return op
	}
	op.OutToken = h.Token
	return op
}

// rwHolders are the tokens of hs, ascending, and their mode ("mixed" if
// they disagree, which RWLockModel refuses).
func rwHolders(hs []rwHoldAnswer) (tokens []int64, mode string) {
	for _, h := range hs {
		tokens = append(tokens, h.Token)
		if mode != "" && mode != h.Mode {
			mode = "mixed"
		} else if mode == "" {
			mode = h.Mode
		}
	}
	slices.Sort(tokens)
	return tokens, mode
}

// AcquireRW asks for a hold of rwlock in mode ("read" or "write"),
// waiting in line for up to wait (0: refused at once while a hold or a
// waiter is in the way). On OK, op.OutToken is the hold's token; refused,
// op.OutTokens and op.OutMode are the holders the answer shows.
func (d *Driver) AcquireRW(ctx context.Context, rwlock, owner, mode string, wait time.Duration) Op {
	op := Op{Kind: RWAcquire, RWLock: rwlock, Owner: owner, Mode: mode}
	body := map[string]any{"mode": mode, "owner": owner, "ttl": d.TTL.String()}
	if wait > 0 {
		op.Wait = wait.String()
		body["wait"] = op.Wait
	}
	op, b := d.do(ctx, op, http.MethodPost, rwlockPath(rwlock, ""), body)
	op = rwHoldOut(classify(op, "lock_held"), b)
	if op.Result == Rejected {
		var p struct {
			Holders []rwHoldAnswer `json:"holders"`
		}
		json.Unmarshal(b, &p)
		op.OutTokens, op.OutMode = rwHolders(p.Holders)
	}
	return d.H.Add(op)
}

// RenewRW extends the lease of the hold token.
func (d *Driver) RenewRW(ctx context.Context, rwlock string, token int64) Op {
	op, b := d.do(ctx, Op{Kind: RWRenew, RWLock: rwlock, Token: token}, http.MethodPost,
		rwlockPath(rwlock, "/renew"), map[string]any{"token": token})
	return d.H.Add(rwHoldOut(classify(op, "not_held"), b))
}

// ReleaseRW ends the hold token.
func (d *Driver) ReleaseRW(ctx context.Context, rwlock string, token int64) Op {
	op, _ := d.do(ctx, Op{Kind: RWRelease, RWLock: rwlock, Token: token}, http.MethodDelete,
		fmt.Sprintf("%s?token=%d", rwlockPath(rwlock, ""), token), nil)
	return d.H.Add(classify(op, "not_held"))
}

// GetRW reads the holds of rwlock; Rejected means none is held.
func (d *Driver) GetRW(ctx context.Context, rwlock string) Op {
	op, b := d.do(ctx, Op{Kind: RWGet, RWLock: rwlock}, http.MethodGet, rwlockPath(rwlock, ""), nil)
	op = classify(op, "not_held")
	if op.Result == OK {
		var s struct {
			Mode    string         `json:"mode"`
			Holders []rwHoldAnswer `json:"holders"`
			Waiters []struct {
				Owner string `json:"owner"`
			} `json:"waiters"`
		}
		if err := json.Unmarshal(b, &s); err != nil || len(s.Holders) == 0 {
			op.Result, op.Err = Unknown, fmt.Sprintf("rwlock answer %q holds nothing", b)
		}
		var mode string
		op.OutTokens, mode = rwHolders(s.Holders)
		op.OutMode = s.Mode
		for _, w := range s.Waiters {
			op.OutWaiters = append(op.OutWaiters, w.Owner)
		}
		if mode != s.Mode {
			op.OutMode = "mixed" // holds of another mode than the lock's: RWLockModel refuses it
		}
	}
	return d.H.Add(readResult(op))
}

// RWFPut writes value to the fenced resource named like rwlock, with
// token and the rwlock as its guard: it needs token to be the rwlock's
// write hold.
func (d *Driver) RWFPut(ctx context.Context, rwlock string, token int64, value string) Op {
	op, _ := d.do(ctx, Op{Kind: FPut, RWLock: rwlock, Token: token, Value: value}, http.MethodPut,
		"/v1/fenced/"+url.PathEscape(rwlock), map[string]any{"token": token, "value": value, "rwlock": rwlock})
	return d.H.Add(classify(op, "stale_token", "not_holder"))
}

// RWFGet reads the fenced resource named like rwlock.
func (d *Driver) RWFGet(ctx context.Context, rwlock string) Op {
	return d.H.Add(d.fget(ctx, Op{Kind: FGet, RWLock: rwlock}))
}
