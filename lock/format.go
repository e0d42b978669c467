package lock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

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
