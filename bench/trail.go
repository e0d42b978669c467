package main

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-dev/baton/bench/internal/report"
)

// minTrailEvents is the smallest trail -trail-events makes: the fill's
// expiries and a cycle.
const minTrailEvents = 2*historyExpiries + 2

// fillTrail gives the node a trail of cfg.TrailEvents events before the
// first scenario, or does nothing when that is 0. A node that has served
// a while holds up to --history-max-events of them, and a key of etcd's
// for each in its trail and its lock's: every put and delete looks keys
// up in etcd's index of all of them, which a bench that starts empty
// never fills. Once the history index holds the events, etcd is compacted
// to the newest revision, as its periodic compaction does on such a node
// once --compaction-retention has passed, so that what remains is the
// trail itself and not the fill's superseded revisions and deleted keys
// (unless -trail-keeps-history).
func (b *bench) fillTrail(ctx context.Context) (*report.TrailResult, error) {
	if b.cfg.TrailEvents == 0 {
		return nil, nil
	}
	b.log.Info("filling the trail", "events", b.cfg.TrailEvents)
	fill, err := b.fillHistory(ctx, b.cfg.TrailEvents)
	if err != nil {
		return nil, err
	}
	res := &report.TrailResult{Events: fill.events, FillSeconds: fill.elapsed.Seconds()}
	if res.IndexedSeconds, err = b.awaitHistory(ctx); err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{b.etcdURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("dial etcd %s: %w", b.etcdURL, err)
	}
	defer cli.Close()
	keys, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("count etcd's keys: %w", err)
	}
	res.Keys = keys.Count
	if !b.cfg.TrailKeepsHistory {
		res.CompactedAt = keys.Header.Revision
		if _, err := cli.Compact(ctx, res.CompactedAt, clientv3.WithCompactPhysical()); err != nil {
			return nil, fmt.Errorf("compact etcd to %d: %w", res.CompactedAt, err)
		}
	}
	b.log.Info("trail filled", "events", res.Events, "keys", res.Keys, "fill_seconds", res.FillSeconds, "indexed_seconds", res.IndexedSeconds)
	return res, nil
}
