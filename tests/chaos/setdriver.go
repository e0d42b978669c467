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

// setAnswer is the part of a LockSet the set ops record and check.
type setAnswer struct {
	Names []string `json:"names"`
	Token int64    `json:"token"`
	Locks []struct {
		Name  string   `json:"name"`
		Token int64    `json:"token"`
		Set   []string `json:"set"`
	} `json:"locks"`
}

// setOut fills op.OutToken from an answer b that must be the LockSet of
// op.Set: its names in op's order, a token, and every lock of it, in that
// order, with the token and naming the set. An OK that is not one has an
// unknown effect, and the checker reports the op.
func setOut(op check.Op, b []byte) check.Op {
	if op.Result != check.OK {
		return op
	}
	var s setAnswer
	err := json.Unmarshal(b, &s)
	ok := err == nil && s.Token != 0 && slices.Equal(s.Names, op.Set) && len(s.Locks) == len(op.Set)
	for i := 0; ok && i < len(s.Locks); i++ {
		l := s.Locks[i]
		ok = l.Name == op.Set[i] && l.Token == s.Token && slices.Equal(l.Set, op.Set)
	}
	if !ok {
		op.Result, op.Err = check.Unknown, fmt.Sprintf("%s answer %q is not the LockSet of %v", op.Kind, b, op.Set)
		return op
	}
	op.OutToken = s.Token
	return op
}

// AcquireSet asks for every lock of names at once, waiting in each one's
// queue for up to wait (0: refused at once while one of them is held or
// waited for). On OK, op.OutToken is the set's token; refused,
// op.OutHolders are the holders the answer shows.
func (d *Driver) AcquireSet(ctx context.Context, names []string, owner string, wait time.Duration) check.Op {
	op, b := d.acquireAt(ctx, check.Op{Kind: check.SetAcquire, Set: names, Owner: owner},
		"/v1/locksets", map[string]any{"names": names}, "owner", wait)
	op = setOut(classify(op, "lock_held"), b)
	if op.Result == check.Rejected {
		var p struct {
			Holders []struct {
				Name  string `json:"name"`
				Token int64  `json:"token"`
			} `json:"holders"`
		}
		json.Unmarshal(b, &p)
		for _, h := range p.Holders {
			op.OutHolders = append(op.OutHolders, check.LockHolder{Lock: h.Name, Token: h.Token})
		}
	}
	return d.H.Add(op)
}

// RenewSet extends the lease of the set names holds with token.
func (d *Driver) RenewSet(ctx context.Context, names []string, token int64) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.SetRenew, Set: names, Token: token}, http.MethodPost,
		"/v1/locksets/renew", map[string]any{"names": names, "token": token})
	op = setOut(classify(op, "not_held", "token_mismatch"), b)
	return d.H.Add(op)
}

// ReleaseSet ends every lock of names still held with token.
func (d *Driver) ReleaseSet(ctx context.Context, names []string, token int64) check.Op {
	op, _ := d.do(ctx, check.Op{Kind: check.SetRelease, Set: names, Token: token}, http.MethodPost,
		"/v1/locksets/release", map[string]any{"names": names, "token": token})
	return d.H.Add(classify(op, "not_held", "token_mismatch"))
}
