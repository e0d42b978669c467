package trail_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// trailKeys counts trail/'s keys, those of them that are chunks, and the
// events they hold.
func trailKeys(t *testing.T, cli *clientv3.Client) (keys, chunks, events int) {
	t.Helper()
	resp, err := cli.Get(holdtest.Ctx(t), holdtest.Prefix+"trail/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		var items []json.RawMessage
		if err := json.Unmarshal(kv.Value, &items); err != nil {
			t.Fatalf("%s holds %q: %v", kv.Key, kv.Value, err)
		}
		if strings.HasPrefix(string(kv.Value), "[[") {
			chunks++
		}
		events += len(items)
	}
	return len(resp.Kvs), chunks, events
}

// TestTrailChunks_TheWholeTrailReadsBackAsItHappened: in storage format 4
// trail/ keeps the revisions of one index txn in one key, and every way
// of reading the whole trail (pages of any size, pages that one large
// revision ends or fills, replays from any revision) gives the events a
// live subscription saw, which the index does not serve, in revision
// order, each once. The large revision is a session's release of more
// locks than one index txn over an external etcd holds, split over two
// txns, which keep its parts out of the chunks.
func TestTrailChunks_TheWholeTrailReadsBackAsItHappened(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	live, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Buffer: 8192})
	if err != nil {
		t.Fatal(err)
	}
	cycles(t, e, []string{"a", "b", "c"}, 300, 8)
	s, err := e.CreateSession(ctx, "many", 0)
	if err != nil {
		t.Fatal(err)
	}
	const held = 32 // maxEndsPerTxn: one txn ends them all
	for i := range held {
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: fmt.Sprintf("m%02d", i), Owner: "many", Session: s.ID})
	}
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	cycles(t, e, []string{"a", "b"}, 100, 4)

	const total = 2*400 + 2*held
	var seen []lock.Event // oldest first
	for len(seen) < total {
		select {
		case ev := <-live.C:
			seen = append(seen, ev)
		case <-ctx.Done():
			t.Fatalf("the live subscription saw %d events, want %d: %v", len(seen), total, live.Err())
		}
	}
	perRev := map[int64]int{}
	for _, ev := range seen {
		perRev[ev.Revision]++
	}
	if big := perRev[seen[2*300+held].Revision]; big != held {
		t.Fatalf("the session's release is %d events of one revision, want %d", big, held)
	}

	all := allPages(t, e, trail.HistoryOptions{Limit: lock.MaxListLimit})
	if len(all) != total {
		t.Fatalf("the trail holds %d events, want %d", len(all), total)
	}
	checkTrail(t, all, 400+held)
	got := map[string]int{}
	for i, ev := range all {
		got[fmt.Sprint(ev.Revision, ev.Type, ev.Name, ev.Token)]++
		if w := seen[total-1-i]; w.Revision != ev.Revision {
			t.Fatalf("event %d of the trail is of revision %d; the live subscription saw %d", i, ev.Revision, w.Revision)
		}
	}
	for _, ev := range seen {
		if k := fmt.Sprint(ev.Revision, ev.Type, ev.Name, ev.Token); got[k] != 1 {
			t.Fatalf("the trail holds %s %d times", k, got[k])
		}
	}
	keys, chunks, events := trailKeys(t, m.Client())
	if events != total || chunks == 0 || keys >= len(perRev) {
		t.Fatalf("trail/ holds %d keys (%d of them chunks) with %d events, for %d events in %d revisions: no revisions were kept together", keys, chunks, events, total, len(perRev))
	}
	t.Logf("%d events of %d revisions are in %d trail/ keys, %d of them chunks", total, len(perRev), keys, chunks)

	for _, limit := range []int{1, 2, 7, 100} {
		sameEvents(t, fmt.Sprintf("pages of %d", limit), allPages(t, e, trail.HistoryOptions{Limit: limit}), all)
	}
	replaysMatch(t, e, "", all, 53)
}

// TestTrailChunks_AClusterAtFormat3KeepsAKeyARevision: a node that knows
// only format 3 reads a trail/ key as one revision's events, so a cluster
// not raised to format 4 gets no chunks there.
func TestTrailChunks_AClusterAtFormat3KeepsAKeyARevision(t *testing.T) {
	e, m := holdtest.NewEngineAtFormat(t, "3")
	cycles(t, e, []string{"old"}, 80, 2)
	all := allPages(t, e, trail.HistoryOptions{Limit: 7})
	checkTrail(t, all, 80)
	revs := map[int64]bool{}
	for _, ev := range all {
		revs[ev.Revision] = true
	}
	// A revision two index txns share has a key in each.
	if keys, chunks, events := trailKeys(t, m.Client()); keys < len(revs) || chunks != 0 || events != 160 {
		t.Fatalf("trail/ holds %d keys, %d chunks, %d events at format 3; want one or more a revision (%d), no chunk and 160 events", keys, chunks, events, len(revs))
	}
}
