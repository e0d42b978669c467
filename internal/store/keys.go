package store

import (
	"bytes"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Keys builds every key baton keeps in etcd, under one prefix (the
// schema is in lock/doc.go). A <name> below is a key name (KeyName).
type Keys struct {
	// Prefix is prepended to every key; it ends with "/".
	Prefix string
}

// Lock is the holder record's key of the hold kept under name; Locks is
// their prefix.
func (k Keys) Lock(name string) string { return k.Prefix + "locks/" + name }
func (k Keys) Locks() string           { return k.Prefix + "locks/" }

// Session is session id's record; Sessions is their prefix.
func (k Keys) Session(id string) string { return k.Sessions() + id }
func (k Keys) Sessions() string         { return k.Prefix + "sessions/" }

// SessionOwners is the prefix of the sessions' index by owner, and
// SessionOwner one entry of it.
func (k Keys) SessionOwners() string { return k.Prefix + "sessionowners/" }
func (k Keys) SessionOwner(owner, id string) string {
	return k.SessionOwners() + owner + "\x00" + id
}

// SessionTally is one of a session's two tallies, "acquired" and
// "released": keys put (empty, under the session's lease) by every
// acquire (while MaxLocksPerSession is on) and every release of a lock in
// a session that has a tally, so that their Versions count them. Their
// difference is how many locks the session holds, read in the acquire
// txn in constant time; a count-only range over per-lock keys would walk
// every key the session ever held since the last compaction, inside
// etcd's apply loop.
// SessionStream is the stream record of the stream-bound session id
// (lock/internal/session/stream.go), under its lease.
func (k Keys) SessionStream(id string) string { return k.Prefix + "sessionstream/" + id }

func (k Keys) SessionTally(id, which string) string {
	return k.Prefix + "sessiontally/" + id + "/" + which
}

// TallyShard is shard i of a session's tally which. One txn may not put a
// key twice, so a lock set's acquire counts member i in shard i (and its
// release the same): shard 0 is the tally key itself, and a tally is the
// sum of its shards' Versions, read with one range (lock's heldInSession).
func (k Keys) TallyShard(id, which string, i int) string {
	if i == 0 {
		return k.SessionTally(id, which)
	}
	return k.SessionTally(id, which) + "/" + strconv.Itoa(i)
}

// Queue is the prefix of the queue of the thing name, or one of its
// seats, belongs to: a thing's seats share one queue.
func (k Keys) Queue(name string) string { return k.Prefix + "queue/" + ThingKey(name) + "/" }

// Delay is name's lock-delay guard.
func (k Keys) Delay(name string) string { return k.Prefix + "delay/" + name }

// Audit is the prefix of the pending records; LockAudit of name's.
func (k Keys) Audit() string                { return k.Prefix + "audit/" }
func (k Keys) LockAudit(name string) string { return k.Audit() + name + "/" }

// Acquired and End are hold's pending records of its acquire and its
// end (the end's, beside it, in storage format 1 only).
func (k Keys) Acquired(name, hold string) string { return k.Audit() + name + "/" + hold + "/a" }
func (k Keys) End(name, hold string) string      { return k.Audit() + name + "/" + hold + "/e" }

// FenceAudit is the pending record of a fence_reset of resource. Lock
// names cannot hold "~", so no lock's records share the prefix.
func (k Keys) FenceAudit(resource, id string) string {
	return k.Audit() + "~fence/" + resource + "/" + id
}

// Fenced is resource's fenced value, and FenceMax the largest token seen
// for it.
func (k Keys) Fenced(resource string) string   { return k.Prefix + "fenced/" + resource }
func (k Keys) FenceMax(resource string) string { return k.Prefix + "fencemax/" + resource }

// Term is an election's latest term, and Value its proclaimed value.
func (k Keys) Term(name string) string  { return k.Prefix + "term/" + name }
func (k Keys) Value(name string) string { return k.Prefix + "value/" + name }

// Seats is the record of the thing with seats that name belongs to.
func (k Keys) Seats(name string) string { return k.Prefix + "seats/" + ThingKey(name) }

// Leases is where lease markers live, and LeaseMark is lease id's: put
// under the lease, never deleted by a request, so etcd deletes it in the
// revision the lease ends.
func (k Keys) Leases() string                       { return k.Prefix + "leases/" }
func (k Keys) LeaseMark(id clientv3.LeaseID) string { return k.Leases() + LeaseHex(id) }

// Trail is the prefix of the audit trail's revisions, and TrailName that
// of one thing's index: a key's name is escaped (EscapeKey), so that no
// key's index holds another's ("a/b" under "a").
func (k Keys) Trail() string { return k.Prefix + "trail/" }
func (k Keys) TrailName(kind EventKind, name string) string {
	if kind == KindKey {
		name = EscapeKey(name)
	}
	return k.Prefix + "trailname/" + string(kind) + "/" + name + "/"
}

// HistoryMeta is the history index's cursor, Recorder the expiry
// recorder's, Format the cluster's storage format, and CompactionNote
// the last compaction that went past the trail's cursor.
func (k Keys) HistoryMeta() string    { return k.Prefix + "meta/history" }
func (k Keys) Recorder() string       { return k.Prefix + "meta/recorder" }
func (k Keys) Format() string         { return k.Prefix + "meta/format" }
func (k Keys) CompactionNote() string { return k.Prefix + "meta/compaction" }

// PadToken renders n so that byte order is numeric order, which is what
// etcd's Value compares use.
func PadToken(n int64) string { return fmt.Sprintf("%020d", n) }

// LeaseHex is how keys and records name a lease.
func LeaseHex(id clientv3.LeaseID) string { return strconv.FormatInt(int64(id), 16) }

// ParseLeaseHex reads a lease LeaseHex wrote, or reports false.
func ParseLeaseHex(s string) (clientv3.LeaseID, bool) {
	if s == "" || len(s) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil || v == 0 || v > math.MaxInt64 {
		return 0, false
	}
	return clientv3.LeaseID(v), true
}

// TTLSeconds rounds d up to whole seconds, etcd's lease unit.
func TTLSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Revisions is the key range whose revisions the trail reads, from
// audit/ (the events requests write themselves) to the end of sessions/:
// it holds the lock keys, the lease markers and the session records, and
// none of the trail's own keys (trail/ and trailname/ sort after it).
func (k Keys) Revisions() (key, end string) {
	return k.Audit(), clientv3.GetPrefixRangeEnd(k.Sessions())
}

// IsBookkeeping says whether key is one of baton's own cursors and notes
// (meta/): the history index's and the recorder's cursors answer the
// changes they read, so neither may count the other's writes as one, or
// they would answer each other for ever.
func (k Keys) IsBookkeeping(key []byte) bool {
	return bytes.HasPrefix(key, []byte(k.Prefix+"meta/"))
}

// EndRecordOf parses a watched PUT that records a hold's end: of its end
// key (storage format 1), or over its acquired record (format 2). Names
// and holds hold no "/".
func (k Keys) EndRecordOf(kv *mvccpb.KeyValue) (name, hold string, ok bool) {
	rest, ok := strings.CutPrefix(string(kv.Key), k.Audit())
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || !(parts[2] == "e" || parts[2] == "a" && kv.Version > 1) {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// LeasesEnded are the leases whose end one revision's watch events show:
// those whose marker or session record it deleted.
func (k Keys) LeasesEnded(evs []*clientv3.Event) map[int64]bool {
	var ended map[int64]bool
	for _, ev := range evs {
		if ev.Type != mvccpb.DELETE {
			continue
		}
		key := string(ev.Kv.Key)
		if id, ok := strings.CutPrefix(key, k.Leases()); ok {
			ended = markLease(ended, id)
		} else if id, ok := strings.CutPrefix(key, k.Sessions()); ok {
			ended = markLease(ended, id)
		}
	}
	return ended
}

// markLease adds the lease hex names to m.
func markLease(m map[int64]bool, hex string) map[int64]bool {
	id, ok := ParseLeaseHex(hex)
	if !ok {
		return m
	}
	if m == nil {
		m = map[int64]bool{}
	}
	m[int64(id)] = true
	return m
}

// ByRevision yields the runs of evs, in revision order, that share a
// revision: etcd sends a txn's events together.
func ByRevision(evs []*clientv3.Event) iter.Seq[[]*clientv3.Event] {
	return func(yield func([]*clientv3.Event) bool) {
		for i := 0; i < len(evs); {
			j := i + 1
			for j < len(evs) && evs[j].Kv.ModRevision == evs[i].Kv.ModRevision {
				j++
			}
			if !yield(evs[i:j]) {
				return
			}
			i = j
		}
	}
}

// DerivedFormat is the storage format from which holds are derived:
// the trail reads their acquires and ends from revisions (lock/format.go).
const DerivedFormat = 5

// DefaultBackendQuota is etcd's default backend quota (2 GiB).
const DefaultBackendQuota = 2 << 30
