package lock

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// PutFenced stores value in resource if token is at least the largest
// token any earlier write to resource carried; equal tokens are accepted so
// a holder can write many times. With lock set, the write also requires
// that token holds lock at that moment. The check and the write are one
// etcd transaction. Errors: *StaleTokenError (ErrStaleToken), ErrNotHolder,
// ErrUnknownToken for a token above the current revision (none was ever
// issued); a *LimitError for a value above Config.MaxFencedValueBytes
// (ErrValueTooLarge) or a new resource past Config.MaxFencedValues
// (ErrTooManyFencedValues). Every error leaves the resource as it was.
func (e *Engine) PutFenced(ctx context.Context, resource string, token int64, value json.RawMessage, lock string) (*FencedValue, error) {
	var h Holder
	if lock != "" {
		h = Holder{Kind: KindLock, Name: lock}
	}
	return e.PutFencedHeld(ctx, resource, token, value, h)
}

// Holder names the hold a fenced write requires: the lock, the election
// or the read/write lock's write hold, Name held with exactly the write's
// token. The zero Holder requires none.
type Holder struct {
	Kind EventKind // KindLock, KindElection or KindRWLock
	Name string
}

// field is the request field that names the holder.
func (h Holder) field() string { return string(h.Kind) }

// PutFencedHeld is PutFenced requiring the hold h, which may be an
// election's: a fenced write may ask that its token be the current
// leader's.
func (e *Engine) PutFencedHeld(ctx context.Context, resource string, token int64, value json.RawMessage, h Holder) (*FencedValue, error) {
	if err := e.checkFencedPut(resource, token, value, h); err != nil {
		return nil, err
	}
	lock := "" // the key name of the hold the write requires
	if h.Name != "" {
		lock = store.KeyName(h.Kind, h.Name)
	}
	if h.Kind == KindRWLock {
		lock = store.WriterSeat(lock) // a read hold does not write
	}
	mkey := e.keys.FenceMax(resource)
	// A write that makes a new resource holds a slot of MaxFencedValues
	// (space.go) from when it first finds none until it returns.
	var endSlot func(bool)
	created := false
	for range maxImmediateRetries {
		// etcd compares no value of a missing key, so the first write
		// compares CreateRevision, and later ones the padded maximum.
		octx, done := e.etcd.Op(ctx)
		cur, err := e.cli.Get(octx, mkey)
		done()
		if err != nil {
			return nil, e.etcd.Err(ctx, "read fenced maximum", err)
		}
		// Tokens are revisions, so none exceeds the revision of this
		// linearizable read. This also keeps token+1 below from
		// overflowing.
		if token > cur.Header.Revision {
			return nil, fmt.Errorf("fenced write to %q: %w: token %d is above the cluster's current revision %d", resource, ErrUnknownToken, token, cur.Header.Revision)
		}
		first := len(cur.Kvs) == 0
		if first && endSlot == nil {
			if endSlot, err = e.reserveFenced(ctx); err != nil {
				return nil, err
			}
			defer func() { endSlot(created) }()
		}
		t := e.fencedPutTxn(resource, token, value, lock, first)
		var resp *clientv3.TxnResponse
		err = e.etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
			resp, err = e.cli.Txn(octx).If(t.Cmps...).Then(t.Then...).Else(t.Else...).Commit()
			return err
		})
		if err != nil {
			err = e.etcd.Err(ctx, "fenced write", err)
			created = first && mayHaveCreated(err)
			return nil, err
		}
		if resp.Succeeded {
			created = first
			return &FencedValue{Resource: resource, Token: token, Value: value, Revision: resp.Header.Revision}, nil
		}
		if err := fencedRefusal(resp, t, resource, token, h); err != nil {
			return nil, err
		}
		// The maximum was created or raised between our read and write.
	}
	return nil, fmt.Errorf("fenced write to %q: too much contention: %w", resource, ErrUnavailable)
}

