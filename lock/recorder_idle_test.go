package lock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// write is one key etcd changed.
type write struct {
	key, value string
}

// writesDuring watches every key for d from the revision after rev and
// returns what was written meanwhile: the observation itself, not a wait
// for anything.
func writesDuring(t *testing.T, cli *clientv3.Client, rev int64, d time.Duration) []write {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ws []write
	for wr := range cli.Watch(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil && ctx.Err() == nil {
			t.Fatalf("watch from %d: %v", rev+1, err)
		}
		for _, ev := range wr.Events {
			ws = append(ws, write{string(ev.Kv.Key), string(ev.Kv.Value)})
		}
	}
	return ws
}

func currentRevision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(holdtest.Ctx(t), "meta-probe", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// savedCursor is the recorder's cursor in etcd, 0 when none is saved.
func savedCursor(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(holdtest.Ctx(t), holdtest.Prefix+"meta/recorder")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	n, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		t.Fatalf("recorder cursor %q: %v", resp.Kvs[0].Value, err)
	}
	return n
}

// TestRecorder_IdleNodeWritesNothingAfterItsCursorIsSaved runs two nodes
// (engines sharing one member and prefix) that save their cursor every
// 20ms if it moved, and counts the etcd revisions while they idle for 2s
// (100 save intervals): there must be none, before some activity once
// the history index has started, and after it, once the cursor is saved
// past it.
func TestRecorder_IdleNodeWritesNothingAfterItsCursorIsSaved(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	m := testetcd.Start(t)
	cli := m.Client()
	cfg := lock.DefaultConfig()
	cfg.RecorderSaveEvery = 20 * time.Millisecond
	e := holdtest.StartEngine(t, m, cfg)
	holdtest.StartEngine(t, m, cfg)
	poll.Until(t, 5*time.Second, "the first cursor saved", func() bool { return savedCursor(t, cli) > 0 })
	// A first start writes meta/history twice, once to begin the
	// backfill of what came before the index and once to end it: setup,
	// not idling. A history read waits for the backfill to end.
	holdtest.History(t, e, "job")

	rev := currentRevision(t, cli)
	if ws := writesDuring(t, cli, rev, 2*time.Second); len(ws) > 0 {
		t.Fatalf("idle nodes wrote %q", ws)
	}
	if now := currentRevision(t, cli); now != rev {
		t.Fatalf("revision moved from %d to %d while idle", rev, now)
	}

	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "job", Owner: "w1", TTL: time.Minute})
	if err := e.Release(holdtest.Ctx(t), "job", l.Token); err != nil {
		t.Fatal(err)
	}
	// The last change the release caused is the release itself: the
	// history index's write after it (meta/history) is bookkeeping,
	// which moves no cursor, so the recorder's goes up to the release.
	evs := holdtest.History(t, e, "job")
	if len(evs) == 0 || evs[0].Type != lock.EventReleased {
		t.Fatalf("history of job: %+v, want its release newest", evs)
	}
	settled := evs[0].Revision
	poll.Until(t, 5*time.Second, "the cursor saved past the release", func() bool { return savedCursor(t, cli) >= settled })
	// Once the key holds the release's revision no node can write it
	// again: a save must raise it, and the index's and the cursors'
	// writes do not move a node's progress.
	rev = currentRevision(t, cli)
	if ws := writesDuring(t, cli, rev, 2*time.Second); len(ws) > 0 {
		t.Fatalf("nodes idle again wrote %q", ws)
	}
}
