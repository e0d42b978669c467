package lock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// loadFormat reads the cluster's storage format into c.Format, first
// raising it to Config.StorageFormat, or, on a keyspace no baton has
// written yet, to NewestFormat.
func loadFormat(ctx context.Context, c *core.Engine) error {
	key := c.Keys.Format()
	for range core.MaxImmediateRetries {
		var t store.Txn
		format := t.OnSuccess(clientv3.OpGet(key))
		// A keyspace some baton wrote has a recorder's cursor or a
		// history index, or, before either existed, pending records.
		traces := []store.Ref{
			t.OnSuccess(clientv3.OpGet(c.Keys.Recorder(), clientv3.WithCountOnly())),
			t.OnSuccess(clientv3.OpGet(c.Keys.HistoryMeta(), clientv3.WithCountOnly())),
			t.OnSuccess(clientv3.OpGet(c.Keys.Audit(), clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly())),
		}
		octx, done := c.Etcd.Op(ctx)
		resp, err := c.Cli.Txn(octx).Then(t.Then...).Commit()
		done()
		if err != nil {
			return c.Etcd.Err(ctx, "read the storage format", err)
		}
		cur, rev := 1, int64(0)
		if kvs := format.KVs(resp); len(kvs) > 0 {
			if cur, err = strconv.Atoi(string(kvs[0].Value)); err != nil || cur < 1 {
				return fmt.Errorf("lock: meta/format holds %q, not a storage format", kvs[0].Value)
			}
			rev = kvs[0].ModRevision
		}
		if cur > core.NewestFormat {
			return fmt.Errorf("lock: the cluster's storage format is %d, and this baton knows formats up to %d: run a newer baton", cur, core.NewestFormat)
		}
		fresh := rev == 0
		for _, r := range traces {
			rr := r.Range(resp)
			fresh = fresh && rr.Count == 0 && len(rr.Kvs) == 0
		}
		want := c.Cfg.StorageFormat
		if fresh {
			want = core.NewestFormat
		}
		if want <= cur {
			c.Format = cur
			return nil
		}
		octx, done = c.Etcd.Op(ctx)
		tr, err := c.Cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, strconv.Itoa(want))).Commit()
		done()
		if err != nil {
			return c.Etcd.Err(ctx, "raise the storage format", err)
		}
		if tr.Succeeded {
			if !fresh {
				c.Log.Info("storage format raised", "from", cur, "to", want)
			}
			c.Format = want
			return nil
		}
		// Another node wrote it meanwhile: read it again.
	}
	return fmt.Errorf("%w: meta/format kept changing while this node read it", ErrUnavailable)
}
