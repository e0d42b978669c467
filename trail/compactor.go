package trail

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The compactor compacts an embedded member's history in place of etcd's
// periodic compactor (Config.CompactionRetention), on the node that keeps
// the history index: to the older of the revision CompactionRetention ago
// and the trail's cursor, the first revision the index has not read. The
// audit trail derives most events from the revisions themselves
// (derive.go), so compacting what the index has not read would lose them.
//
// A trail that stalls holds compaction back, and with it every old
// revision in etcd's backend. That must not take the locks down: once
// compaction has been held back for Config.TrailHoldBack, or the backend
// holds Config.TrailHoldBackQuota of the quota, the compactor compacts to
// the retention point anyway and leaves a compaction note saying so. The
// index, once it reads on, records the revisions it lost as a gap event
// with the note's reason (historybackfill.go). baton_trail_hold_back_ratio
// says how close a held-back compaction is to being forced.
type compactor struct {
	t *Trail
	// samples are the revisions seen at each tick, oldest first: the
	// retention point is the newest one at least CompactionRetention old.
	samples []revSample
	// done is the revision last compacted to.
	done int64
	// heldSince is when compaction was first held back for the trail, in
	// the hold-back going on; zero when it is not held back.
	heldSince time.Time
	warned    bool
}

type revSample struct {
	at  time.Time
	rev int64
}

// compactionNote is the value of meta/compaction: the last compaction
// that went past the trail's cursor, and why.
type compactionNote struct {
	Revision int64  `json:"revision"`
	Reason   string `json:"reason"`
}

// every is how often the compactor compacts: a tenth of the
// retention, as etcd's periodic compactor does, so that etcd holds
// between 1 and 1.1 retentions of history.
func (c *compactor) every() time.Duration {
	return min(max(c.t.cfg.CompactionRetention/10, 100*time.Millisecond), time.Hour)
}

// run compacts every c.every() until stop.
func (c *compactor) run(stop context.Context) {
	tick := time.NewTicker(c.every())
	defer tick.Stop()
	for {
		select {
		case <-stop.Done():
			return
		case <-tick.C:
		}
		if err := c.tick(stop, time.Now()); err != nil && stop.Err() == nil {
			c.t.log.Warn("compact etcd's history", "err", err)
		}
	}
}

// tick samples the revision and compacts as far as the retention and the
// trail let it.
func (c *compactor) tick(ctx context.Context, now time.Time) error {
	t := c.t
	if t.etcd.MemberStopped() {
		return nil
	}
	octx, done := t.etcd.Op(ctx)
	st, err := t.cli.Status(octx, "") // the in-process client's own member
	done()
	if err != nil {
		return t.etcd.Err(ctx, "status", err)
	}
	c.samples = append(c.samples, revSample{now, st.Header.Revision})
	point := c.retentionPoint(now)
	if point <= c.done || !t.etcd.Member.IsLeader() {
		c.release()
		return nil
	}
	cursor, read, err := t.hist.cursor(ctx)
	if err != nil {
		return err
	}
	// The revision after the cursor is read with its previous values
	// (prev_kv), which etcd reads at the cursor: that stays.
	target := min(point, cursor)
	if read < point {
		if reason := c.held(now, st.DbSizeInUse); reason != "" {
			if err := c.note(ctx, point, reason); err != nil {
				t.log.Warn("write compaction note", "err", err)
			}
			t.log.Error("compacting etcd's history past the audit trail's cursor: the events of the revisions it has not read may be lost, and the trail records each such loss as a gap",
				"trail_cursor", cursor, "compact_revision", point, "reason", reason)
			target = point
			c.release()
		}
	} else {
		c.release()
	}
	if target <= c.done {
		return nil
	}
	octx, done = t.etcd.Op(ctx)
	_, err = t.cli.Compact(octx, target)
	done()
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return t.etcd.Err(ctx, "compact", err)
	}
	c.done = target
	return nil
}

// retentionPoint is the newest revision sampled at least
// CompactionRetention before now (0 for none yet); older samples go.
func (c *compactor) retentionPoint(now time.Time) int64 {
	cut := now.Add(-c.t.cfg.CompactionRetention)
	i := 0
	for i < len(c.samples) && !c.samples[i].at.After(cut) {
		i++
	}
	if i == 0 {
		return 0
	}
	point := c.samples[i-1].rev
	c.samples = c.samples[i-1:]
	return point
}

