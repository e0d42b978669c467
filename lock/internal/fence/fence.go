package fence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Put stores value in resource if token is at least the largest token
// any earlier write to resource carried; equal tokens are accepted, so a
// holder can write many times. With h named, the write also requires that
// token holds h at that moment (an election's: its current leader's). The
// check and the write are one etcd transaction. Errors:
// *StaleTokenError (ErrStaleToken), ErrNotHolder, ErrUnknownToken for a
// token above the current revision (none was ever issued); a
// *store.LimitError for a value above Config.MaxValueBytes
// (ErrValueTooLarge) or a new resource Config.Reserve refuses. Every error
// leaves the resource as it was.
func (r *Registers) Put(ctx context.Context, resource string, token int64, value json.RawMessage, h Holder) (*Value, error) {
	if err := r.checkPut(resource, token, value, h); err != nil {
		return nil, err
	}
	lock := "" // the key name of the hold the write requires
	if h.Name != "" {
		lock = store.KeyName(h.Kind, h.Name)
	}
	if h.Kind == store.KindRWLock {
		lock = store.WriterSeat(lock) // a read hold does not write
	}
	mkey := r.keys.FenceMax(resource)
	// A write that makes a new resource holds a slot (Config.Reserve)
	// from when it first finds none until it returns.
	var endSlot func(bool)
	created := false
	for range maxTries {
		// etcd compares no value of a missing key, so the first write
		// compares CreateRevision, and later ones the padded maximum.
		octx, done := r.etcd.Op(ctx)
		cur, err := r.cli.Get(octx, mkey)
		done()
		if err != nil {
			return nil, r.etcd.Err(ctx, "read fenced maximum", err)
		}
		// Tokens are revisions, so none exceeds the revision of this
		// linearizable read. This also keeps token+1 below from
		// overflowing.
		if token > cur.Header.Revision {
			return nil, fmt.Errorf("fenced write to %q: %w: token %d is above the cluster's current revision %d", resource, ErrUnknownToken, token, cur.Header.Revision)
		}
		first := len(cur.Kvs) == 0
		if first && endSlot == nil {
			if endSlot, err = r.cfg.Reserve(ctx); err != nil {
				return nil, err
			}
			defer func() { endSlot(created) }()
		}
		t := r.putTxn(resource, token, value, lock, first)
		var resp *clientv3.TxnResponse
		err = r.etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
			resp, err = r.cli.Txn(octx).If(t.Cmps...).Then(t.Then...).Else(t.Else...).Commit()
			return err
		})
		if err != nil {
			err = r.etcd.Err(ctx, "fenced write", err)
			created = first && errors.Is(err, store.ErrUnavailable) // the write may have been applied
			return nil, err
		}
		if resp.Succeeded {
			created = first
			return &Value{Resource: resource, Token: token, Value: value, Revision: resp.Header.Revision}, nil
		}
		if err := refusal(resp, t, resource, token, h); err != nil {
			return nil, err
		}
		// The maximum was created or raised between our read and write.
	}
	return nil, fmt.Errorf("fenced write to %q: too much contention: %w", resource, store.ErrUnavailable)
}

// checkPut validates Put's arguments.
func (r *Registers) checkPut(resource string, token int64, value json.RawMessage, h Holder) error {
	if err := store.CheckName("resource", resource); err != nil {
		return err
	}
	if token <= 0 {
		return store.Invalid("token", "must be a positive fencing token")
	}
	if len(value) == 0 {
		return store.Invalid("value", "is required")
	}
	if !json.Valid(value) {
		return store.Invalid("value", "must be valid JSON")
	}
	if len(value) > r.cfg.MaxValueBytes {
		return &store.LimitError{
			Err: ErrValueTooLarge, Limit: r.cfg.MaxValueBytes, Field: "value",
			Reason: fmt.Sprintf("value is %d bytes of JSON, more than the maximum of %d", len(value), r.cfg.MaxValueBytes),
		}
	}
	switch h.Kind {
	case "":
		if h.Name != "" {
			return store.Invalid("lock", "names a holder of no kind")
		}
	case store.KindLock, store.KindElection, store.KindRWLock:
		return store.CheckName(h.field(), h.Name)
	default:
		return store.Invalid(h.field(), "a fenced write can require a lock, an election or a read/write lock's write hold, not a %s", h.Kind)
	}
	return nil
}

// write is the txn of a fenced write, with the responses of its else
// branch that refusal reads.
type write struct {
	store.Txn
	max  store.Ref // the resource's maximum token
	lock store.Ref // the lock the write requires token to hold
}

// putTxn builds the txn that writes value to resource under token:
// first is set when the resource has no maximum yet.
func (r *Registers) putTxn(resource string, token int64, value json.RawMessage, lock string, first bool) *write {
	mkey := r.keys.FenceMax(resource)
	var t write
	if first {
		t.If(clientv3.Compare(clientv3.CreateRevision(mkey), "=", 0))
	} else {
		// stored < token+1, i.e. stored <= token
		t.If(clientv3.Compare(clientv3.Value(mkey), "<", store.PadToken(token+1)))
	}
	if lock != "" {
		t.If(clientv3.Compare(clientv3.ModRevision(r.keys.Lock(lock)), "=", token))
	}
	t.OnSuccess(clientv3.OpPut(mkey, store.PadToken(token)))
	t.OnSuccess(clientv3.OpPut(r.keys.Fenced(resource), store.MustJSON(record{Token: token, Value: value})))
	t.max = t.OnFailure(clientv3.OpGet(mkey))
	t.lock = t.OnFailure(clientv3.OpGet(r.keys.Lock(lock)))
	return &t
}

// refusal says why a fenced write's txn failed: token no longer
// holds h, or a larger token wrote since. nil means the maximum changed
// under us: try again.
func refusal(resp *clientv3.TxnResponse, t *write, resource string, token int64, h Holder) error {
	if h.Name != "" {
		lk := t.lock.KVs(resp)
		if len(lk) == 0 || lk[0].ModRevision != token {
			switch h.Kind {
			case store.KindElection:
				return fmt.Errorf("fenced write to %q: %w: election %q is not led with token %d", resource, ErrNotHolder, h.Name, token)
			case store.KindRWLock:
				return fmt.Errorf("fenced write to %q: %w: rwlock %q is not write-held with token %d", resource, ErrNotHolder, h.Name, token)
			}
			return fmt.Errorf("fenced write to %q: %w %q", resource, ErrNotHolder, h.Name)
		}
	}
	if mk := t.max.KVs(resp); len(mk) > 0 {
		max, _ := strconv.ParseInt(string(mk[0].Value), 10, 64)
		if max > token {
			return &StaleTokenError{Token: token, MaxToken: max}
		}
	}
	return nil
}

// Get returns the value of resource, or ErrNotFound.
func (r *Registers) Get(ctx context.Context, resource string) (*Value, error) {
	if err := store.CheckName("resource", resource); err != nil {
		return nil, err
	}
	octx, done := r.etcd.Op(ctx)
	defer done()
	resp, err := r.cli.Get(octx, r.keys.Fenced(resource))
	if err != nil {
		return nil, r.etcd.Err(ctx, "read fenced value", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrNotFound
	}
	var rec record
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return nil, fmt.Errorf("decode fenced value: %w", err)
	}
	return &Value{Resource: resource, Token: rec.Token, Value: rec.Value, Revision: resp.Kvs[0].ModRevision}, nil
}
