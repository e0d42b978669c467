package lock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The storage format is the layout of the audit trail's keys (trail/histkeys.go,
// histchunks.go). A node reads every format it knows, and writes the
// cluster's, kept in meta/format:
//
//	1  (no meta/format) a hold's acquired record audit/<name>/<hold>/a,
//	   and its end record beside it, audit/<name>/<hold>/e: two keys, which
//	   the history index deletes once it holds both events
//	2  a hold's end is written over its acquired record (store.EndRecord): one
//	   key a hold, and one delete
//	3  the history index folds a thing's events into chunks, a key for
//	   chunkEvents of them (histchunks.go)
//	4  trail/ keeps the revisions one index txn holds whole in chunks,
//	   where it kept a key for each (trail/histkeys.go)
//	5  holds write no pending record of their acquire or of an end the
//	   trail can tell from their lock key's revisions: the history index
//	   derives those (trail/derive.go); a hold's record says which it is
//	   (store.Holder.Derived)
//
// A cluster moves to a format only once every node reads it. A node of an
// older baton misreads format 2: its expiry recorder would take a release
// written over the acquired record for an expiry and record the end twice,
// and its history index would never index the end. One that knows only
// format 2 would skip a chunk of format 3 when it reads a thing's history,
// and one that knows only format 3 a trail/ chunk of format 4. One that
// knows only format 4 would index no derived hold, nor record its expiry.
// So a cluster begun by a baton that knows the newest format starts at it,
// one begun before stays at its own, and an operator raises it, once every
// node runs a baton that reads it, by starting a node with
// Config.StorageFormat set (docs/OPERATIONS.md).
// The format never goes down. A node reads it when it starts, and writes
// that format until it restarts: a node still writing 1 after another
// raised it is read by every node all the same.
const newestFormat = 5

// loadFormat reads the cluster's storage format into e.format, first
// raising it to Config.StorageFormat, or, on a keyspace no baton has
// written yet, to newestFormat.
func (e *Engine) loadFormat(ctx context.Context) error {
	key := e.keys.Format()
	for range maxImmediateRetries {
		var t store.Txn
		format := t.OnSuccess(clientv3.OpGet(key))
		// A keyspace some baton wrote has a recorder's cursor or a
		// history index, or, before either existed, pending records.
		traces := []store.Ref{
			t.OnSuccess(clientv3.OpGet(e.keys.Recorder(), clientv3.WithCountOnly())),
			t.OnSuccess(clientv3.OpGet(e.keys.HistoryMeta(), clientv3.WithCountOnly())),
			t.OnSuccess(clientv3.OpGet(e.keys.Audit(), clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly())),
		}
		octx, done := e.etcd.Op(ctx)
		resp, err := e.cli.Txn(octx).Then(t.Then...).Commit()
		done()
		if err != nil {
			return e.etcd.Err(ctx, "read the storage format", err)
		}
		cur, rev := 1, int64(0)
		if kvs := format.KVs(resp); len(kvs) > 0 {
			if cur, err = strconv.Atoi(string(kvs[0].Value)); err != nil || cur < 1 {
				return fmt.Errorf("lock: meta/format holds %q, not a storage format", kvs[0].Value)
			}
			rev = kvs[0].ModRevision
		}
		if cur > newestFormat {
			return fmt.Errorf("lock: the cluster's storage format is %d, and this baton knows formats up to %d: run a newer baton", cur, newestFormat)
		}
		fresh := rev == 0
		for _, r := range traces {
			rr := r.Range(resp)
			fresh = fresh && rr.Count == 0 && len(rr.Kvs) == 0
		}
		want := e.cfg.StorageFormat
		if fresh {
			want = newestFormat
		}
		if want <= cur {
			e.format = cur
			return nil
		}
		octx, done = e.etcd.Op(ctx)
		tr, err := e.cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, strconv.Itoa(want))).Commit()
		done()
		if err != nil {
			return e.etcd.Err(ctx, "raise the storage format", err)
		}
		if tr.Succeeded {
			if !fresh {
				e.log.Info("storage format raised", "from", cur, "to", want)
			}
			e.format = want
			return nil
		}
		// Another node wrote it meanwhile: read it again.
	}
	return fmt.Errorf("%w: meta/format kept changing while this node read it", ErrUnavailable)
}
