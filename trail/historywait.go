package trail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// awaitIndexed waits until the trail holds every event committed before
// the call: it reads the current revision, learns from the event hub the
// newest pending record up to it, and waits for the index to pass that.
// Without it a page read just after a release could miss the release.
// It returns the revision it read: no event of a later one is waited for.
func (t *Trail) awaitIndexed(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, t.etcd.OpTimeout)
	defer cancel()
	indexed, backlog, rev, err := t.readIndexed(ctx)
	if err != nil {
		return 0, err
	}
	if indexed >= rev {
		return rev, nil
	}
	last, err := t.streams.eventsThrough(ctx, rev)
	if err != nil {
		return 0, t.indexBehind(ctx, indexed, rev, err)
	}
	return rev, t.awaitIndexedThrough(ctx, max(last, backlog))
}

// readIndexed reads meta/history's Indexed, and the revision read at.
// backlog is a revision the index must reach before it holds the events
// written before it existed or before a compaction (see backfill); with
// no index yet, 1: the first backfill ends at a revision of at least 1.
func (t *Trail) readIndexed(ctx context.Context) (indexed, backlog, rev int64, err error) {
	octx, done := t.etcd.Op(ctx)
	resp, err := t.cli.Get(octx, t.keys.HistoryMeta())
	done()
	if err != nil {
		return 0, 0, 0, t.etcd.Err(ctx, "read history index", err)
	}
	rev = resp.Header.Revision
	if len(resp.Kvs) == 0 {
		return 0, 1, rev, nil
	}
	var m historyMeta
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return 0, 0, 0, fmt.Errorf("decode history meta: %w", err)
	}
	t.hist.seen(m.Indexed)
	if m.Backfill != nil {
		backlog = m.Backfill.Through
	}
	return m.Indexed, backlog, rev, nil
}

// awaitIndexedThrough waits until the index has passed rev: on the node
// that indexes, for its own write; elsewhere by reading meta/history
// again, sooner at first.
func (t *Trail) awaitIndexedThrough(ctx context.Context, rev int64) error {
	x := t.hist
	backoff := time.Millisecond
	for {
		x.notify.Lock()
		indexed, changed := x.indexed, x.changed
		x.notify.Unlock()
		if indexed >= rev {
			return nil
		}
		x.flushNow()
		timer := time.NewTimer(backoff)
		select {
		case <-changed:
		case <-timer.C:
			if _, _, _, err := t.readIndexed(ctx); err != nil {
				timer.Stop()
				return err
			}
		case <-ctx.Done():
			timer.Stop()
			return t.indexBehind(ctx, indexed, rev, ctx.Err())
		}
		timer.Stop()
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// indexBehind is the error of a read that waited too long for the index.
func (t *Trail) indexBehind(ctx context.Context, indexed, rev int64, err error) error {
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	return fmt.Errorf("%w: the history index is behind (indexed through revision %d, events up to %d are committed): %v",
		ErrUnavailable, indexed, rev, err)
}