// held notes that compaction is held back for the trail at now, with
// inUse bytes of the backend in use, and says why it may be held back no
// longer, or "". On the way to the bound it publishes how close it is
// (baton_trail_hold_back_ratio), and warns once at half of it.
func (c *compactor) held(now time.Time, inUse int64) string {
	t := c.t
	if c.heldSince.IsZero() {
		c.heldSince = now
	}
	quota := float64(t.cfg.backendQuota())
	byTime := now.Sub(c.heldSince).Seconds() / t.cfg.TrailHoldBack.Seconds()
	bySpace := float64(inUse) / (t.cfg.TrailHoldBackQuota * quota)
	switch {
	case byTime >= 1:
		return fmt.Sprintf("baton compacted past the audit trail, which had not read on for %s (--trail-hold-back)", t.cfg.TrailHoldBack)
	case bySpace >= 1:
		return fmt.Sprintf("baton compacted past the audit trail to keep etcd under its quota: %d of %.0f bytes in use (--trail-hold-back-quota %g)",
			inUse, quota, t.cfg.TrailHoldBackQuota)
	}
	ratio := max(byTime, bySpace)
	t.metrics.trailHoldBack.Set(ratio)
	if ratio >= 0.5 && !c.warned {
		c.warned = true
		t.log.Warn("the audit trail is not reading etcd's revisions: compaction is held back for it, and will go past it at the bound",
			"held_back", now.Sub(c.heldSince).Round(time.Second), "bytes_in_use", inUse, "ratio_of_bound", ratio)
	}
	return ""
}

// release notes that compaction is not held back.
func (c *compactor) release() {
	c.heldSince, c.warned = time.Time{}, false
	c.t.metrics.trailHoldBack.Set(0)
}

// note writes the compaction note for a compaction to rev past the trail.
func (c *compactor) note(ctx context.Context, rev int64, reason string) error {
	t := c.t
	octx, done := t.etcd.Op(ctx)
	defer done()
	_, err := t.cli.Put(octx, t.keys.CompactionNote(), store.MustJSON(compactionNote{Revision: rev, Reason: reason}))
	return err
}

// cursor is the trail's cursor, the revision before the first it still
// needs (meta/history's Indexed), and read, the revision through which
// this node's index has read etcd's changes. The changes without events
// that the index's watch has passed count as read: the cursor moves over
// them with a write of meta/history, so that a node that takes the index
// over starts there too and never asks for what compaction took. It
// moves only over a change outside meta/: over baton's own bookkeeping
// (its writes, the recorder's, which answers them) it would never stop,
// and an idle trail writes nothing; compacted tells those apart instead.
//
// A node whose index is not serving holds an old copy of meta/history,
// if any: the cursor is then etcd's. An old one would hold compaction
// back further than it need, and name the wrong cursor in the logs.
func (x *historyIndex) cursor(ctx context.Context) (cursor, read int64, err error) {
	if !x.serving.Load() {
		cursor, _, _, err = x.t.readIndexed(ctx)
		return cursor, cursor, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.meta
	if x.lastChange > m.Indexed && m.Partial == 0 && m.Backfill == nil { // read >= lastChange
		m.Indexed = x.read
		if err := x.commit(ctx, m, nil); err != nil && !errors.Is(err, errIndexMoved) {
			return 0, 0, err
		}
	}
	return x.meta.Indexed, max(x.read, x.meta.Indexed), nil
}

// watched is what one watch response brings the writer: its events, the
// revision through which the watch has sent everything, and the last
// change it holds to a key outside meta/ (baton's own bookkeeping: the
// index's cursor, the recorder's), 0 for none.
type watched struct {
	recs    []pendingRecord
	through int64
	change  int64
}

// lastChange is the revision of wr's last change that is not baton's
// bookkeeping.
func (t *Trail) lastChange(wr clientv3.WatchResponse) int64 {
	for i := len(wr.Events) - 1; i >= 0; i-- {
		if kv := wr.Events[i].Kv; !t.keys.IsBookkeeping(kv.Key) {
			return kv.ModRevision
		}
	}
	return 0
}

// watchedThrough is the revision through which wr says the watch has sent
// every change: its last event's, or a progress notification's header
// revision; 0 for neither.
func watchedThrough(wr clientv3.WatchResponse) int64 {
	if n := len(wr.Events); n > 0 {
		return wr.Events[n-1].Kv.ModRevision
	}
	if wr.IsProgressNotify() {
		return wr.Header.Revision
	}
	return 0
}
