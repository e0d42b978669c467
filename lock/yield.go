package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A request to yield asks the holds of a thing to give way; it ends
// nothing. What it writes is the request itself, a pending audit record
// per hold asked (audit/<key>/<id>/y, lock/doc.go), which the trail turns
// into a yield_requested event of the thing (trail/histkeys.go) that its
// holders' event streams carry. Each holder decides whether to release.

// MaxYieldHolds bounds the holds one request to yield asks, the oldest
// first: each is one compare and one put of the request's txn, and etcd
// takes at most 128 of either by default (--max-txn-ops).
const MaxYieldHolds = 128

// YieldRequest asks the holds of the thing of Kind named Name to yield.
type YieldRequest struct {
	// Kind is KindLock, KindElection, KindSemaphore or KindRWLock.
	Kind EventKind
	Name string
	// Owner names who asks, as a holder's owner names it; Reason says
	// why (at most MaxReasonLen bytes). Both go to the trail.
	Owner  string
	Reason string
	// Token, when not 0, asks only the hold of that token: a semaphore's
	// permit or a read/write lock's hold out of several.
	Token int64
}

// YieldRequested is a request to yield as the trail records it.
type YieldRequested struct {
	Kind   EventKind
	Name   string
	Owner  string
	Reason string
	// Tokens are the holds asked, in token order; Revision is the one
	// at which the request was recorded, and RequestedAt its events' time.
	Tokens      []int64
	Revision    int64
	RequestedAt time.Time
}

// RequestYield records a request to the holds of req's thing to yield:
// one yield_requested event per hold, each naming its token, the
// caller's credential, req.Owner and req.Reason, all at one revision. The
// txn compares that every hold asked is still current, so a request
// never reaches a hold that has ended, and writes nothing when none is
// held (with req.Token, when that token holds nothing): ErrNotHeld
// (ErrNoLeader for an election).
func (e *Engine) RequestYield(ctx context.Context, req YieldRequest) (*YieldRequested, error) {
	if err := checkYield(req); err != nil {
		return nil, err
	}
	key := store.KeyName(req.Kind, req.Name)
	for range core.MaxImmediateRetries {
		holds, err := yieldHolds(ctx, e.core, key, req.Token)
		if err != nil {
			return nil, yieldErr(req, err)
		}
		if len(holds) == 0 {
			return nil, yieldErr(req, ErrNotHeld)
		}
		y := &YieldRequested{Kind: req.Kind, Name: req.Name, Owner: req.Owner, Reason: req.Reason, RequestedAt: store.NowUTC()}
		var cmps []clientv3.Cmp
		var puts []clientv3.Op
		for _, kv := range holds {
			hr, err := store.DecodeHolder(kv)
			if err != nil {
				return nil, err
			}
			seat := string(kv.Key[len(e.core.Keys.Locks()):])
			ev := store.HoldEvent(seat, EventYieldRequested)
			ev.Time, ev.Token, ev.Owner, ev.Credential, ev.Reason = y.RequestedAt, kv.ModRevision, req.Owner, hold.CredentialOf(ctx), req.Reason
			ev.Term, ev.Mode = hr.Term, hr.Mode
			// The compare makes the request reach the hold read here or
			// nothing: a hold that ended meanwhile is not asked, and
			// neither is its successor under the same key.
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
			// One ID per record: each record is an entry of the thing's
			// index at this revision, and entries are named by their ID.
			puts = append(puts, clientv3.OpPut(e.core.Keys.LockAudit(seat)+hold.NewHoldID()+"/y", store.MustJSON(ev)))
			y.Tokens = append(y.Tokens, kv.ModRevision)
		}
		octx, done := e.core.Etcd.Op(ctx)
		resp, err := e.core.Cli.Txn(octx).If(cmps...).Then(puts...).Commit()
		done()
		if err != nil {
			return nil, yieldErr(req, e.core.Etcd.Err(ctx, "request to yield", err))
		}
		if resp.Succeeded {
			e.core.Metrics.Recorded(EventYieldRequested, len(puts))
			y.Revision = resp.Header.Revision
			return y, nil
		}
		// A hold ended or began meanwhile: ask whatever holds it now.
	}
	return nil, yieldErr(req, fmt.Errorf("its holds change too fast: %w", ErrUnavailable))
}

// checkYield validates req as the contract bounds it (docs/API.md).
func checkYield(req YieldRequest) error {
	if !slices.Contains([]EventKind{KindLock, KindElection, KindSemaphore, KindRWLock}, req.Kind) {
		return hold.Invalid("kind", "%q takes no request to yield (want lock, election, semaphore or rwlock)", req.Kind)
	}
	if err := store.CheckName("name", req.Name); err != nil {
		return err
	}
	if err := hold.CheckOwner(req.Owner); err != nil {
		return err
	}
	if len(req.Reason) > MaxReasonLen {
		return hold.Invalid("reason", "must be at most %d bytes", MaxReasonLen)
	}
	if req.Token < 0 {
		return hold.Invalid("token", "must be a positive fencing token")
	}
	return nil
}

// yieldHolds reads, through c, the lock keys of the holds of the thing kept under
// key: its one key, or its seats', the oldest MaxYieldHolds of them; with
// token not 0, that hold's alone. None is held: no key and no error.
func yieldHolds(ctx context.Context, c *core.Engine, key string, token int64) ([]*mvccpb.KeyValue, error) {
	if token != 0 || !store.HasSeats(key) {
		seat, err := c.SeatOf(ctx, key, token)
		var kv *mvccpb.KeyValue
		if err == nil {
			kv, err = c.GetLock(ctx, seat)
		}
		switch {
		case errors.Is(err, ErrNotHeld):
			return nil, nil
		case err != nil:
			return nil, err
		case token != 0 && kv.ModRevision != token:
			return nil, nil
		}
		return []*mvccpb.KeyValue{kv}, nil
	}
	octx, done := c.Etcd.Op(ctx)
	resp, err := c.Cli.Get(octx, store.SeatsOf(c.Keys.Locks(), key), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend), clientv3.WithLimit(MaxYieldHolds))
	done()
	if err != nil {
		return nil, c.Etcd.Err(ctx, "read holds", err)
	}
	return resp.Kvs, nil
}

// yieldErr wraps err with the request it refuses, in its kind's words.
func yieldErr(req YieldRequest, err error) error {
	if req.Kind == KindElection {
		return electionErr("ask to yield the leadership of", req.Name, err)
	}
	var ie *InvalidError
	if errors.As(err, &ie) {
		return err
	}
	return fmt.Errorf("ask %s %q to yield: %w", req.Kind, req.Name, err)
}
