package core

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Transfer ends token's hold of name (by typ, with detail) by handing it
// to the oldest waiter that chosen picks, ahead of the queue, and returns
// the hold that begins. It is a release's handover (handOverOps) to a
// waiter of the holder's choosing: one txn ends the hold, begins the
// waiter's at the same revision, with its own token, and deletes its
// entry; the compares of that handover are the whole txn's, so the hold
// ends only by it. hold.ErrCandidateNotWaiting when no waiter is picked, or the one
// picked left before the txn; a hold inside its at-least window is not
// handed on (*hold.DelayedError, until the window's end).
//
// Only a thing with one seat is transferred (an election, a lock): a
// seat's waiter is granted a seat of the releaser's choosing
// (handOverPlan), which a pick could not respect.
func (e *Engine) Transfer(ctx context.Context, name string, token int64, chosen func(hold.WaiterRecord) bool, typ store.EventType, detail string) (*hold.Lock, error) {
	hr, _, err := e.ReadHold(ctx, name, token, false)
	if err != nil {
		return nil, err
	}
	if !hold.MayActOn(ctx, hr.Credential) {
		return nil, fmt.Errorf("the hold with token %d was acquired by another credential: %w", token, hold.ErrNotOwner)
	}
	if end := hr.WindowEnd(); end.After(time.Now()) {
		_, thing := store.ThingOf(name)
		return nil, &hold.DelayedError{Name: thing, Until: end, Cause: store.EventReleased}
	}
	head, err := e.pickWaiter(ctx, name, chosen)
	if err != nil {
		return nil, err
	}
	e.Holds.Take(name, token) // the cache must not end it again
	ev := hold.EndEvent(hr, ctx, name, token, typ, detail)
	var t store.Txn
	for _, c := range e.handOverCmps(name, token, hr, head) {
		t.If(c)
	}
	end := e.EndTxn(&t, name, token, hr, ev, head, 0)
	var resp *clientv3.TxnResponse
	err = e.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = e.Batch.TxnUrgent(octx, t.Cmps, t.Then, nil)
		return err
	})
	switch {
	case err != nil && store.IsLeaseNotFound(err):
		return nil, fmt.Errorf("the waiter's lease ended: %w", hold.ErrCandidateNotWaiting)
	case err != nil:
		return nil, e.Etcd.Err(ctx, "transfer hold", err)
	case !resp.Succeeded:
		if _, err := e.HeldWith(ctx, name, token); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("the waiter left: %w", hold.ErrCandidateNotWaiting)
	case end.HandedOver(resp) != 1:
		return nil, fmt.Errorf("transfer of %s: the handover did not apply", name) // its compares were the txn's
	}
	e.ended(name, typ, hr, 1)
	g := hold.Begun(head.Grant, ev.Time, head.since)
	if kind, _ := store.ThingOf(name); kind == store.KindElection {
		g.Term = hr.Term + 1 // as handOverOps put it
	}
	l := hold.ToLock(g, name, resp.Header.Revision)
	if id, ok := store.ParseLeaseHex(g.Lease); ok {
		e.FillLease(ctx, l, id)
	}
	return l, nil
}

// pickWaiter is the oldest entry of name's queue that chosen picks and
// that asks to be handed the hold. The queue is read whole, oldest first:
// it holds at most Config.MaxWaitersPerLock entries.
func (e *Engine) pickWaiter(ctx context.Context, name string, chosen func(hold.WaiterRecord) bool) (*QueueHead, error) {
	octx, done := e.Etcd.Op(ctx)
	resp, err := e.Cli.Get(octx, e.Keys.Queue(name), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	done()
	if err != nil {
		return nil, e.Etcd.Err(ctx, "read queue", err)
	}
	for i, kv := range resp.Kvs {
		var wr hold.WaiterRecord
		if json.Unmarshal(kv.Value, &wr) != nil || !chosen(wr) {
			continue
		}
		if h := queueHeadOf(resp.Kvs[i : i+1]); h != nil {
			return h, nil
		}
	}
	return nil, hold.ErrCandidateNotWaiting
}
