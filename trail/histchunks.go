package trail

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A thing's index (trailname/) keeps one key per event as the history
// index writes it. etcd holds every live key in memory, in its key index
// and in its lessor's maps of the key's lease, and the Go collector marks
// them all on every cycle: a node's heap and its lock throughput pay for
// every live key of the trail (docs/PERFORMANCE.md, "Beside a full
// trail"). So in storage format 3 the index folds a thing's events into
// chunks, one key each:
//
//	trailname/<kind>/<name>/<rev>/<entry>  [[<revision>,<event>],…], newest first
//
// named by the chunk's oldest event, whose own key it overwrites. A chunk
// is a run of the thing's events with no other of its events between
// them, and so no two keys of a thing cover overlapping spans: key order
// is event order, and a reader that takes each key's events whole, cut
// only by the revision bounds of its call (not of the window that found
// the key), reads them newest first exactly once. A chunk never splits a
// thing's events of one revision: the index writes a revision too large
// for one txn over two (historyMeta.Partial), newest first, so a thing
// with events of it in both keeps them in single keys, and its run starts
// anew after them.
//
// An index txn writes a thing's events in it as one key: the event's
// own, or a chunk of them, since they are a run of the thing's events
// too. The index keeps the runs it is folding in memory (the events it
// wrote since the thing's last chunk of chunkEvents, and their keys), so
// that a chunk costs one put and a delete for each key it replaces, with
// no read: in the txn that brings a run to chunkEvents, or, for the runs
// of a retention bucket that takes no more events, however short, in
// txns of their own (flushRuns); a chunk holds one bucket's events,
// under its lease, so retention is unchanged. Forgetting a run is always
// safe: its keys stay as they are, and the next run begins after them.
// The index forgets them all when it cannot be sure of what it wrote (a
// failed txn, a new turn as the indexer), and, beyond runBytes, the runs
// of some things to make room.

// chunkEvents is how many events a chunk folds: live keys fall by about
// that much, for one more write of each event's bytes.
const chunkEvents = 32

// runBytes bounds the values the index keeps of the runs it is folding.
const runBytes = 16 << 20

// mergeTxnBytes bounds the chunk values one index txn writes, well under
// etcd's request size (1.5 MiB by default).
const mergeTxnBytes = 256 << 10

// runEvent is one event of a run, as the index wrote it.
type runEvent struct {
	rev   int64
	entry string
	value string // its indexedValue
}

// run is a thing's events written since its last chunk of chunkEvents,
// in index order, and the keys they are under, oldest first: the first
// is the run's oldest event's. All are under lease.
type run struct {
	lease  clientv3.LeaseID
	events []runEvent
	keys   []string
	bytes  int
}

// nameEvents are one index txn's events of one thing.
type nameEvents struct {
	prefix string // Keys.TrailName of the thing
	events []runEvent
}

// runPlan is what an index txn does with its things' indexes: the ops,
// and once it commits, the runs.
type runPlan struct {
	ops   []clientv3.Op
	keep  map[string]*run // a thing's run after the txn (nil: forget it)
	bytes int             // chunk values written
}

// nameKey is ev's key of its own in the index of prefix.
func nameKey(prefix string, ev runEvent) string { return prefix + revKey(ev.rev) + "/" + ev.entry }

// chunkKey is the key of events (newest first) in the index of prefix:
// the key of the oldest.
func chunkKey(prefix string, events []runEvent) string { return nameKey(prefix, events[len(events)-1]) }

// chunkValue is the value of a chunk of events, newest first.
func chunkValue(events []runEvent) string {
	b := make([]byte, 0, 64*len(events))
	b = append(b, '[')
	for i, ev := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, ev.rev, 10)
		b = append(b, ',')
		b = append(b, ev.value...)
		b = append(b, ']')
	}
	return string(append(b, ']'))
}

// newestFirst orders events as a thing's index does.
func newestFirst(events []runEvent) []runEvent {
	out := slices.Clone(events)
	slices.SortFunc(out, func(a, b runEvent) int {
		return cmp.Or(cmp.Compare(b.rev, a.rev), cmp.Compare(a.entry, b.entry))
	})
	return out
}

// chunkEventsOf appends the events of a chunk's value to out, newest
// first; a value that does not decode (nothing baton writes) adds none.
func chunkEventsOf(value []byte, out []trailKV) []trailKV {
	var pairs [][2]json.RawMessage
	if json.Unmarshal(value, &pairs) != nil {
		return out
	}
	for _, p := range pairs {
		rev, err := strconv.ParseInt(string(p[0]), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, trailKV{rev, p[1]})
	}
	return out
}

// isChunk says whether a trail/ or trailname/ value is a chunk: an
// array of arrays, where an event is a JSON object and a trail/ key's
// revision an array of them.
func isChunk(value []byte) bool { return len(value) > 1 && value[0] == '[' && value[1] == '[' }

// folds says whether this node folds things' events into chunks.
func (x *historyIndex) folds() bool { return x.t.format >= 3 && x.meta.Backfill == nil }

// maxOps is the most ops one txn of the index may hold.
func (x *historyIndex) maxOps() int {
	if m := x.t.etcd.Member; m != nil {
		return m.MaxTxnOps()
	}
	return 128 // etcd's default --max-txn-ops
}

