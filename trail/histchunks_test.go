package trail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// readPages reads o's pages to the end, newest first, as a goroutine
// other than the test's may.
func readPages(e *lock.Engine, o trail.HistoryOptions) ([]lock.Event, error) {
	var out []lock.Event
	for {
		evs, next, err := holdtest.TrailOf(e).History(context.Background(), o)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
		if next == 0 {
			return out, nil
		}
		if o.Before != 0 && next >= o.Before {
			return nil, fmt.Errorf("history %+v: the next page starts at %d, not below this one", o, next)
		}
		o.Before = next
	}
}

// sameEvents fails unless got and want are the same events in the same
// order.
func sameEvents(t *testing.T, what string, got, want []lock.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Revision != w.Revision || g.Type != w.Type || g.Token != w.Token || g.Owner != w.Owner || g.Lock != w.Lock {
			t.Fatalf("%s: event %d is %+v, want %+v", what, i, g, w)
		}
	}
}

// ofLock keeps the events of name.
func ofLock(evs []lock.Event, name string) []lock.Event {
	var out []lock.Event
	for _, ev := range evs {
		if ev.Lock == name {
			out = append(out, ev)
		}
	}
	return out
}

// chunksUnder counts the keys of things' indexes under p, those of them
// that are chunks, and the events they hold.
func chunksUnder(t *testing.T, cli *clientv3.Client, p string) (keys, chunks, events int) {
	t.Helper()
	resp, err := cli.Get(holdtest.Ctx(t), p, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if !strings.HasPrefix(string(kv.Value), "[") {
			events++
			continue
		}
		var pairs []json.RawMessage
		if err := json.Unmarshal(kv.Value, &pairs); err != nil {
			t.Fatalf("%s holds %q: %v", kv.Key, kv.Value, err)
		}
		chunks, events = chunks+1, events+len(pairs)
	}
	return len(resp.Kvs), chunks, events
}

// TestHistoryChunks_AThingsEventsFoldAndReadBackInOrder: in storage format
// 3 a lock's index folds its events into chunks, and every way of reading
// it (pages of any size, a page that a revision of two events ends, a
// replay from any revision) gives what the whole trail says of the lock,
// in order, once.
func TestHistoryChunks_AThingsEventsFoldAndReadBackInOrder(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	cycles(t, e, []string{"c", "d"}, 320, 8)

	all := allPages(t, e, trail.HistoryOptions{Limit: lock.MaxListLimit})
	want := ofLock(all, "c")
	if len(want) != 2*4*40 {
		t.Fatalf("the trail holds %d events of c, want %d", len(want), 2*4*40)
	}
	handovers := 0
	for i := 1; i < len(want); i++ {
		if want[i].Revision == want[i-1].Revision {
			handovers++
		}
	}
	if handovers == 0 {
		t.Fatal("no release handed c over: the test does not cover a revision of two events")
	}
	// The index forgets the runs it is folding whenever it starts over
	// (a loaded machine's stalled watch, say), so how many keys are left
	// single varies; some chunks there must be.
	keys, chunks, events := chunksUnder(t, m.Client(), holdtest.Prefix+"trailname/lock/c/")
	if chunks == 0 || keys >= len(want) || events != len(want) {
		t.Fatalf("c's index holds %d keys (%d of them chunks) with %d events, for %d events: not folded", keys, chunks, events, len(want))
	}
	t.Logf("c's %d events are in %d keys, %d of them chunks", len(want), keys, chunks)
	for _, limit := range []int{1, 2, 7, 100} {
		sameEvents(t, fmt.Sprintf("pages of %d", limit), allPages(t, e, trail.HistoryOptions{Lock: "c", Limit: limit}), want)
	}

	// Replays from revisions inside chunks, at their edges, and between.
	replaysMatch(t, e, "c", want, 37)
}

// replaysMatch replays name's events (the whole trail's, for "") since
// every step-th revision of want, its events newest first, and since the
// revision before it, and fails unless each replay gives those of want
// after since, oldest first.
func replaysMatch(t *testing.T, e *lock.Engine, name string, want []lock.Event, step int) {
	t.Helper()
	for i := 0; i < len(want); i += step {
		for _, since := range []int64{want[i].Revision, want[i].Revision - 1} {
			var after []lock.Event
			for j := len(want) - 1; j >= 0; j-- {
				if want[j].Revision > since {
					after = append(after, want[j])
				}
			}
			sameEvents(t, fmt.Sprintf("replay since %d", since), replayed(t, e, name, since, len(after)), after)
		}
	}
}