// checkFencedPut validates PutFenced's arguments.
func (e *Engine) checkFencedPut(resource string, token int64, value json.RawMessage, h Holder) error {
	if err := store.CheckName("resource", resource); err != nil {
		return err
	}
	if token <= 0 {
		return invalid("token", "must be a positive fencing token")
	}
	if len(value) == 0 {
		return invalid("value", "is required")
	}
	if !json.Valid(value) {
		return invalid("value", "must be valid JSON")
	}
	if len(value) > e.cfg.MaxFencedValueBytes {
		return &LimitError{
			Err: ErrValueTooLarge, Limit: e.cfg.MaxFencedValueBytes, Field: "value",
			Reason: fmt.Sprintf("value is %d bytes of JSON, more than the maximum of %d", len(value), e.cfg.MaxFencedValueBytes),
		}
	}
	switch h.Kind {
	case "":
		if h.Name != "" {
			return invalid("lock", "names a holder of no kind")
		}
	case KindLock, KindElection, KindRWLock:
		return store.CheckName(h.field(), h.Name)
	default:
		return invalid(h.field(), "a fenced write can require a lock, an election or a read/write lock's write hold, not a %s", h.Kind)
	}
	return nil
}

// fencedPut is the txn of a fenced write, with the responses of its
// else branch that fencedRefusal reads.
type fencedPut struct {
	store.Txn
	max  store.Ref // the resource's maximum token
	lock store.Ref // the lock the write requires token to hold
}

// fencedPutTxn builds the txn that writes value to resource under token:
// first is set when the resource has no maximum yet.
func (e *Engine) fencedPutTxn(resource string, token int64, value json.RawMessage, lock string, first bool) *fencedPut {
	mkey := e.keys.FenceMax(resource)
	var t fencedPut
	if first {
		t.If(clientv3.Compare(clientv3.CreateRevision(mkey), "=", 0))
	} else {
		// stored < token+1, i.e. stored <= token
		t.If(clientv3.Compare(clientv3.Value(mkey), "<", store.PadToken(token+1)))
	}
	if lock != "" {
		t.If(clientv3.Compare(clientv3.ModRevision(e.keys.Lock(lock)), "=", token))
	}
	t.OnSuccess(clientv3.OpPut(mkey, store.PadToken(token)))
	t.OnSuccess(clientv3.OpPut(e.keys.Fenced(resource), store.MustJSON(fencedRecord{Token: token, Value: value})))
	t.max = t.OnFailure(clientv3.OpGet(mkey))
	t.lock = t.OnFailure(clientv3.OpGet(e.keys.Lock(lock)))
	return &t
}

// fencedRefusal says why a fenced write's txn failed: token no longer
// holds h, or a larger token wrote since. nil means the maximum changed
// under us: try again.
func fencedRefusal(resp *clientv3.TxnResponse, t *fencedPut, resource string, token int64, h Holder) error {
	if h.Name != "" {
		lk := t.lock.KVs(resp)
		if len(lk) == 0 || lk[0].ModRevision != token {
			switch h.Kind {
			case KindElection:
				return fmt.Errorf("fenced write to %q: %w: election %q is not led with token %d", resource, ErrNotHolder, h.Name, token)
			case KindRWLock:
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

// GetFenced returns the value of resource, or ErrNotFound.
func (e *Engine) GetFenced(ctx context.Context, resource string) (*FencedValue, error) {
	if err := store.CheckName("resource", resource); err != nil {
		return nil, err
	}
	octx, done := e.etcd.Op(ctx)
	defer done()
	resp, err := e.cli.Get(octx, e.keys.Fenced(resource))
	if err != nil {
		return nil, e.etcd.Err(ctx, "read fenced value", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrNotFound
	}
	var rec fencedRecord
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return nil, fmt.Errorf("decode fenced value: %w", err)
	}
	return &FencedValue{Resource: resource, Token: rec.Token, Value: rec.Value, Revision: resp.Kvs[0].ModRevision}, nil
}
