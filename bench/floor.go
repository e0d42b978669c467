package main

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/report"
)

// floor runs the floor: the two txns an acquire+release cycle needs at
// the least, sent straight to the node's embedded etcd through its
// in-process client, each client on a key of its own. The load runs in this process, so
// its CPU figure includes the client side too; the HTTP scenarios' do not.
func (b *bench) floor(ctx context.Context, clients int) (report.CycleResult, error) {
	cli := b.node.Engine().Client()
	// Outside baton's prefix, so the engine never sees these keys.
	prefix := fmt.Sprintf("bench-floor/%d/", clients)
	var loop load.LoopResult
	u, err := measure.Measured(func() (time.Duration, error) {
		loop = load.ClosedLoop(ctx, clients, b.cfg.Duration, func(ctx context.Context, w, _ int) error {
			return floorCycle(ctx, cli, load.WorkerLock(prefix, w))
		})
		return 0, ctx.Err()
	})
	if err != nil {
		return report.CycleResult{}, err
	}
	return report.NewCycleResult(clients, loop, u), nil
}

// floorCycle takes key if nobody holds it, then releases it if it is still
// the hold we took: the compare on ModRevision is what makes a release
// safe against a newer holder, so the floor pays for it too.
func floorCycle(ctx context.Context, cli *clientv3.Client, key string) error {
	put, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, "bench")).
		Commit()
	if err != nil {
		return fmt.Errorf("acquire %s: %w", key, err)
	}
	if !put.Succeeded {
		return fmt.Errorf("acquire %s: already held", key)
	}
	del, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", put.Header.Revision)).
		Then(clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	if !del.Succeeded {
		return fmt.Errorf("release %s: no longer ours", key)
	}
	return nil
}
