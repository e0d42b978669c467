package store

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Txn builds one etcd transaction. Each op added hands back a Ref to its
// response, so the code that reads a response names the op it reads, and
// never counts where the op stood among the others: ops may be added in
// any order, by any number of helpers, and a txn that lacks an op has a
// zero Ref for it.
//
// The zero Txn is empty and ready to use. Cmps, Then and Else are what
// etcd is sent (for example by txnbatch.Batcher.Txn).
type Txn struct {
	Cmps []clientv3.Cmp
	Then []clientv3.Op
	Else []clientv3.Op
}

// Ref names one op's response in a Txn: its branch and its place there.
// The zero Ref names no op; it reads as an empty range.
type Ref struct {
	// at is the op's index plus one, in Then when positive, in Else
	// (negated) when negative.
	at int
}

// If adds compares that must all hold for the Then branch to run.
func (t *Txn) If(cmps ...clientv3.Cmp) { t.Cmps = append(t.Cmps, cmps...) }

// OnSuccess adds op to the Then branch and returns its Ref.
func (t *Txn) OnSuccess(op clientv3.Op) Ref {
	t.Then = append(t.Then, op)
	return Ref{at: len(t.Then)}
}

// OnFailure adds op to the Else branch and returns its Ref.
func (t *Txn) OnFailure(op clientv3.Op) Ref {
	t.Else = append(t.Else, op)
	return Ref{at: -len(t.Else)}
}

// Op is t as one op, to nest in another txn: its responses are read with
// the outer Ref's Nested.
func (t *Txn) Op() clientv3.Op { return clientv3.OpTxn(t.Cmps, t.Then, t.Else) }

// OpOf is the op r names in t; it panics on the zero Ref. Tests use it to
// check that a builder put the right op behind each Ref.
func (t *Txn) OpOf(r Ref) clientv3.Op {
	switch {
	case r.at > 0:
		return t.Then[r.at-1]
	case r.at < 0:
		return t.Else[-r.at-1]
	}
	panic("store: OpOf the zero Ref")
}

// Ok reports whether r names an op: false for the zero Ref.
func (r Ref) Ok() bool { return r.at != 0 }

// response is r's response in resp, nil for the zero Ref. Reading an op
// of the branch that did not run is a bug in the caller, not a state of
// etcd: it panics rather than read another op's response.
func (r Ref) response(resp *clientv3.TxnResponse) *etcdserverpb.ResponseOp {
	switch {
	case r.at == 0:
		return nil
	case (r.at > 0) != resp.Succeeded:
		panic("store: a Ref read from the branch of the txn that did not run")
	case r.at > 0:
		return resp.Responses[r.at-1]
	}
	return resp.Responses[-r.at-1]
}

// Range is the response of the range r names; empty for the zero Ref.
func (r Ref) Range(resp *clientv3.TxnResponse) *etcdserverpb.RangeResponse {
	if rr := r.response(resp).GetResponseRange(); rr != nil {
		return rr
	}
	return &etcdserverpb.RangeResponse{}
}

// KVs are the keys the range r names read; none for the zero Ref.
func (r Ref) KVs(resp *clientv3.TxnResponse) []*mvccpb.KeyValue { return r.Range(resp).Kvs }

// Count is the number of keys in the range r names; 0 for the zero Ref.
func (r Ref) Count(resp *clientv3.TxnResponse) int64 { return r.Range(resp).Count }

// Deleted is how many keys the delete r names deleted; 0 for the zero
// Ref.
func (r Ref) Deleted(resp *clientv3.TxnResponse) int64 {
	return r.response(resp).GetResponseDeleteRange().GetDeleted()
}

// Nested is the response of the txn r names (one added as Txn.Op), to
// read with that txn's own Refs; nil for the zero Ref.
func (r Ref) Nested(resp *clientv3.TxnResponse) *clientv3.TxnResponse {
	return (*clientv3.TxnResponse)(r.response(resp).GetResponseTxn())
}
