package lock

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The audit trail lives in two places.
//
// A txn that does something writes its event as a pending record under
// audit/ (keys in lock/doc.go): its key is known before the txn commits,
// which is what makes each hold's end exactly-once, but its revision is
// not, so pending records cannot be read newest first without reading
// them all. The history index (historyindex.go) copies each pending
// record, once committed, into the trail proper:
//
//	trail/<rev>/<entry>                    the events of one revision, value: a JSON array of them
//	trailname/<kind>/<name>/<rev>/<entry>  one event in its thing's index, value: its JSON
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
// A thing's index keeps each of its events whole, so that its pages read
// its events only, not the revisions they share with others.

func (e *Engine) histPrefix() string { return e.cfg.Prefix + "trail/" }
func (e *Engine) histNamePrefix(kind EventKind, name string) string {
	return e.cfg.Prefix + "trailname/" + string(kind) + "/" + name + "/"
}
func (e *Engine) historyMetaKey() string { return e.cfg.Prefix + "meta/history" }

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
	// event: for a hold's end, the end and the hold's acquired record;
	// for an acquired (or elected) event none (it guards the hold's end until then,
	// see recordEnd); for any other event, its own record.
	deletes []string
}

// isEventRecord says whether a watched PUT is a pending record's only
// write: pending records are written once, under audit/.
func (e *Engine) isEventRecord(kv *mvccpb.KeyValue) bool {
	return kv.Version == 1 && strings.HasPrefix(string(kv.Key), e.auditPrefix())
}

// parsePending parses a pending record; ok is false for a key or value
// that is not one (nothing baton writes).
func (e *Engine) parsePending(kv *mvccpb.KeyValue) (pendingRecord, bool) {
	key := string(kv.Key)
	rest, ok := strings.CutPrefix(key, e.auditPrefix())
	if !ok {
		return pendingRecord{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] == "" {
		return pendingRecord{}, false
	}
	ev, ok := decodeEvent(kv)
	if !ok {
		return pendingRecord{}, false
	}
	p := pendingRecord{key: key, ev: ev}
	switch {
	case parts[0] == "~fence":
		p.entry, p.deletes = "1"+parts[2]+"f", []string{key}
	case parts[2] == "a":
		p.entry = "0" + parts[1] + "a"
	case parts[2] == "e":
		p.entry, p.deletes = "1"+parts[1]+"e", []string{key, e.acquiredKey(parts[0], parts[1])}
	case parts[2] == "d", parts[2] == "p":
		p.entry, p.deletes = "1"+parts[1]+parts[2], []string{key}
	default:
		return pendingRecord{}, false
	}
	return p, true
}

// histKey is the trail/ key of the events of one revision from p on.
func (e *Engine) histKey(p pendingRecord) string {
	return e.histPrefix() + revKey(p.ev.Revision) + "/" + p.entry
}

// histNameKey is p's key in its thing's index.
func (e *Engine) histNameKey(p pendingRecord) string {
	return e.histNamePrefix(p.ev.Kind, p.ev.Name) + revKey(p.ev.Revision) + "/" + p.entry
}

// indexedValue is the value of p's trailname/ key, and its part of its
// revision's trail/ value: the event as read, revision aside (the key
// holds it).
func indexedValue(p pendingRecord) string {
	b, err := json.Marshal(p.ev)
	if err != nil {
		panic(fmt.Sprintf("lock: encode event: %v", err)) // a plain struct of ours
	}
	return string(b)
}

// groupValue is the trail/ value of events (their indexedValues, in
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

// events appends the events of kv, a key of s, to out: a trail/ key holds
// a JSON array of them, a trailname/ key one. A value that does not
// decode (nothing baton writes) adds none.
func (s trailSource) events(kv *mvccpb.KeyValue, out []trailKV) []trailKV {
	rev, ok := s.revision(kv.Key)
	if !ok {
		return out
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
