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

func semaphorePath(semaphore, rest string) string {
	return "/v1/semaphores/" + url.PathEscape(semaphore) + rest
}

// AcquirePermit asks for one of the limit permits of semaphore, waiting
// in line for up to wait (0: refused at once while every permit is held).
// On OK, op.OutToken is the permit's token; refused, op.OutTokens and
// op.OutLimit are the holders the answer shows.
func (d *Driver) AcquirePermit(ctx context.Context, semaphore, owner string, limit int, wait time.Duration) check.Op {
	op, b := d.acquireAt(ctx, check.Op{Kind: check.SemAcquire, Semaphore: semaphore, Owner: owner, Limit: limit},
		semaphorePath(semaphore, ""), map[string]any{"limit": limit}, "owner", wait)
	op = holdOut(classify(op, "semaphore_full"), b, "a Permit")
	return d.H.Add(refusedHolders(op, b))
}

// RenewPermit extends the lease of the permit token.
func (d *Driver) RenewPermit(ctx context.Context, semaphore string, token int64) check.Op {
	op, b := d.renewAt(ctx, check.Op{Kind: check.SemRenew, Semaphore: semaphore, Token: token}, semaphorePath(semaphore, ""))
	return d.H.Add(holdOut(classify(op, "not_held"), b, "a Permit"))
}

// ReleasePermit gives the permit token back.
func (d *Driver) ReleasePermit(ctx context.Context, semaphore string, token int64) check.Op {
	return d.endAt(ctx, check.Op{Kind: check.SemRelease, Semaphore: semaphore, Token: token}, semaphorePath(semaphore, ""), "not_held")
}

// GetSemaphore reads the permits held; Rejected means none is.
func (d *Driver) GetSemaphore(ctx context.Context, semaphore string) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.SemGet, Semaphore: semaphore}, http.MethodGet, semaphorePath(semaphore, ""), nil)
	op = classify(op, "not_held")
	if op.Result == check.OK {
		var s struct {
			Limit   int          `json:"limit"`
			Holders []holdAnswer `json:"holders"`
		}
		if err := json.Unmarshal(b, &s); err != nil || len(s.Holders) == 0 {
			op.Result, op.Err = check.Unknown, fmt.Sprintf("semaphore answer %q holds no permit", b)
		}
		op.OutTokens, _, _ = holders(s.Holders)
		op.OutLimit = s.Limit
	}
	return d.H.Add(readResult(op))
}
