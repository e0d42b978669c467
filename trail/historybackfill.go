package trail

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/baton-dev/baton/internal/store"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// compacted is the watch's answer to revisions compacted before the index
// read them. Their derived events (derive.go) are lost: the index writes
// a gap event that says which revisions, and why, in the txn that starts
// a backfill scan. The pending records are still there (only the index
// deletes them), so the scan finds the events that records hold, and
// revisions from before the cluster's storage format derived events
// lose nothing: they get no gap.
func (x *historyIndex) compacted(ctx context.Context, compactRev int64) (int64, error) {
	t := x.t
	var reads store.Txn
	noteRead, formatRead := reads.OnSuccess(clientv3.OpGet(t.keys.CompactionNote())), reads.OnSuccess(clientv3.OpGet(t.keys.Format()))
	bookkeeping := []store.Ref{reads.OnSuccess(clientv3.OpGet(t.keys.HistoryMeta())), reads.OnSuccess(clientv3.OpGet(t.keys.Recorder()))}
	octx, done := t.etcd.Op(ctx)
	resp, err := t.cli.Txn(octx).Then(reads.Then...).Commit()
	done()
	if err != nil {
		return 0, t.etcd.Err(ctx, "read compaction note", err)
	}
	note, format := noteRead.Range(resp), formatRead.Range(resp)
	// The revisions of baton's own bookkeeping lose no event: on an idle
	// cluster the index's last read is followed by its cursor's write
	// (meta/history) and the recorder's save (meta/recorder), which the
	// cursor does not move over (cursor). The last of each is known here.
	own := make(map[int64]bool)
	for _, r := range bookkeeping {
		for _, kv := range r.KVs(resp) {
			own[kv.ModRevision] = true
		}
	}
	x.mu.Lock()
	m := x.meta
	m.Buckets = slices.Clone(m.Buckets)
	// The watch resumes after compactRev: a change at compactRev has no
	// previous value to derive an end from, since etcd reads it at the
	// revision before.
	m.Backfill = &historyBackfill{Through: compactRev}
	from := max(m.Indexed+1, derivedSince(format))
	for own[from] {
		from++
	}
	if x.read >= compactRev && x.lastChange <= m.Indexed {
		// This node read every revision through compactRev before, and
		// found no change but baton's bookkeeping after the cursor
		// (each key's last write is all that own knows of).
		from = compactRev + 1
	}
	var gap pendingRecord
	var ops []clientv3.Op
	if from <= compactRev {
		gap = pendingRecord{entry: gapEntry, derived: true, ev: Event{
			Revision: compactRev, Time: store.NowUTC(), Type: EventGap,
			FromRevision: from, ToRevision: compactRev, Reason: gapReason(note, from),
		}}
		var bucket clientv3.LeaseID
		if bucket, err = x.bucket(ctx, &m, 1); err == nil {
			ops, _ = x.entryOps([]pendingRecord{gap}, bucket, nil, trailSpan{})
			m.Events++
			m.Buckets[len(m.Buckets)-1].Events++
		}
	}
	if err == nil {
		err = x.commit(ctx, m, ops)
	}
	x.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if ops != nil {
		t.metrics.trailGaps.Inc()
		t.log.Error("history index fell behind compaction: the events of these revisions that no pending record holds are lost; recorded a gap, scanning the pending records",
			"from_revision", gap.ev.FromRevision, "to_revision", gap.ev.ToRevision, "reason", gap.ev.Reason)
	} else {
		t.log.Warn("history index fell behind compaction, at a storage format whose events all have pending records; scanning them",
			"from_revision", m.Indexed+1, "to_revision", compactRev)
	}
	if err := x.backfill(ctx); err != nil {
		return 0, err
	}
	return x.meta.Indexed + 1, nil
}

