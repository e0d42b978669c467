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

func semaphorePath(semaphore, rest string) string {
	return "/v1/semaphores/" + url.PathEscape(semaphore) + rest
}

// permitAnswer is the part of a Permit the semaphore ops record.
type permitAnswer struct {
	Token int64 `json:"token"`
	Limit int   `json:"limit"`
}

// permitOut fills op.OutToken from a Permit answer b. An OK without a
// token is not a Permit: its effect is unknown, and the checker reports
// the op.
func permitOut(op Op, b []byte) Op {
	if op.Result != OK {
		return op
	}
	var p permitAnswer
	if err := json.Unmarshal(b, &p); err != nil || p.Token == 0 {
		op.Result, op.Err = Unknown, fmt.Sprintf("%s answer %q is not a Permit", op.Kind, b)
		return op
	}
	op.OutToken, op.OutLimit = p.Token, p.Limit
	return op
}

// AcquirePermit asks for one of the limit permits of semaphore, waiting
// in line for up to wait (0: refused at once while every permit is held).
// On OK, op.OutToken is the permit's token; refused, op.OutTokens and
// op.OutLimit are the holders the answer shows.
func (d *Driver) AcquirePermit(ctx context.Context, semaphore, owner string, limit int, wait time.Duration) Op {
	op := Op{Kind: SemAcquire, Semaphore: semaphore, Owner: owner, Limit: limit}
	body := map[string]any{"limit": limit, "owner": owner, "ttl": d.TTL.String()}
	if wait > 0 {
		op.Wait = wait.String()
		body["wait"] = op.Wait
	}
	op, b := d.do(ctx, op, http.MethodPost, semaphorePath(semaphore, ""), body)
	op = permitOut(classify(op, "semaphore_full"), b)
	if op.Result == Rejected {
		var p struct {
			Holders []permitAnswer `json:"holders"`
		}
		json.Unmarshal(b, &p)
		op.OutTokens, op.OutLimit = holderTokens(p.Holders)
	}
	return d.H.Add(op)
}

// holderTokens are the tokens of hs, ascending, and their limit.
func holderTokens(hs []permitAnswer) (tokens []int64, limit int) {
	for _, h := range hs {
		tokens = append(tokens, h.Token)
		limit = max(limit, h.Limit)
	}
	slices.Sort(tokens)
	return tokens, limit
}

// RenewPermit extends the lease of the permit token.
func (d *Driver) RenewPermit(ctx context.Context, semaphore string, token int64) Op {
	op, b := d.do(ctx, Op{Kind: SemRenew, Semaphore: semaphore, Token: token}, http.MethodPost,
		semaphorePath(semaphore, "/renew"), map[string]any{"token": token})
	return d.H.Add(permitOut(classify(op, "not_held"), b))
}

// ReleasePermit gives the permit token back.
func (d *Driver) ReleasePermit(ctx context.Context, semaphore string, token int64) Op {
	op, _ := d.do(ctx, Op{Kind: SemRelease, Semaphore: semaphore, Token: token}, http.MethodDelete,
		fmt.Sprintf("%s?token=%d", semaphorePath(semaphore, ""), token), nil)
	return d.H.Add(classify(op, "not_held"))
}

// GetSemaphore reads the permits held; Rejected means none is.
func (d *Driver) GetSemaphore(ctx context.Context, semaphore string) Op {
	op, b := d.do(ctx, Op{Kind: SemGet, Semaphore: semaphore}, http.MethodGet, semaphorePath(semaphore, ""), nil)
	op = classify(op, "not_held")
	if op.Result == OK {
		var s struct {
			Limit   int            `json:"limit"`
			Holders []permitAnswer `json:"holders"`
		}
		if err := json.Unmarshal(b, &s); err != nil || len(s.Holders) == 0 {
			op.Result, op.Err = Unknown, fmt.Sprintf("semaphore answer %q holds no permit", b)
		}
		op.OutTokens, _ = holderTokens(s.Holders)
		op.OutLimit = s.Limit
	}
	return d.H.Add(readResult(op))
}
