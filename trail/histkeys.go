package trail

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The audit trail lives in two places.
//
// A txn that does something writes its event as a pending record under
// audit/ (keys in lock/doc.go; a hold's end over the hold's acquired
// record, in storage format 2): its key is known before the txn commits,
// which is what makes each hold's end exactly-once, but its revision is
// not, so pending records cannot be read newest first without reading
// them all. The history index (historyindex.go) copies each pending
// record, once committed, into the trail proper:
//
//	trail/<rev>/<entry>                    the events of one revision, value: a JSON array of them
//	                                       (or, in storage format 4, a chunk of revisions: below)
//	trailname/<kind>/<name>/<rev>/<entry>  one event in its thing's index, value: its JSON
//	                                       (or, in storage format 3, a chunk of them: histchunks.go)
//
// where <rev> is revKey(revision), so that ascending key order, the only
// order etcd pages with a limit, is newest first, and <entry> orders the
// events of one revision newest first too: a release that hands the lock
// over ends one hold and begins the next in one txn, and the next hold's
// acquired event (entry rank 0) is the newer of the two (rank 1). A page
// is then one range with a limit, whatever the trail holds.
//
// Under load one revision holds a batch's worth of events (tens), and a
// key of its own for each cost the index a put per event: so trail/ keeps
// a revision's events together, in entry order, under the entry of the
// first. An index txn holds a bounded number of events, so a revision
// with more is split over several keys, each named by its first entry.
// At low load each revision holds one event, and a key a revision was
// again a key an event, which etcd keeps in memory (histchunks.go): so in
// storage format 4 the revisions an index txn holds whole, all but one it
// shares with the txn before or after, go in chunks of up to chunkEvents
// events (a revision of more keeps its key),
//
//	trail/<rev>/<entry>  [[<revision>,<event>],…], newest first
//
// each named as a key of its oldest revision would be. No other key holds
// events of the revisions a chunk spans, so key order is still event
// order, and a reader takes a chunk whole, as it does a thing's.
// A thing's index keeps its events apart from the revisions they share
// with others, so that its pages read its events only.

// revKeyLen is the length of revKey's result.
const revKeyLen = 19

// revKey renders rev so that byte order is reverse numeric order.
func revKey(rev int64) string { return fmt.Sprintf("%019d", math.MaxInt64-rev) }