// planNames writes the things' indexes of one txn, whose other ops number
// used, under bucket: each thing's events as one key, or, once its run
// with them reaches chunkEvents and the txn has room, as one chunk over
// the run's keys. split says which things have events of a revision that
// this txn and another share, which get a key an event; nil, that every
// event gets a key of its own.
func (x *historyIndex) planNames(things []nameEvents, bucket clientv3.LeaseID, used int, split func(prefix string) bool) runPlan {
	plan := runPlan{keep: make(map[string]*run, len(things))}
	// The ops left once every thing has its key (at most) and the meta
	// its put; a chunk takes that key and more.
	room := x.maxOps() - 1 - used - len(things)
	for _, t := range things {
		if split == nil || !x.folds() || split(t.prefix) {
			plan.singles(t, bucket)
			plan.keep[t.prefix] = nil
			continue
		}
		r := x.runs[t.prefix]
		if r == nil || r.lease != bucket {
			r = &run{lease: bucket}
		}
		all := append(slices.Clone(r.events), t.events...)
		size := r.bytes
		for _, ev := range t.events {
			size += len(ev.value) + 24
		}
		// The chunk's put and a delete for each earlier key but the
		// oldest, which the chunk overwrites, in place of the put of
		// the txn's key.
		cost := max(len(r.keys)-1, 0)
		if len(all) >= chunkEvents && cost <= room && plan.bytes+size <= mergeTxnBytes {
			plan.ops = append(plan.ops, foldOps(t.prefix, all, r.keys, bucket)...)
			plan.keep[t.prefix], plan.bytes, room = nil, plan.bytes+size, room-cost
			continue
		}
		key := plan.together(t, bucket)
		if len(all) > 2*chunkEvents {
			// No txn had room for it: let it go.
			plan.keep[t.prefix] = nil
			continue
		}
		plan.keep[t.prefix] = &run{lease: bucket, events: all, keys: append(slices.Clone(r.keys), key), bytes: size}
	}
	return plan
}

// foldOps put the events all of the index of prefix as one chunk under
// lease, and delete the keys they were written under, written, but the
// one the chunk goes over.
func foldOps(prefix string, all []runEvent, written []string, lease clientv3.LeaseID) []clientv3.Op {
	chunk := newestFirst(all)
	key := chunkKey(prefix, chunk)
	ops := []clientv3.Op{clientv3.OpPut(key, chunkValue(chunk), clientv3.WithLease(lease))}
	for _, k := range written {
		if k != key {
			ops = append(ops, clientv3.OpDelete(k))
		}
	}
	return ops
}

// flushRuns folds every run of lease, a bucket that takes no more events,
// however short, into a chunk, in as few txns as fit, and forgets them.
// Otherwise a thing with fewer than chunkEvents events a bucket (a trail
// spread over many things) would never be folded. The caller holds mu.
func (x *historyIndex) flushRuns(ctx context.Context, lease clientv3.LeaseID) error {
	var ops []clientv3.Op
	bytes := 0
	for prefix, r := range x.runs {
		if r.lease != lease {
			continue
		}
		x.runBytes -= r.bytes
		delete(x.runs, prefix)
		if len(r.keys) < 2 || len(r.keys) > x.maxOps()-1 || r.bytes > mergeTxnBytes {
			continue // one key is folded already
		}
		if len(ops)+len(r.keys) > x.maxOps()-1 || bytes+r.bytes > mergeTxnBytes {
			if err := x.commit(ctx, x.meta, ops); err != nil {
				x.forgetRuns()
				return err
			}
			ops, bytes = nil, 0
		}
		ops, bytes = append(ops, foldOps(prefix, r.events, r.keys, lease)...), bytes+r.bytes
	}
	if len(ops) == 0 {
		return nil
	}
	if err := x.commit(ctx, x.meta, ops); err != nil {
		x.forgetRuns()
		return err
	}
	return nil
}

// singles writes t's events a key each, under bucket.
func (p *runPlan) singles(t nameEvents, bucket clientv3.LeaseID) {
	for _, ev := range t.events {
		p.ops = append(p.ops, clientv3.OpPut(nameKey(t.prefix, ev), ev.value, clientv3.WithLease(bucket)))
	}
}

// together writes t's events as one key under bucket, the event's own or
// a chunk of them, and returns it.
func (p *runPlan) together(t nameEvents, bucket clientv3.LeaseID) string {
	if len(t.events) == 1 {
		p.singles(t, bucket)
		return nameKey(t.prefix, t.events[0])
	}
	chunk := newestFirst(t.events)
	key := chunkKey(t.prefix, chunk)
	p.ops = append(p.ops, clientv3.OpPut(key, chunkValue(chunk), clientv3.WithLease(bucket)))
	return key
}

// keepRuns takes a committed plan's runs. The caller holds mu.
func (x *historyIndex) keepRuns(plan runPlan) {
	if x.runs == nil {
		x.runs = make(map[string]*run)
	}
	for prefix, r := range plan.keep {
		if old := x.runs[prefix]; old != nil {
			x.runBytes -= old.bytes
			delete(x.runs, prefix)
		}
		if r == nil {
			continue
		}
		for prefix2, old := range x.runs {
			if x.runBytes+r.bytes <= runBytes {
				break
			}
			// Make room: any run may go (it stays single keys).
			x.runBytes -= old.bytes
			delete(x.runs, prefix2)
		}
		if x.runBytes+r.bytes <= runBytes {
			x.runs[prefix], x.runBytes = r, x.runBytes+r.bytes
		}
	}
}

// forgetRuns drops every run: after a txn whose outcome is unknown, or
// when another node may have indexed meanwhile. The caller holds mu.
func (x *historyIndex) forgetRuns() { x.runs, x.runBytes = nil, 0 }