// load reads meta/history; a first start over a data dir with pending
// records and no index starts a backfill of them.
func (x *historyIndex) load(ctx context.Context) error {
	t := x.t
	var reads store.Txn
	metaRead, formatRead := reads.OnSuccess(clientv3.OpGet(t.keys.HistoryMeta())), reads.OnSuccess(clientv3.OpGet(t.keys.Format()))
	octx, done := t.etcd.Op(ctx)
	txn, err := t.cli.Txn(octx).Then(reads.Then...).Commit()
	done()
	if err != nil {
		return t.etcd.Err(ctx, "read history meta", err)
	}
	resp, format := metaRead.Range(txn), formatRead.Range(txn)
	x.mu.Lock()
	defer x.mu.Unlock()
	// Another node may have indexed since this one last did.
	x.forgetRuns()
	if len(resp.Kvs) == 0 {
		// The first start: the pending records are backfilled, and the
		// watch reads on from where events began to be derived from
		// revisions alone. The engine may have served since then (it
		// starts before the trail): its holds have no pending record.
		// Without meta/format every event has one (format 1).
		through := txn.Header.Revision
		if len(format.Kvs) == 1 {
			through = min(through, derivedSince(format)-1)
		}
		m := historyMeta{Backfill: &historyBackfill{Through: through}}
		return x.commit(ctx, m, nil)
	}
	var m historyMeta
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return fmt.Errorf("decode history meta: %w", err)
	}
	if resp.Kvs[0].ModRevision != x.metaRev || x.read < m.Indexed {
		// Another node indexed since: what this one read before is not
		// the whole of what came after the cursor.
		x.read, x.lastChange = m.Indexed, 0
	}
	x.meta, x.metaRev = m, resp.Kvs[0].ModRevision
	x.count.Store(m.Events)
	x.seen(m.Indexed)
	return nil
}

// derivedSince is the first revision whose holds' events may be derived
// from revisions alone, as format (a read of meta/format) says: after the
// cluster's format reached store.DerivedFormat. Before, every event has a
// pending record. A missing or unreadable key says nothing: 1.
func derivedSince(format *etcdserverpb.RangeResponse) int64 {
	if len(format.Kvs) != 1 {
		return 1
	}
	kv := format.Kvs[0]
	if f, err := strconv.Atoi(string(kv.Value)); err == nil && f < store.DerivedFormat {
		return math.MaxInt64
	}
	return kv.ModRevision + 1
}

// gapEntry is a gap's <entry> (histkeys.go): after the entries of its
// revision's other events, which begin with "0" or "1".
const gapEntry = "2gap"

// gapReason says why the revisions from from on were compacted before the
// trail read them: the compaction note (compactor.go) when baton's
// compactor went past the trail's cursor, at or after from; otherwise
// etcd's own compaction or a recover's (which writes no note: it runs
// when etcd refuses writes).
func gapReason(note *etcdserverpb.RangeResponse, from int64) string {
	var n compactionNote
	if len(note.Kvs) == 1 && json.Unmarshal(note.Kvs[0].Value, &n) == nil && n.Revision > from && n.Reason != "" {
		return n.Reason
	}
	return "etcd's history was compacted before the audit trail read these revisions: an external etcd's own compaction, with a retention shorter than the trail's lag, or baton maintenance recover"
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
	t := x.t
	x.mu.Lock()
	defer x.mu.Unlock()
	had := x.meta.Events
	end := clientv3.GetPrefixRangeEnd(t.keys.Audit())
	for {
		bf := *x.meta.Backfill
		start := t.keys.Audit()
		if bf.After != "" {
			start = bf.After + "\x00"
		}
		octx, done := t.etcd.Op(ctx)
		resp, err := t.cli.Get(octx, start, clientv3.WithRange(end), clientv3.WithLimit(backfillPage))
		done()
		if err != nil {
			return t.etcd.Err(ctx, "scan pending history", err)
		}
		var recs []pendingRecord
		for _, kv := range resp.Kvs {
			recs = append(recs, t.pendingOfKey(kv, x.meta.Indexed, bf.Through)...)
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
		t.log.Info("history index: pending records indexed", "through_revision", m.Indexed, "events", m.Events-had)
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
