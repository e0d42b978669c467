package trail

import (
	"context"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestBackfill_FindsTheAcquireThatAnEndWasWrittenOver: after compaction
// ran ahead of the index, the backfill reads the pending records as they
// are now. In storage format 2 a hold's end is written over its acquired
// record, so the scan finds the acquire in the end record, and indexes it
// unless the index held it already (recorded at or before the cursor).
func TestBackfill_FindsTheAcquireThatAnEndWasWrittenOver(t *testing.T) {
	m := testetcd.Start(t)
	cli := m.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys := &Trail{keys: store.Keys{Prefix: lock.DefaultConfig().Prefix}, format: 2} // keys and writes as a format 2 node makes them
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	queued := at.Add(-time.Second)
	holds := map[string]store.Holder{
		"h0": {Owner: "o0", Hold: "h0", AcquiredAt: at},
		"h1": {Owner: "o1", Hold: "h1", AcquiredAt: at.Add(time.Second), QueuedAt: &queued},
		"h2": {Owner: "o2", Hold: "h2", AcquiredAt: at.Add(2 * time.Second)},
	}
	put := func(key, value string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, key, value)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	acquire := func(hold string) int64 {
		return put(keys.keys.Acquired("l", hold), store.MustJSON(holds[hold].BegunEvent("l")))
	}
	end := func(hold string, token int64) int64 {
		hr := holds[hold]
		ev := hr.Event("l", EventReleased, hr.AcquiredAt.Add(time.Minute))
		ev.Token = token
		// As a format 2 node ends a hold: its end over its acquired record.
		began := hr.BegunEvent("l")
		if _, err := cli.Put(ctx, keys.keys.Acquired("l", hold), store.MustJSON(store.EndRecord{Event: ev, Began: &began})); err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Get(ctx, keys.keys.Acquired("l", hold))
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 2 {
			t.Fatalf("the end of %s: %v, %v; want it over the acquired record", hold, resp, err)
		}
		return resp.Kvs[0].ModRevision
	}
	a0 := acquire("h0") // indexed before compaction: the cursor is here
	a1 := acquire("h1")
	e0 := end("h0", a0)
	e1 := end("h1", a1)
	a2 := acquire("h2") // still held
	put(keys.keys.HistoryMeta(), store.MustJSON(historyMeta{Indexed: a0, Backfill: &historyBackfill{Through: a2}}))
	put(keys.keys.Format(), "2")
	e := startBeside(t, cli, lock.DefaultConfig(), DefaultConfig())
	evs, _, err := e.History(ctx, HistoryOptions{Lock: "l"})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		rev, token int64
		typ        EventType
		owner      string
	}
	want := []seen{{a2, a2, EventAcquired, "o2"}, {e1, a1, EventReleased, "o1"}, {e0, a0, EventReleased, "o0"}, {a1, a1, EventAcquired, "o1"}}
	if len(evs) != len(want) {
		t.Fatalf("history %+v, want %d events: h0's acquire was indexed before, and is not again", evs, len(want))
	}
	for i, ev := range evs {
		if got := (seen{ev.Revision, ev.Token, ev.Type, ev.Owner}); got != want[i] {
			t.Fatalf("event %d is %+v, want %+v (history %+v)", i, got, want[i], evs)
		}
	}
	if q := evs[3].QueuedAt; q == nil || !q.Equal(queued) || !evs[3].Time.Equal(holds["h1"].AcquiredAt) {
		t.Fatalf("h1's acquire, found in its end: %+v, want its time and queued_at", evs[3])
	}
	left, err := cli.Get(ctx, keys.keys.Audit(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Kvs) != 1 || string(left.Kvs[0].Key) != keys.keys.Acquired("l", "h2") {
		t.Fatalf("pending records left: %v, want only the open hold's", left.Kvs)
	}
}

// TestBackfill_FirstStartIndexesTheHoldsBeforeIt: the engine serves
// before the trail's index first starts (a node's start, or a trail
// writer that never ran). The holds of that time have no pending record
// at storage format 5: the index's first start derives them from etcd's
// revisions since the format was written, instead of starting after them.
func TestBackfill_FirstStartIndexesTheHoldsBeforeIt(t *testing.T) {
	m := testetcd.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng, err := lock.New(ctx, m.Client(), lock.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	l, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: "before", Owner: "o", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Release(ctx, "before", l.Token); err != nil {
		t.Fatal(err)
	}
	tr, err := New(ctx, eng, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// A read waits for the index to pass the events the trail's own
	// watch has heard; those before it started are indexed soon after.
	var evs []Event
	poll.Until(t, 10*time.Second, "the history of the holds before the trail", func() bool {
		evs, _, err = tr.History(ctx, HistoryOptions{Lock: "before"})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs) >= 2
	})
	if len(evs) != 2 || evs[0].Type != EventReleased || evs[1].Type != EventAcquired || evs[1].Token != l.Token {
		t.Fatalf("history %+v, want the acquire (token %d) and the release made before the trail started", evs, l.Token)
	}
}
