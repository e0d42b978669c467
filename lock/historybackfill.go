package lock

import (
	"context"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// compacted is the watch's answer to revisions compacted before the index
// read them: the pending records are still there (only the index deletes
// them), so a backfill scan finds them.
func (x *historyIndex) compacted(ctx context.Context, compactRev int64) (int64, error) {
	e := x.e
	octx, done := e.op(ctx)
	resp, err := e.cli.Get(octx, e.historyMetaKey(), clientv3.WithCountOnly())
	done()
	if err != nil {
		return 0, e.etcdErr(ctx, "read history meta", err)
	}
	x.mu.Lock()
	m := x.meta
	// Pending records outlive compaction, and the backfill below indexes
	// them; a derived hold's events (derive.go) were only in the
	// revisions compacted away.
	e.metrics.trailGaps.Inc()
	e.log.Error("history index fell behind compaction: events of derived holds in the compacted revisions are lost; scanning the pending records",
		"from_revision", m.Indexed+1, "to_revision", compactRev-1)
	m.Backfill = &historyBackfill{Through: resp.Header.Revision}
	err = x.commit(ctx, m, nil)
	x.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := x.backfill(ctx); err != nil {
		return 0, err
	}
	return x.meta.Indexed + 1, nil
}

// backfillPage is how many pending keys a backfill reads at a time.
const backfillPage = 256

// backfill indexes the pending records up to meta's Backfill.Through, a
// page of keys at a time, saving its place with each write, then hands
// over to the watch after Through. Records the index already holds (an
// open hold's acquired record) are put again under the same keys: the
// trail gains no event, though its count may (a backfill after
// compaction, whose last revision was indexed in part, counts that part
// twice).
func (x *historyIndex) backfill(ctx context.Context) error {
	e := x.e
	x.mu.Lock()
	defer x.mu.Unlock()
	had := x.meta.Events
	end := clientv3.GetPrefixRangeEnd(e.auditPrefix())
	for {
		bf := *x.meta.Backfill
		start := e.auditPrefix()
		if bf.After != "" {
			start = bf.After + "\x00"
		}
		octx, done := e.op(ctx)
		resp, err := e.cli.Get(octx, start, clientv3.WithRange(end), clientv3.WithLimit(backfillPage))
		done()
		if err != nil {
			return e.etcdErr(ctx, "scan pending history", err)
		}
		var recs []pendingRecord
		for _, kv := range resp.Kvs {
			recs = append(recs, e.pendingOfKey(kv, x.meta.Indexed, bf.Through)...)
		}
		if len(resp.Kvs) > 0 {
			bf.After = string(resp.Kvs[len(resp.Kvs)-1].Key)
		}
		if err := x.backfillChunks(ctx, recs, bf); err != nil {
			return err
		}
		if !resp.More {
			break
		}
	}
	m := x.meta
	m.Indexed, m.Partial, m.Backfill = m.Backfill.Through, 0, nil
	if err := x.commit(ctx, m, nil); err != nil {
		return err
	}
	if m.Events > had {
		e.log.Info("history index: pending records indexed", "through_revision", m.Indexed, "events", m.Events-had)
	}
	return nil
}

// backfillChunks writes one backfill page's records, and its place bf.
// The caller holds mu.
func (x *historyIndex) backfillChunks(ctx context.Context, recs []pendingRecord, bf historyBackfill) error {
	for {
		n := min(len(recs), x.chunk())
		m := x.meta
		m.Buckets = slices.Clone(m.Buckets)
		var ops []clientv3.Op
		if n > 0 {
			bucket, err := x.bucket(ctx, &m, n)
			if err != nil {
				return err
			}
			ops, _ = x.entryOps(recs[:n], bucket, nil, trailSpan{})
			m.Events += int64(n)
			m.Buckets[len(m.Buckets)-1].Events += int64(n)
		}
		recs = recs[n:]
		if len(recs) == 0 {
			m.Backfill = &bf
		}
		if err := x.commit(ctx, m, ops); err != nil {
			return err
		}
		if len(recs) == 0 {
			return x.trimCount(ctx)
		}
	}
}
