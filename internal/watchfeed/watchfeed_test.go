package watchfeed_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/internal/watchfeed"
	"github.com/baton-dev/baton/tests/testetcd"
)

// recorder keeps the revisions a feed handed over, and what it said.
type recorder struct {
	mu       sync.Mutex
	revs     []int64
	restarts []string
	hearing  []bool
}

func (r *recorder) handle(_ context.Context, wr clientv3.WatchResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range wr.Events {
		r.revs = append(r.revs, ev.Kv.ModRevision)
	}
	return nil
}

func (r *recorder) seen() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.revs)
}

func start(t *testing.T, cli *clientv3.Client, from int64, r *recorder, compacted func(context.Context, int64) (int64, error)) *watchfeed.Feed {
	t.Helper()
	f := watchfeed.New(watchfeed.Config{
		Client: cli, Name: "test", Key: "k/", Opts: []clientv3.OpOption{clientv3.WithPrefix()}, From: from,
		StallTimeout: 2 * watchfeed.ProbeAfter, Handle: r.handle, Compacted: compacted,
		OnRestart: func(reason string) { r.mu.Lock(); r.restarts = append(r.restarts, reason); r.mu.Unlock() },
		OnHearing: func(b bool) { r.mu.Lock(); r.hearing = append(r.hearing, b); r.mu.Unlock() },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-f.Opened():
	case <-time.After(10 * time.Second):
		t.Fatal("the feed did not hear etcd within 10s")
	}
	return f
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

// TestFeed_AStalledWatchIsReopenedFromTheNextRevision: a watch that stops
// delivering is declared stalled after StallTimeout and opened again on
// a new stream from the first revision it has not handed over, so the
// handler gets every revision once, in order.
func TestFeed_AStalledWatchIsReopenedFromTheNextRevision(t *testing.T) {
	cli := testetcd.Start(t).Client()
	r := &recorder{}
	f := start(t, cli, 1, r, nil)
	want := put(t, cli, 3)
	poll.Until(t, 10*time.Second, "the first three puts handed over", func() bool { return len(r.seen()) == 3 })
	gen := f.Deafen()
	want = append(want, put(t, cli, 3)...)
	poll.Until(t, 20*time.Second, "every put handed over after the stall", func() bool { return len(r.seen()) >= len(want) })
	if got := r.seen(); !slices.Equal(got, want) {
		t.Errorf("handed over %v, want %v", got, want)
	}
	if f.Generation() <= gen {
		t.Errorf("generation %d after the stall, want above %d", f.Generation(), gen)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.restarts, "stalled") {
		t.Errorf("restarts %v, want one stalled", r.restarts)
	}
	if !slices.Contains(r.hearing, false) || r.hearing[len(r.hearing)-1] != true {
		t.Errorf("hearing went %v, want it lost and then back", r.hearing)
	}
}

// TestFeed_CompactedRevisionsAskWhereToResume: a feed whose next revision
// was compacted away asks Compacted, and resumes where it says.
func TestFeed_CompactedRevisionsAskWhereToResume(t *testing.T) {
	cli := testetcd.Start(t).Client()
	revs := put(t, cli, 5)
	if _, err := cli.Compact(context.Background(), revs[3]); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	var asked int64
	start(t, cli, revs[0], r, func(_ context.Context, compactRev int64) (int64, error) {
		r.mu.Lock()
		asked = compactRev
		r.mu.Unlock()
		return compactRev + 1, nil
	})
	poll.Until(t, 10*time.Second, "the revision after the compaction handed over", func() bool { return len(r.seen()) == 1 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if asked != revs[3] || !slices.Equal(r.revs, revs[4:]) || !slices.Contains(r.restarts, "compacted") {
		t.Errorf("asked at %d, handed over %v, restarts %v; want asked at %d, %v, a compacted restart", asked, r.revs, r.restarts, revs[3], revs[4:])
	}
}
