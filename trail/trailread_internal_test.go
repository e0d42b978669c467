package trail

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestReadTrail_TheReadsOfOneCallSeeOneRevision: a fold between two reads
// of one call moves a thing's newest events into a chunk under the key of
// its oldest, which the second read reaches. Pinned, the second read sees
// the keys as the first did, and no event comes twice; after compaction
// took the pin, the call starts over.
func TestReadTrail_TheReadsOfOneCallSeeOneRevision(t *testing.T) {
	m := testetcd.Start(t)
	cli := m.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := startBeside(t, cli, lock.DefaultConfig(), DefaultConfig())
	prefix := "/t/trailname/lock/x/"
	src := trailSource{prefix: prefix, byName: true}
	var events []runEvent
	var keys []string
	for rev := int64(10); rev <= 15; rev++ {
		ev := runEvent{rev: rev, entry: fmt.Sprintf("0h%da", rev), value: `{"type":"acquired"}`}
		if _, err := cli.Put(ctx, nameKey(prefix, ev), ev.value); err != nil {
			t.Fatal(err)
		}
		events, keys = append(events, ev), append(keys, nameKey(prefix, ev))
	}
	revs := func(r trailRead) []int64 {
		var out []int64
		for _, kv := range r.events {
			out = append(out, kv.rev)
		}
		return out
	}

	p := &pin{}
	first, err := e.trail.readTrailKVs(ctx, src, p, prefix+revKey(100), src.end(), 2)
	if err != nil || !slices.Equal(revs(first), []int64{15, 14}) {
		t.Fatalf("first read: %v, %v; want 15 and 14", revs(first), err)
	}
	fold := foldOps(prefix, events, keys, clientv3.NoLease)
	if _, err := cli.Txn(ctx).Then(fold...).Commit(); err != nil {
		t.Fatal(err)
	}
	second, err := e.trail.readTrailKVs(ctx, src, p, first.last+"\x00", src.end(), 10)
	if err != nil || !slices.Equal(revs(second), []int64{13, 12, 11, 10}) {
		t.Fatalf("second read, pinned: %v, %v; want 13 to 10, as the first read saw the keys", revs(second), err)
	}
	if all, err := e.trail.readNewestKVs(ctx, src, 100, 100); err != nil || len(all) != 6 || all[0].rev != 15 || all[5].rev != 10 {
		t.Fatalf("a call after the fold: %v, %v; want the 6 events once, newest first", all, err)
	}

	head, err := cli.Get(ctx, "any")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, head.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := e.trail.readTrailKVs(ctx, src, p, prefix+revKey(100), src.end(), 1); err != errPinCompacted {
		t.Fatalf("a read at a compacted pin: %v; want errPinCompacted", err)
	}
	tries := 0
	got, err := retryPinned(func(p *pin) (int, error) {
		if tries++; tries == 1 {
			return 0, errPinCompacted
		}
		r, err := e.trail.readTrailKVs(ctx, src, p, prefix+revKey(100), src.end(), 0)
		return len(r.events), err
	})
	if err != nil || got != 6 || tries != 2 {
		t.Fatalf("retried read: %d events, %v, after %d tries; want 6 after 2", got, err, tries)
	}
}
