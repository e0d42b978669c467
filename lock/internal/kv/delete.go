package kv

import (
	"context"
	"errors"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DeleteRequest is a delete of a key.
type DeleteRequest struct {
	Key string
	// IfRevision, when set, deletes the key only if its revision is
	// *IfRevision.
	IfRevision *int64
	// Fence, when set, deletes it only while its hold is current.
	Fence Fence
}

// Delete removes a key, in one etcd txn that compares what req asks and
// writes the delete's event (a delete's writer is not in the key's
// revisions). Errors, each leaving the key as it was: *store.InvalidError;
// *NotFoundError; *RevisionMismatchError; ErrStaleHold.
func (s *Store) Delete(ctx context.Context, req DeleteRequest) error {
	if err := store.CheckKey("key", req.Key); err != nil {
		return err
	}
	if req.IfRevision != nil && *req.IfRevision <= 0 {
		return store.Invalid("if_revision", "must be the revision of the key to delete")
	}
	if err := checkFence(req.Fence); err != nil {
		return err
	}
	w := write{key: req.Key, ifRevision: req.IfRevision, fence: req.Fence}
	if err := s.prepare(ctx, &w, ""); err != nil {
		return err
	}
	// A delete of a missing key is a refusal, not a write: the txn
	// requires the key, and writes the event only with the delete.
	if w.ifRevision == nil {
		w.updateOnly = true
	}
	ev := store.Event{Time: store.NowUTC(), Type: store.EventDelete, Kind: store.KindKey, Name: req.Key, Credential: hold.CredentialOf(ctx)}
	del := clientv3.OpDelete(s.core.Keys.KV(req.Key))
	resp, t, err := s.commit(ctx, &w, del, clientv3.OpPut(s.core.Keys.KeyAudit(store.NewID(), req.Key), store.MustJSON(ev)))
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		err := s.refusal(resp, t, &w)
		if missing := len(t.key.KVs(resp)) == 0; missing && (errors.Is(err, ErrRevisionMismatch) || errors.Is(err, ErrTooManyKeys)) {
			return &NotFoundError{Key: req.Key, Revision: resp.Header.Revision}
		}
		return err
	}
	s.core.Metrics.Recorded(store.EventDelete, 1)
	return nil
}
