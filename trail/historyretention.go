package trail

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// historyEventBytes is what an event of the trail takes in etcd's backend,
// measured (docs/PERFORMANCE.md): about 640 bytes in use after compaction
// over its keys (its trailname/ entry, its share of its revision's trail/
// key, and the pending record it replaced), rounded up.
const historyEventBytes = 700

// historyMaxEventsFor is the most events a trail may keep under quota
// (0: etcd's default): their bytes must stay under half of it, so the
// trail alone never raises NOSPACE and locks keep being granted.
func historyMaxEventsFor(quota int64) int64 {
	return cmp.Or(quota, store.DefaultBackendQuota) / 2 / historyEventBytes
}

// HistoryQuotaFor is the smallest backend quota (Config.BackendQuota)
// under which Validate accepts a HistoryMaxEvents of events.
func HistoryQuotaFor(events int64) int64 { return 2 * events * historyEventBytes }

// bucket returns the lease for n more events, opening a new bucket in m
// when the newest is full or old.
func (x *historyIndex) bucket(ctx context.Context, m *historyMeta, n int) (clientv3.LeaseID, error) {
	t := x.t
	now := time.Now()
	width := t.historyBucketWidth()
	per := int64(t.bucketEvents())
	if k := len(m.Buckets); k > 0 {
		b := m.Buckets[k-1]
		if b.Events+int64(n) <= per && now.Before(b.Opened.Add(width)) {
			return b.Lease, nil
		}
	}
	ttl := t.cfg.HistoryRetention + width
	var resp *clientv3.LeaseGrantResponse
	err := t.etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = t.cli.Grant(octx, store.TTLSeconds(ttl))
		return err
	})
	if err != nil {
		return 0, t.etcd.Err(ctx, "grant history bucket lease", err)
	}
	m.Buckets = append(m.Buckets, historyBucket{Lease: resp.ID, Opened: now.UTC(), Expires: now.Add(time.Duration(resp.TTL) * time.Second).UTC()})
	return resp.ID, nil
}

// fit is how many of recs, from the first, one index txn takes: each
// event costs at most a key of the trail, a key of its thing's index and
// the deletes of the pending records it replaces (a derived event none),
// and the txn puts meta/history too. It takes no more than a retention
// bucket holds (bucketEvents), so that retention drops a bounded slice.
func (x *historyIndex) fit(recs []pendingRecord) int {
	budget, n := x.maxOps()-1, 0
	for limit := min(len(recs), x.t.bucketEvents()); n < limit; n++ {
		cost := 2 + len(recs[n].deletes)
		if cost > budget {
			break
		}
		budget -= cost
	}
	return max(n, 1)
}

// bucketEvents is how many events a retention bucket takes: a
// historyBuckets-th of the bound, and at least a chunk, so that an index
// txn needs a lease at most.
func (t *Trail) bucketEvents() int {
	return max(int(t.historyMaxEvents()/historyBuckets), indexChunk)
}

// historyBucketWidth is how long a bucket takes new events: the
// granularity of retention by age.
func (t *Trail) historyBucketWidth() time.Duration {
	return min(max(t.cfg.HistoryRetention/24, time.Second), time.Hour)
}

// trim drops the buckets etcd expired, and the oldest while the trail
// holds more than HistoryMaxEvents.
func (x *historyIndex) trim(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.meta
	now := time.Now()
	n := 0
	var dropped int64
	// The newest bucket stays: it is the one being written.
	for n < len(m.Buckets)-1 && now.After(m.Buckets[n].Expires) {
		dropped += m.Buckets[n].Events
		n++
	}
	if n == 0 {
		return x.trimCount(ctx)
	}
	m.Buckets = slices.Clone(m.Buckets[n:])
	m.Events -= dropped
	if err := x.commit(ctx, m, nil); err != nil {
		return err
	}
	x.t.historyDropped("age", dropped)
	return x.trimCount(ctx)
}

// trimCount revokes the oldest buckets while the trail holds more than
// HistoryMaxEvents. The caller holds mu.
func (x *historyIndex) trimCount(ctx context.Context) error {
	t := x.t
	for x.meta.Events > t.historyMaxEvents() && len(x.meta.Buckets) > 1 {
		m := x.meta
		b := m.Buckets[0]
		// Revoke first: if the node stops before the meta write, meta
		// still counts the bucket, the trail is still over the bound,
		// and the next trim revokes it again (etcd answers that the
		// lease is gone) and drops it then.
		err := t.etcd.RetryNotApplied(ctx, func(octx context.Context) error {
			_, err := t.cli.Revoke(octx, b.Lease)
			return err
		})
		if err != nil && !store.IsLeaseNotFound(err) {
			return t.etcd.Err(ctx, "drop oldest history", err)
		}
		m.Buckets = slices.Clone(m.Buckets[1:])
		m.Events -= b.Events
		if err := x.commit(ctx, m, nil); err != nil {
			return err
		}
		t.historyDropped("size", b.Events)
	}
	return nil
}

// defaultHistoryMaxEvents bounds the trail when HistoryMaxEvents is 0: a
// million events take about a quarter of etcd's default quota.
const defaultHistoryMaxEvents = 1000000

// historyMaxEvents is the trail's bound in force.
func (t *Trail) historyMaxEvents() int64 {
	if n := t.cfg.HistoryMaxEvents; n > 0 {
		return int64(n)
	}
	return max(min(defaultHistoryMaxEvents, historyMaxEventsFor(t.cfg.BackendQuota)), historyBuckets)
}

// historyDropped counts n events dropped from the trail for reason.
func (t *Trail) historyDropped(reason string, n int64) {
	t.metrics.historyDropped.WithLabelValues(reason).Add(float64(n))
	t.log.Info("dropped the oldest audit events", "reason", reason, "events", n,
		"retention", t.cfg.HistoryRetention, "max_events", t.historyMaxEvents())
}
