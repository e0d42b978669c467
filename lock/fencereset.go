package lock

import (
	"context"
	"fmt"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ResetFenced removes resource's value and its largest-token record, so
// the next write with any issued token is accepted: the way back for a
// register that a wrong token (a typo, a timestamp) pushed past every real
// holder. It is an operator's action, audited as fence_reset (kind fence,
// reason in detail, actor as owner) in the same txn as the removal. It
// returns ErrNotFound when resource holds nothing.
func (e *Engine) ResetFenced(ctx context.Context, resource, reason, actor string) error {
	if err := store.CheckName("resource", resource); err != nil {
		return err
	}
	if len(reason) > MaxReasonLen {
		return invalid("reason", "must be at most %d bytes", MaxReasonLen)
	}
	mkey, vkey := e.keys.FenceMax(resource), e.keys.Fenced(resource)
	ev := Event{
		Time: store.NowUTC(), Type: EventFenceReset, Kind: KindFence, Name: resource, Owner: actor,
		Detail: reason, Credential: credentialOf(ctx),
	}
	var found bool
	octx, done := e.etcd.Op(ctx)
	defer done()
	// Either key is enough to reset: a write puts both, and a reset must
	// also clear a maximum whose value write failed.
	resp, err := e.cli.Txn(octx).
		If(clientv3.Compare(clientv3.CreateRevision(mkey), ">", 0)).
		Then(clientv3.OpDelete(mkey), clientv3.OpDelete(vkey), clientv3.OpPut(e.keys.FenceAudit(resource, newHoldID()), store.MustJSON(ev))).
		Else(clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(vkey), ">", 0)},
			[]clientv3.Op{clientv3.OpDelete(vkey), clientv3.OpPut(e.keys.FenceAudit(resource, newHoldID()), store.MustJSON(ev))},
			nil)).
		Commit()
	if err == nil {
		const valueOnlyAt = 0 // the Else branch's reset of a value without a maximum
		found = resp.Succeeded || resp.Responses[valueOnlyAt].GetResponseTxn().Succeeded
	}
	if err != nil {
		return e.etcd.Err(ctx, fmt.Sprintf("reset fenced %q", resource), err)
	}
	if !found {
		return fmt.Errorf("reset fenced %q: %w", resource, ErrNotFound)
	}
	e.metrics.recorded(EventFenceReset, 1)
	return nil
}
