package fence

import (
	"context"
	"fmt"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Reset removes resource's value and its largest-token record, so
// the next write with any issued token is accepted: the way back for a
// register that a wrong token (a typo, a timestamp) pushed past every real
// holder. It is an operator's action, audited as fence_reset (kind fence,
// reason in detail, actor as owner, credential as the event's) in the
// same txn as the removal. It returns ErrNotFound when resource holds
// nothing.
func (r *Registers) Reset(ctx context.Context, resource, reason, actor, credential string) error {
	if err := store.CheckName("resource", resource); err != nil {
		return err
	}
	if len(reason) > store.MaxReasonLen {
		return store.Invalid("reason", "must be at most %d bytes", store.MaxReasonLen)
	}
	mkey, vkey := r.keys.FenceMax(resource), r.keys.Fenced(resource)
	ev := store.Event{
		Time: store.NowUTC(), Type: store.EventFenceReset, Kind: store.KindFence, Name: resource, Owner: actor,
		Detail: reason, Credential: credential,
	}
	var found bool
	octx, done := r.etcd.Op(ctx)
	defer done()
	// Either key is enough to reset: a write puts both, and a reset must
	// also clear a maximum whose value write failed.
	audit := clientv3.OpPut(r.keys.FenceAudit(resource, store.NewID()), store.MustJSON(ev))
	valueOnly := store.Txn{ // a value without a maximum
		Cmps: []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(vkey), ">", 0)},
		Then: []clientv3.Op{clientv3.OpDelete(vkey), audit},
	}
	var t store.Txn
	t.If(clientv3.Compare(clientv3.CreateRevision(mkey), ">", 0))
	t.OnSuccess(clientv3.OpDelete(mkey))
	t.OnSuccess(clientv3.OpDelete(vkey))
	t.OnSuccess(audit)
	valueReset := t.OnFailure(valueOnly.Op())
	resp, err := r.cli.Txn(octx).If(t.Cmps...).Then(t.Then...).Else(t.Else...).Commit()
	if err == nil {
		found = resp.Succeeded || valueReset.Nested(resp).Succeeded
	}
	if err != nil {
		return r.etcd.Err(ctx, fmt.Sprintf("reset fenced %q", resource), err)
	}
	if !found {
		return fmt.Errorf("reset fenced %q: %w", resource, ErrNotFound)
	}
	r.cfg.Recorded(store.EventFenceReset, 1)
	return nil
}
