package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

func rwlockPath(rwlock, rest string) string {
	return "/v1/rwlocks/" + url.PathEscape(rwlock) + rest
}

// AcquireRW asks for a hold of rwlock in mode ("read" or "write"),
// waiting in line for up to wait (0: refused at once while a hold or a
// waiter is in the way). On OK, op.OutToken is the hold's token; refused,
// op.OutTokens and op.OutMode are the holders the answer shows.
func (d *Driver) AcquireRW(ctx context.Context, rwlock, owner, mode string, wait time.Duration) check.Op {
	op, b := d.acquireAt(ctx, check.Op{Kind: check.RWAcquire, RWLock: rwlock, Owner: owner, Mode: mode},
		rwlockPath(rwlock, ""), map[string]any{"mode": mode}, "owner", wait)
	op = holdOut(classify(op, "lock_held"), b, "a "+mode+" Hold")
	return d.H.Add(refusedHolders(op, b))
}

// RenewRW extends the lease of the hold token.
func (d *Driver) RenewRW(ctx context.Context, rwlock string, token int64) check.Op {
	op, b := d.renewAt(ctx, check.Op{Kind: check.RWRenew, RWLock: rwlock, Token: token}, rwlockPath(rwlock, ""))
	return d.H.Add(holdOut(classify(op, "not_held"), b, "a Hold"))
}

// ReleaseRW ends the hold token.
func (d *Driver) ReleaseRW(ctx context.Context, rwlock string, token int64) check.Op {
	return d.endAt(ctx, check.Op{Kind: check.RWRelease, RWLock: rwlock, Token: token}, rwlockPath(rwlock, ""), "not_held")
}

// GetRW reads the holds of rwlock; Rejected means none is held.
func (d *Driver) GetRW(ctx context.Context, rwlock string) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.RWGet, RWLock: rwlock}, http.MethodGet, rwlockPath(rwlock, ""), nil)
	op = classify(op, "not_held")
	if op.Result == check.OK {
		var s struct {
			Mode    string       `json:"mode"`
			Holders []holdAnswer `json:"holders"`
			Waiters []struct {
				Owner string `json:"owner"`
			} `json:"waiters"`
		}
		if err := json.Unmarshal(b, &s); err != nil || len(s.Holders) == 0 {
			op.Result, op.Err = check.Unknown, fmt.Sprintf("rwlock answer %q holds nothing", b)
		}
		var mode string
		op.OutTokens, _, mode = holders(s.Holders)
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
func (d *Driver) RWFPut(ctx context.Context, rwlock string, token int64, value string) check.Op {
	op, _ := d.do(ctx, check.Op{Kind: check.FPut, RWLock: rwlock, Token: token, Value: value}, http.MethodPut,
		"/v1/fenced/"+url.PathEscape(rwlock), map[string]any{"token": token, "value": value, "rwlock": rwlock})
	return d.H.Add(classify(op, "stale_token", "not_holder"))
}

// RWFGet reads the fenced resource named like rwlock.
func (d *Driver) RWFGet(ctx context.Context, rwlock string) check.Op {
	return d.H.Add(d.fget(ctx, check.Op{Kind: check.FGet, RWLock: rwlock}))
}