// replayed subscribes to name's events (the whole trail's, for "") since
// since, and returns the first n, then checks that what follows is live:
// an acquire made after the replay, after only the events of earlier
// calls' such acquires.
func replayed(t *testing.T, e *lock.Engine, name string, since int64, n int) []lock.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(holdtest.Ctx(t), 20*time.Second)
	defer cancel()
	sub, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Lock: name, Replay: true, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	next := func() lock.Event {
		ev, ok := <-sub.C
		if !ok {
			t.Fatalf("replay since %d ended: %v", since, sub.Err())
		}
		return ev
	}
	out := make([]lock.Event, 0, n)
	for range n {
		out = append(out, next())
	}
	then := name
	if then == "" {
		then = "after-replay"
	}
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: then, Owner: "after-replay"})
	defer e.Release(context.Background(), then, l.Token)
	for {
		ev := next()
		if ev.Owner != "after-replay" {
			t.Fatalf("replay since %d: after its %d events came %+v, want the new acquire", since, n, ev)
		}
		if ev.Type == lock.EventAcquired && ev.Token == l.Token {
			return out
		}
	}
}

// TestHistoryChunks_PagesStayWholeWhileEventsFold: a reader paging a lock's
// history while the index folds it into chunks sees each event up to its
// first page's once and in order.
func TestHistoryChunks_PagesStayWholeWhileEventsFold(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	done := make(chan struct{})
	type paged struct {
		reads [][]lock.Event
		err   error
	}
	result := make(chan paged)
	go func() {
		var p paged
		defer func() { result <- p }()
		for {
			evs, err := readPages(e, trail.HistoryOptions{Lock: "hot", Limit: 5})
			if err != nil {
				p.err = err
				return
			}
			p.reads = append(p.reads, evs)
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	cycles(t, e, []string{"hot"}, 240, 4)
	close(done)
	p := <-result
	if p.err != nil {
		t.Fatal(p.err)
	}
	reads := p.reads
	final := allPages(t, e, trail.HistoryOptions{Lock: "hot", Limit: lock.MaxListLimit})
	for i, got := range reads {
		if len(got) == 0 {
			continue
		}
		var want []lock.Event
		for _, ev := range final {
			if ev.Revision <= got[0].Revision {
				want = append(want, ev)
			}
		}
		sameEvents(t, fmt.Sprintf("read %d of %d, from revision %d", i+1, len(reads), got[0].Revision), got, want)
	}
	if len(reads) < 2 {
		t.Fatalf("%d reads while the locks cycled: none overlapped the folding", len(reads))
	}
}

// TestHistoryChunks_AClusterAtFormat2KeepsAKeyAnEvent: a node of an older
// baton reads only single keys, so a cluster not raised to format 3 gets
// none else.
func TestHistoryChunks_AClusterAtFormat2KeepsAKeyAnEvent(t *testing.T) {
	e, m := holdtest.NewEngineAtFormat(t, "2")
	cycles(t, e, []string{"old"}, 80, 2)
	if evs := allPages(t, e, trail.HistoryOptions{Lock: "old", Limit: 50}); len(evs) != 160 {
		t.Fatalf("%d events of old, want 160", len(evs))
	}
	if keys, chunks, _ := chunksUnder(t, m.Client(), holdtest.Prefix+"trailname/lock/old/"); keys != 160 || chunks != 0 {
		t.Fatalf("old's index holds %d keys, %d chunks, at format 2; want 160 and none", keys, chunks)
	}
}

// TestHistoryChunks_AThingWithFewEventsABucketIsFoldedWhenTheBucketCloses:
// a trail spread over many things gives each fewer events a retention
// bucket than a chunk holds; the index folds what each has when a bucket
// fills, so that such a trail is folded too.
func TestHistoryChunks_AThingWithFewEventsABucketIsFoldedWhenTheBucketCloses(t *testing.T) {
	m := testetcd.Start(t)
	cfg := lock.DefaultConfig()
	tc := trail.DefaultConfig()
	tc.HistoryMaxEvents = 64 * 30 // buckets of 30 events
	e := holdtest.StartWithTrail(t, m.Client(), cfg, tc)
	names := []string{"s0", "s1", "s2", "s3", "s4", "s5"}
	for range 20 {
		for _, name := range names {
			l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: "w"})
			if err := e.Release(holdtest.Ctx(t), name, l.Token); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := allPages(t, e, trail.HistoryOptions{Limit: lock.MaxListLimit})
	for _, name := range names {
		want := ofLock(all, name)
		sameEvents(t, "pages of "+name, allPages(t, e, trail.HistoryOptions{Lock: name, Limit: 3}), want)
		keys, chunks, events := chunksUnder(t, m.Client(), holdtest.Prefix+"trailname/lock/"+name+"/")
		if events != len(want) || chunks == 0 || keys >= len(want)/2 {
			t.Fatalf("%s's index holds %d keys (%d of them chunks) with %d events, for %d events: not folded as buckets closed", name, keys, chunks, events, len(want))
		}
	}
}
