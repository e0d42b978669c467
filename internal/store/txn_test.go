package store_test

import (
	"testing"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/tests/testetcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Each Ref reads its own op's response in whichever branch ran, a nested
// txn's Refs read its response through the outer Ref, and the zero Ref
// reads as empty: against a real etcd, once with the compare holding and
// once failing.
func TestTxn_RefsReadTheirOwnOpsInTheBranchThatRan(t *testing.T) {
	cli := testetcd.Start(t).Client()
	ctx := t.Context()
	for _, kv := range [][2]string{{"a", "1"}, {"b/1", "x"}, {"b/2", "y"}, {"c", "z"}} {
		if _, err := cli.Put(ctx, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, holds := range []bool{true, false} {
		want := "1"
		if !holds {
			want = "other"
		}
		var tx store.Txn
		tx.If(clientv3.Compare(clientv3.Value("a"), "=", want))
		var none store.Ref
		thenCount := tx.OnSuccess(clientv3.OpGet("b/", clientv3.WithPrefix(), clientv3.WithCountOnly()))
		var inner store.Txn
		inner.If(clientv3.Compare(clientv3.CreateRevision("b/1"), ">", 0))
		innerGet := inner.OnSuccess(clientv3.OpGet("b/2"))
		nested := tx.OnSuccess(inner.Op())
		deleted := tx.OnSuccess(clientv3.OpDelete("c"))
		elseA := tx.OnFailure(clientv3.OpGet("a"))
		elseB := tx.OnFailure(clientv3.OpGet("b/1"))
		if op := tx.OpOf(elseB); string(op.KeyBytes()) != "b/1" {
			t.Fatalf("OpOf(elseB) is of %q", op.KeyBytes())
		}
		resp, err := cli.Txn(ctx).If(tx.Cmps...).Then(tx.Then...).Else(tx.Else...).Commit()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Succeeded != holds {
			t.Fatalf("compare holds %v, txn succeeded %v", holds, resp.Succeeded)
		}
		if none.Ok() || none.Count(resp) != 0 || len(none.KVs(resp)) != 0 || none.Nested(resp) != nil || none.Deleted(resp) != 0 {
			t.Fatal("the zero Ref reads as something")
		}
		if holds {
			if n := thenCount.Count(resp); n != 2 {
				t.Fatalf("count of b/: %d, want 2", n)
			}
			in := nested.Nested(resp)
			if !in.Succeeded || string(innerGet.KVs(in)[0].Value) != "y" {
				t.Fatalf("nested txn: succeeded %v, read %v", in.Succeeded, innerGet.KVs(in))
			}
			if n := deleted.Deleted(resp); n != 1 {
				t.Fatalf("delete of c: %d deleted, want 1", n)
			}
			continue
		}
		if got := string(elseA.KVs(resp)[0].Value); got != "1" {
			t.Fatalf("else read of a: %q", got)
		}
		if got := string(elseB.KVs(resp)[0].Value); got != "x" {
			t.Fatalf("else read of b/1: %q", got)
		}
	}
}

// Reading a Ref of the branch that did not run is a caller's bug: it
// panics rather than hand back another op's response.
func TestTxn_ARefOfTheBranchThatDidNotRunPanics(t *testing.T) {
	var tx store.Txn
	r := tx.OnFailure(clientv3.OpGet("a"))
	tx.OnSuccess(clientv3.OpGet("b"))
	resp := &clientv3.TxnResponse{Succeeded: true}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	r.Range(resp)
}
