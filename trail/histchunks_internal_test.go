package trail

import (
	"fmt"
	"testing"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// runOf makes a run of n events of the thing of prefix, from revision
// from on, each under a key of its own.
func runOf(prefix string, n int, from int64, lease clientv3.LeaseID) *run {
	r := &run{lease: lease}
	for i := range n {
		ev := runEvent{rev: from + int64(i), entry: "0h" + fmt.Sprint(i) + "a", value: fmt.Sprintf(`{"n":%d}`, i)}
		r.events, r.keys, r.bytes = append(r.events, ev), append(r.keys, nameKey(prefix, ev)), r.bytes+len(ev.value)+24
	}
	return r
}

// TestPlanNames_ChunksFitTheTxnAndSplitRevisionsStaySingle: over an
// external etcd (128 ops a txn) a txn folds only the runs it has room
// for, every event gets a key, and a thing whose events of a revision
// two txns share keeps single keys and forgets its run.
func TestPlanNames_ChunksFitTheTxnAndSplitRevisionsStaySingle(t *testing.T) {
	x := &historyIndex{t: &Trail{format: 3, etcd: &store.Etcd{}}}
	const lease = clientv3.LeaseID(7)
	var things []nameEvents
	x.runs = make(map[string]*run)
	for i := range 10 {
		prefix := fmt.Sprintf("/trailname/lock/t%d/", i)
		x.runs[prefix] = runOf(prefix, chunkEvents-1, 100, lease)
		things = append(things, nameEvents{prefix: prefix, events: []runEvent{{rev: 500 + int64(i), entry: "0new", value: `{"new":true}`}}})
	}
	const used = 30
	split := func(prefix string) bool { return prefix == things[9].prefix }
	plan := x.planNames(things, lease, used, split)
	if n := len(plan.ops) + used + 1; n > x.maxOps() {
		t.Fatalf("the txn holds %d ops, more than %d", n, x.maxOps())
	}
	chunks, singles := 0, 0
	for _, op := range plan.ops {
		switch {
		case op.IsPut() && op.ValueBytes()[0] == '[':
			chunks++
			evs := chunkEventsOf(op.ValueBytes(), nil)
			if len(evs) != chunkEvents || evs[0].rev < evs[len(evs)-1].rev {
				t.Fatalf("chunk %s holds %d events, newest first: %v", op.KeyBytes(), len(evs), evs[0].rev > evs[len(evs)-1].rev)
			}
			if want := "0h0a"; string(op.KeyBytes()[len(op.KeyBytes())-len(want):]) != want {
				t.Fatalf("chunk under %s, want the key of its oldest event", op.KeyBytes())
			}
		case op.IsPut():
			singles++
		}
	}
	// (128-1-30-10 ops to spare) / (30 each) = 2.
	if chunks != 2 || singles != 8 {
		t.Fatalf("%d chunks, %d single keys; want 2 and 8", chunks, singles)
	}
	kept := 0
	for prefix, r := range plan.keep {
		switch {
		case prefix == things[9].prefix && r != nil:
			t.Fatal("the thing with an event of a split revision kept its run")
		case r != nil && len(r.events) != chunkEvents:
			t.Fatalf("%s kept a run of %d events, want %d", prefix, len(r.events), chunkEvents)
		case r != nil:
			kept++
		}
	}
	if kept != 7 {
		t.Fatalf("%d runs kept, want 7 (10, less 2 folded and 1 split)", kept)
	}
}