func parseRevKey(s string) (int64, bool) {
	if len(s) != revKeyLen {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return math.MaxInt64 - n, true
}

// pendingRecord is a pending audit record, parsed.
type pendingRecord struct {
	key   string
	ev    Event
	entry string // <entry> of its indexed keys
	// deletes are the pending keys the index removes once it holds the
	// event: for a hold's end, the hold's record (records, in storage
	// format 1); for an acquired (or elected) event none (it guards the
	// hold's end until then, see recordEnd); for any other event, its own
	// record.
	deletes []string
	// derived says the event was derived from its lock key's revisions
	// (derive.go): no record holds it. begun, on a derived end, is when
	// its hold began.
	derived bool
	begun   time.Time
}

// isEventRecord says whether a watched PUT writes an event: a pending
// record's first write, or a hold's end written over its acquired record.
// Nothing else writes under audit/.
func (t *Trail) isEventRecord(kv *mvccpb.KeyValue) bool {
	key := string(kv.Key)
	return strings.HasPrefix(key, t.keys.Audit()) && (kv.Version == 1 || kv.Version == 2 && strings.HasSuffix(key, "/a"))
}

// parsePending parses the event a pending record's latest write made; ok
// is false for a key or value that is not one (nothing baton writes).
func (t *Trail) parsePending(kv *mvccpb.KeyValue) (pendingRecord, bool) {
	key := string(kv.Key)
	rest, ok := strings.CutPrefix(key, t.keys.Audit())
	if !ok {
		return pendingRecord{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] == "" {
		return pendingRecord{}, false
	}
	ev, ok := store.DecodeEvent(kv)
	if !ok {
		return pendingRecord{}, false
	}
	p := pendingRecord{key: key, ev: ev}
	switch {
	case parts[0] == "~fence":
		p.entry, p.deletes = "1"+parts[2]+"f", []string{key}
	case parts[0] == "~key":
		p.entry, p.deletes = keyEntry(store.UnescapeKey(parts[2])), []string{key}
	case parts[2] == "a" && kv.Version > 1:
		p.entry, p.deletes = "1"+parts[1]+"e", []string{key}
	case parts[2] == "a":
		p.entry = "0" + parts[1] + "a"
	case parts[2] == "e":
		p.entry, p.deletes = "1"+parts[1]+"e", []string{key, t.keys.Acquired(parts[0], parts[1])}
	case parts[2] == "d", parts[2] == "p", parts[2] == "y":
		p.entry, p.deletes = "1"+parts[1]+parts[2], []string{key}
	default:
		return pendingRecord{}, false
	}
	return p, true
}

// pendingOfKey parses the events a backfill scan finds in kv, a pending
// record as it is now, that were recorded in (indexed, through]: its
// latest write's, and for a hold's end written over its acquired record,
// the acquired event, recorded at the key's CreateRevision.
func (t *Trail) pendingOfKey(kv *mvccpb.KeyValue, indexed, through int64) []pendingRecord {
	in := func(rev int64) bool { return rev > indexed && rev <= through }
	p, ok := t.parsePending(kv)
	if !ok {
		return nil
	}
	var out []pendingRecord
	var r store.EndRecord
	if kv.Version > 1 && strings.HasSuffix(p.key, "/a") && in(kv.CreateRevision) && json.Unmarshal(kv.Value, &r) == nil && r.Began != nil {
		began := *r.Began
		began.Revision, began.Token = kv.CreateRevision, kv.CreateRevision
		if began.Kind == "" {
			began.Kind, began.Name = KindLock, began.Lock
		}
		hold := p.entry[1 : len(p.entry)-1] // the end's entry is "1<hold>e"
		out = append(out, pendingRecord{key: p.key, ev: began, entry: "0" + hold + "a"})
	}
	if in(kv.ModRevision) {
		out = append(out, p)
	}
	return out
}

// histKey is the trail/ key of the events of one revision from p on.
func (t *Trail) histKey(p pendingRecord) string {
	return t.keys.Trail() + revKey(p.ev.Revision) + "/" + p.entry
}

// indexedValue is the value of p's trailname/ key, and its part of its
// revision's trail/ value: the event as read, revision aside (the key
// holds it).
func indexedValue(p pendingRecord) string {
	ev := p.ev
	if ev.Kind == KindKey {
		ev.Value = nil // the history keeps who changed a key and when, not its values
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(fmt.Sprintf("lock: encode event: %v", err)) // a plain struct of ours
	}
	return string(b)
}

// groupValue is the trail/ value of events (each event's own value, in
// entry order).
func groupValue(events []string) string {
	return "[" + strings.Join(events, ",") + "]"
}

// revision is the revision a key of s holds.
func (s trailSource) revision(key []byte) (int64, bool) {
	if len(key) < len(s.prefix)+revKeyLen || string(key[:len(s.prefix)]) != s.prefix {
		return 0, false
	}
	return parseRevKey(string(key[len(s.prefix) : len(s.prefix)+revKeyLen]))
}

// events appends the events of kv, a key of s, to out, newest first: a
// trail/ key holds a JSON array of one revision's, a trailname/ key one,
// and either may hold a chunk of them with their revisions (histchunks.go).
// A value that does not decode (nothing baton writes) adds none.
func (s trailSource) events(kv *mvccpb.KeyValue, out []trailKV) []trailKV {
	rev, ok := s.revision(kv.Key)
	if !ok {
		return out
	}
	if isChunk(kv.Value) {
		return chunkEventsOf(kv.Value, out)
	}
	if s.byName {
		return append(out, trailKV{rev, kv.Value})
	}
	var group []json.RawMessage
	if json.Unmarshal(kv.Value, &group) != nil {
		return out
	}
	for _, v := range group {
		out = append(out, trailKV{rev, v})
	}
	return out
}
