package kv

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// write is what a put's or a delete's txn compares, once prepare has read
// what it needs.
type write struct {
	key        string
	ifRevision *int64
	fence      Fence
	// updateOnly requires the key to exist: a put at the MaxKeys cap.
	updateOnly bool
	// session is the session's lease. The txn requires its record; with
	// sessionRev, the record prepare read for the ownership check, at
	// that CreateRevision (one deleted and made anew meanwhile cannot
	// slip through).
	session    clientv3.LeaseID
	sessionRev int64
	// holdKey is the key name of the hold the fence requires: a
	// semaphore's seat, a read/write lock's writer's seat.
	holdKey string
}

// prepare reads what w's txn compares: the fence's hold key, and the
// session's record when there is an owner to check (a caller that is not
// an admin), as an acquire into a session does; otherwise the txn's
// compare of the record is check enough.
func (s *Store) prepare(ctx context.Context, w *write, session string) error {
	if session != "" {
		w.session, _ = store.ParseLeaseHex(session)
		if c, ok := hold.CallerFrom(ctx); ok && !c.Admin {
			id := store.LeaseHex(w.session)
			cred, rev, err := s.core.SessionOwner(ctx, id)
			if err != nil {
				return err
			}
			if !hold.MayActOn(ctx, cred) {
				return fmt.Errorf("session %s was created by another credential: %w", id, hold.ErrNotOwner)
			}
			w.sessionRev = rev
		}
	}
	f := w.fence
	switch f.Kind {
	case "":
		return nil
	case store.KindRWLock:
		w.holdKey = store.WriterSeat(store.KeyName(f.Kind, f.Name)) // a read hold does not write
	case store.KindSemaphore:
		seat, err := s.core.SeatOf(ctx, store.KeyName(f.Kind, f.Name), f.Token)
		if errors.Is(err, hold.ErrNotHeld) {
			return s.stale(f)
		}
		if err != nil {
			return err
		}
		w.holdKey = seat
	default:
		w.holdKey = store.KeyName(f.Kind, f.Name)
	}
	return nil
}

// txn is a write's txn, with the reads of its else branch that refusal
// reads.
type txn struct {
	store.Txn
	after   store.Ref // the key as the write left it (keys only)
	key     store.Ref // the key, when the compare failed (keys only)
	session store.Ref
	hold    store.Ref
}

// commit runs ops, the write, in a txn that compares what w asks.
func (s *Store) commit(ctx context.Context, w *write, ops ...clientv3.Op) (*clientv3.TxnResponse, *txn, error) {
	keys := s.core.Keys
	kkey := keys.KV(w.key)
	var t txn
	if w.ifRevision != nil {
		t.If(clientv3.Compare(clientv3.ModRevision(kkey), "=", *w.ifRevision))
	}
	if w.updateOnly {
		t.If(clientv3.Compare(clientv3.CreateRevision(kkey), ">", 0))
	}
	if w.session != 0 {
		if w.sessionRev != 0 {
			t.If(clientv3.Compare(clientv3.CreateRevision(keys.Session(store.LeaseHex(w.session))), "=", w.sessionRev))
		} else {
			t.If(clientv3.Compare(clientv3.CreateRevision(keys.Session(store.LeaseHex(w.session))), ">", 0))
		}
		t.session = t.OnFailure(clientv3.OpGet(keys.Session(store.LeaseHex(w.session)), clientv3.WithKeysOnly()))
	}
	if w.holdKey != "" {
		t.If(clientv3.Compare(clientv3.ModRevision(keys.Lock(w.holdKey)), "=", w.fence.Token))
		t.hold = t.OnFailure(clientv3.OpGet(keys.Lock(w.holdKey), clientv3.WithKeysOnly()))
	}
	for _, op := range ops {
		t.OnSuccess(op)
	}
	if ops[0].IsPut() {
		t.after = t.OnSuccess(clientv3.OpGet(kkey, clientv3.WithKeysOnly()))
	}
	t.key = t.OnFailure(clientv3.OpGet(kkey, clientv3.WithKeysOnly()))
	// Through the engine's batcher, as holds' txns go: concurrent writes
	// share raft entries, and each gets the answer its txn alone would.
	var resp *clientv3.TxnResponse
	err := s.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = s.core.Batch.Txn(octx, t.Cmps, t.Then, t.Else)
		return err
	})
	if err != nil {
		if store.IsLeaseNotFound(err) {
			return nil, nil, hold.ErrSessionNotFound // the session ended after its read
		}
		return nil, nil, s.core.Etcd.Err(ctx, fmt.Sprintf("write key %q", w.key), err)
	}
	return resp, &t, nil
}

// refusal says why a write's txn failed, in order: the fence's hold is
// not current, the session is gone, the key's revision is not the one
// asked for, or (a put at the MaxKeys cap) the key does not exist.
func (s *Store) refusal(resp *clientv3.TxnResponse, t *txn, w *write) error {
	if t.hold.Ok() {
		if kvs := t.hold.KVs(resp); len(kvs) == 0 || kvs[0].ModRevision != w.fence.Token {
			return s.stale(w.fence)
		}
	}
	if t.session.Ok() {
		if s.core.SessionGone(store.LeaseHex(w.session), w.sessionRev, t.session.KVs(resp)) {
			return hold.ErrSessionNotFound
		}
	}
	var cur int64
	if kvs := t.key.KVs(resp); len(kvs) > 0 {
		cur = kvs[0].ModRevision
	}
	if w.ifRevision != nil && cur != *w.ifRevision {
		return &RevisionMismatchError{Key: w.key, Revision: cur, Want: *w.ifRevision}
	}
	if w.updateOnly && cur == 0 {
		return s.tooManyKeys()
	}
	return fmt.Errorf("write key %q: the txn failed for no reason its reads show", w.key)
}

// stale is the refusal of a write fenced by f, whose hold is not current.
func (s *Store) stale(f Fence) error {
	what := map[store.EventKind]string{
		store.KindLock: "lock %q is not held with token %d", store.KindElection: "election %q is not led with token %d",
		store.KindSemaphore: "semaphore %q has no permit with token %d", store.KindRWLock: "rwlock %q is not write-held with token %d",
	}[f.Kind]
	return fmt.Errorf("%w: "+what, ErrStaleHold, f.Name, f.Token)
}
