package watchhub_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/watchfeed"
	"github.com/baton-dev/baton/internal/watchhub"
	"github.com/baton-dev/baton/tests/testetcd"
)

// owner is a hub's owner with one kind of registration: the revisions
// dispatched, and the compactions heard.
type owner struct {
	revs      []int64
	compacted []int64
}

func start(t *testing.T, cli *clientv3.Client, from int64) (*watchhub.Hub, *owner) {
	t.Helper()
	o := &owner{}
	h := watchhub.New(watchfeed.Config{
		Client: cli, Name: "test", Key: "k/", Opts: []clientv3.OpOption{clientv3.WithPrefix()}, From: from,
		StallTimeout: 2 * watchfeed.ProbeAfter,
	}, func(wr clientv3.WatchResponse) {
		for _, ev := range wr.Events {
			o.revs = append(o.revs, ev.Kv.ModRevision)
		}
	}, func(rev int64) { o.compacted = append(o.compacted, rev) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Feed.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, o
}

func put(t *testing.T, cli *clientv3.Client, n int) (revs []int64) {
	t.Helper()
	for i := range n {
		resp, err := cli.Put(context.Background(), fmt.Sprintf("k/%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, resp.Header.Revision)
	}
	return revs
}

func await(t *testing.T, h *watchhub.Hub, rev int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Await(ctx, rev, nil); err != nil {
		t.Fatalf("the hub did not reach revision %d: %v", rev, err)
	}
}

// TestHub_ALateRegistrationGetsWhatCameSinceItsRead: the events after a
// revision an owner read at are in Recent, under the lock, in order;
// At gives one revision's; Rev and Revision say how far the hub got.
func TestHub_ALateRegistrationGetsWhatCameSinceItsRead(t *testing.T) {
	cli := testetcd.Start(t).Client()
	first := put(t, cli, 1)[0]
	h, o := start(t, cli, first+1)
	revs := put(t, cli, 5)
	await(t, h, revs[4])

	h.Lock()
	defer h.Unlock()
	if h.Rev() != revs[4] {
		t.Errorf("Rev = %d, want %d", h.Rev(), revs[4])
	}
	if !slices.Equal(o.revs, revs) {
		t.Errorf("dispatched %v, want %v", o.revs, revs)
	}
	recent, ok := h.Recent(revs[1])
	if !ok {
		t.Fatalf("Recent(%d) reports it lost events, with every event since %d kept", revs[1], first)
	}
	var got []int64
	for _, ev := range recent {
		got = append(got, ev.Kv.ModRevision)
	}
	if !slices.Equal(got, revs[2:]) {
		t.Errorf("Recent(%d) = %v, want %v", revs[1], got, revs[2:])
	}
	at, ok := h.At(revs[3])
	if !ok || len(at) != 1 || string(at[0].Kv.Key) != "k/3" {
		t.Errorf("At(%d) = %v, %v; want the put of k/3", revs[3], at, ok)
	}
	if _, ok := h.At(revs[4] + 1); ok {
		t.Errorf("At(%d), a revision not dispatched yet, says it knows it", revs[4]+1)
	}
}

// TestHub_CompactionTellsTheOwnerAndEmptiesRecent: events compacted away
// before the hub read them are the owner's to learn of (compacted), and
// Recent then reports that it cannot cover what came before.
func TestHub_CompactionTellsTheOwnerAndEmptiesRecent(t *testing.T) {
	cli := testetcd.Start(t).Client()
	revs := put(t, cli, 4)
	if _, err := cli.Compact(context.Background(), revs[2]); err != nil {
		t.Fatal(err)
	}
	h, o := start(t, cli, revs[0])
	await(t, h, revs[3])
	h.Lock()
	defer h.Unlock()
	if !slices.Equal(o.compacted, []int64{revs[2]}) {
		t.Errorf("compactions heard %v, want [%d]", o.compacted, revs[2])
	}
	if !slices.Equal(o.revs, revs[3:]) {
		t.Errorf("dispatched %v, want %v", o.revs, revs[3:])
	}
	if _, ok := h.Recent(revs[0]); ok {
		t.Errorf("Recent(%d) claims every event since, across a compaction", revs[0])
	}
}

// TestHub_RecentHoldsAtMostRecentBytes: large values are kept only up to
// RecentBytes: Recent then covers the newest events, and says it lost
// the older ones, which were dispatched all the same.
func TestHub_RecentHoldsAtMostRecentBytes(t *testing.T) {
	cli := testetcd.Start(t).Client()
	first := put(t, cli, 1)[0]
	h, o := start(t, cli, first+1)
	big := string(make([]byte, 1<<20))
	n := watchhub.RecentBytes>>20 + 4
	var revs []int64
	for i := range n {
		resp, err := cli.Put(context.Background(), fmt.Sprintf("k/big-%d", i), big)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, resp.Header.Revision)
	}
	await(t, h, revs[n-1])
	h.Lock()
	defer h.Unlock()
	if len(o.revs) != n {
		t.Fatalf("dispatched %d events, want %d", len(o.revs), n)
	}
	if _, ok := h.Recent(revs[0]); ok {
		t.Errorf("Recent(%d) says it holds %d MiB of values, more than RecentBytes", revs[0], n-1)
	}
	recent, ok := h.Recent(revs[n-3])
	if !ok || len(recent) != 2 {
		t.Fatalf("Recent(%d) = %d events, %v; want the newest 2", revs[n-3], len(recent), ok)
	}
}
