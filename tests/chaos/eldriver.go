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

// leaderAnswer is the part of a Leader answer the election ops record.
type leaderAnswer struct {
	Candidate string `json:"candidate"`
	Value     string `json:"value"`
	Token     int64  `json:"token"`
	Term      int64  `json:"term"`
}

// leaderOut fills op's outcome from a Leader answer b. An OK without a
// token or a term is not a Leader: its effect is unknown, and the checker
// reports the op.
func leaderOut(op check.Op, b []byte) check.Op {
	if op.Result != check.OK {
		return op
	}
	var l leaderAnswer
	if err := json.Unmarshal(b, &l); err != nil || l.Token == 0 || l.Term == 0 {
		op.Result, op.Err = check.Unknown, fmt.Sprintf("%s answer %q is not a Leader", op.Kind, b)
		return op
	}
	op.OutToken, op.OutTerm, op.OutOwner, op.OutValue = l.Token, l.Term, l.Candidate, l.Value
	return op
}

func electionPath(election, rest string) string {
	return "/v1/elections/" + url.PathEscape(election) + rest
}

// Election values are strings, sent as JSON strings, as the fenced values
// of the lock workload are.

// Campaign asks to lead election with value, waiting in line for up
// to wait (0: refused at once while someone leads). On OK, op.OutToken and
// op.OutTerm are the leadership's.
func (d *Driver) Campaign(ctx context.Context, election, candidate, value string, wait time.Duration) check.Op {
	op, b := d.acquireAt(ctx, check.Op{Kind: check.Campaign, Election: election, Owner: candidate, Value: value},
		electionPath(election, "/campaign"), map[string]any{"value": value}, "candidate", wait)
	return d.H.Add(leaderOut(classify(op, "election_held"), b))
}

// Proclaim sets the value of the leadership of token.
func (d *Driver) Proclaim(ctx context.Context, election string, token int64, value string) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.Proclaim, Election: election, Token: token, Value: value}, http.MethodPost,
		electionPath(election, "/proclaim"), map[string]any{"token": token, "value": value})
	return d.H.Add(leaderOut(classify(op, "no_leader", "token_mismatch"), b))
}

// RenewLeader extends the leadership of token.
func (d *Driver) RenewLeader(ctx context.Context, election string, token int64) check.Op {
	op, b := d.renewAt(ctx, check.Op{Kind: check.RenewLeader, Election: election, Token: token}, electionPath(election, ""))
	return d.H.Add(leaderOut(classify(op, "no_leader", "token_mismatch"), b))
}

// Resign ends the leadership of token.
func (d *Driver) Resign(ctx context.Context, election string, token int64) check.Op {
	return d.endAt(ctx, check.Op{Kind: check.Resign, Election: election, Token: token}, electionPath(election, "/leader"), "no_leader", "token_mismatch")
}

// Leader reads who leads election; Rejected means nobody does.
func (d *Driver) Leader(ctx context.Context, election string) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.Leader, Election: election}, http.MethodGet, electionPath(election, ""), nil)
	return d.H.Add(readResult(leaderOut(classify(op, "no_leader"), b)))
}

// LedFPut writes value to the fenced resource named like election, with
// token and the election as its guard: it needs token to lead.
func (d *Driver) LedFPut(ctx context.Context, election string, token int64, value string) check.Op {
	op, _ := d.do(ctx, check.Op{Kind: check.FPut, Election: election, Token: token, Value: value}, http.MethodPut,
		"/v1/fenced/"+url.PathEscape(election), map[string]any{"token": token, "value": value, "election": election})
	return d.H.Add(classify(op, "stale_token", "not_holder"))
}

// LedFGet reads the fenced resource named like election.
func (d *Driver) LedFGet(ctx context.Context, election string) check.Op {
	op := d.fget(ctx, check.Op{Kind: check.FGet, Election: election})
	return d.H.Add(op)
}
