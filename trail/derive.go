package trail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Every fact of a hold's life is in etcd's revision log already, as a
// change of its lock key (internal/store/kinds.go: every kind's holds are lock keys),
// read with the value it replaced:
//
//	PUT, a new key                 the hold the record names began: its token is the revision
//	PUT over a held key            a release handed the lock over: the hold in the previous
//	                               value ended (released), the one in the new value began
//	DELETE, with its lease's       the hold ended with its lease: expired, or, in a session,
//	marker or session record       session_expired
//	DELETE, alone                  the hold was released
//
// A lease's end deletes every key under it in one revision (etcd's
// lessor), so a lock key deleted in the revision that also deletes a key
// no request ever deletes, put under the same lease, ended with the lease.
// A session's record is such a key; a hold under a lease of its own has
// its lease's marker (Keys.LeaseMark), which the acquire txn puts the first
// time a lease holds a lock. A release deletes the lock key alone and
// writes nothing else for the trail.
//
// What revisions cannot say (a revoke's reason, a release by another
// credential than the acquirer's, a session deleted, an end's exact time)
// is not derived: those ends write their event themselves (lock/internal/hold/records.go,
// histkeys.go), and an end derived here takes the time its revision was
// read.

// revisionEvents are the trail's events of the revisions of wr, a
// response of a watch over revisionsRange with previous values, in
// revision order: the pending records each revision put, and the events
// of the derived holds (store.Holder.Derived) it began and ended, bar an
// end that a pending record of the same revision tells (a revoke's). at
// is as for deriveHolds.
func (t *Trail) revisionEvents(wr clientv3.WatchResponse, at time.Time) []pendingRecord {
	var out []pendingRecord
	for evs := range store.ByRevision(wr.Events) {
		pending := len(out)
		for _, ev := range evs {
			if ev.Type == mvccpb.PUT && t.isEventRecord(ev.Kv) {
				if p, ok := t.parsePending(ev.Kv); ok {
					out = append(out, p)
				}
			}
		}
		told := out[pending:]
		for _, d := range slices.Concat(t.deriveHolds(evs, at, false), t.deriveKeys(evs, at)) {
			if !slices.ContainsFunc(told, func(p pendingRecord) bool { return p.entry == d.entry }) {
				out = append(out, d)
			}
		}
	}
	return out
}

// lastEventIn is the newest revision among evs, a watch response's over
// revisionsRange, that may hold an event of the trail: one that put a
// pending record or changed a lock key or a key of data. It reads no record: a lock key
// changed for a hold that is not derived has its pending record in the
// same revision, but for an expiry, whose record the recorder writes at a
// later revision, which the index then reaches.
func (t *Trail) lastEventIn(evs []*clientv3.Event) int64 {
	for i := len(evs) - 1; i >= 0; i-- {
		kv := evs[i].Kv
		if evs[i].Type == mvccpb.PUT && t.isEventRecord(kv) || bytes.HasPrefix(kv.Key, []byte(t.keys.Locks())) || bytes.HasPrefix(kv.Key, []byte(t.keys.KVs())) {
			return kv.ModRevision
		}
	}
	return 0
}

// deriveHolds returns the events of the holds that one revision began and
// ended, in the order of evs: that revision's watch events over
// revisionsRange, read with their previous values; with all unset, of
// derived holds only (store.Holder.Derived). at is when the revision was
// read: the time of the ends it derives. A change whose previous value
// the watch did not carry (compacted) or whose records do not decode
// (nothing baton writes) derives nothing.
func (t *Trail) deriveHolds(evs []*clientv3.Event, at time.Time, all bool) []pendingRecord {
	if len(evs) == 0 {
		return nil
	}
	rev := evs[0].Kv.ModRevision
	leaseEnded := t.keys.LeasesEnded(evs)
	var out []pendingRecord
	for _, ev := range evs {
		name, ok := strings.CutPrefix(string(ev.Kv.Key), t.keys.Locks())
		if !ok {
			continue
		}
		if prev := ev.PrevKv; prev != nil {
			if hr, err := store.DecodeHolder(prev); err == nil && (all || hr.Derived) {
				typ := EventReleased
				detail := ""
				if ev.Type == mvccpb.DELETE && leaseEnded[prev.Lease] {
					typ = EventExpired
					if hr.Session != "" {
						typ = EventSessionExpired
					}
					detail = fmt.Sprintf("lease ended; etcd deleted the lock at revision %d", rev)
				}
				out = append(out, endedHold(name, prev.ModRevision, hr, typ, detail, rev, at))
			}
		}
		if ev.Type == mvccpb.PUT {
			if hr, err := store.DecodeHolder(ev.Kv); err == nil && (all || hr.Derived) {
				out = append(out, begunHold(name, rev, hr))
			}
		}
	}
	return out
}

// begunHold is the acquired (or elected) event of hold hr, begun at rev
// in the thing kept under key name: what its pending record said, when
// acquires wrote one.
func begunHold(name string, rev int64, hr store.Holder) pendingRecord {
	ev := normalized(hr.BegunEvent(name))
	ev.Revision, ev.Token = rev, rev
	return pendingRecord{ev: ev, entry: "0" + hr.Hold + "a", derived: true}
}

// endedHold is the end by typ of the hold hr of token, in the thing kept
// under key name, at rev, read at at. Its credential is the acquirer's:
// a release by any other credential writes its event itself.
func endedHold(name string, token int64, hr store.Holder, typ EventType, detail string, rev int64, at time.Time) pendingRecord {
	ev := hr.Event(name, typ, at)
	ev.Token, ev.Detail = token, detail
	ev = normalized(ev)
	ev.Revision = rev
	return pendingRecord{ev: ev, entry: "1" + hr.Hold + "e", derived: true, begun: hr.AcquiredAt}
}

// keepTimesInOrder keeps each thing's event times, in recs (in revision
// order), from going back. A derived end is timed when it was read
// (endedHold), which can be a moment after the thing's next hold began
// by the time its request took; the end then takes the time of the
// earliest event after it, though never one before its own hold began.
func keepTimesInOrder(keys store.Keys, recs []pendingRecord) {
	floor := make(map[string]time.Time)
	for i := len(recs) - 1; i >= 0; i-- {
		p := &recs[i]
		thing := keys.TrailName(p.ev.Kind, p.ev.Name)
		f, ok := floor[thing]
		if ok && p.derived && !p.begun.IsZero() && p.ev.Time.After(f) {
			p.ev.Time = maxTime(f, p.begun)
		}
		if !ok || p.ev.Time.Before(f) {
			floor[thing] = p.ev.Time
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// normalized is ev as store.DecodeEvent reads it back: a lock's events name
// their kind and name too.
func normalized(ev Event) Event {
	if ev.Kind == "" {
		ev.Kind, ev.Name = KindLock, ev.Lock
	}
	return ev
}

// deriveKeys returns the events of the keys of data (internal/store/kv.go)
// that one revision put and deleted, in the order of evs, read as for
// deriveHolds. A put's event is all in its record: who wrote it, when,
// and the value, which event streams carry and the history leaves out
// (indexedValue). A delete by a request writes its event itself, with
// its credential (lock/internal/kv), which revisionEvents keeps in place
// of the one derived here; a delete in the revision that ended the key's
// session's lease is the session's end.
func (t *Trail) deriveKeys(evs []*clientv3.Event, at time.Time) []pendingRecord {
	var out []pendingRecord
	var leaseEnded map[int64]bool
	for _, ev := range evs {
		key, ok := strings.CutPrefix(string(ev.Kv.Key), t.keys.KVs())
		if !ok {
			continue
		}
		rev := ev.Kv.ModRevision
		e := Event{Revision: rev, Time: at, Type: EventDelete, Kind: KindKey, Name: key}
		if ev.Type == mvccpb.PUT {
			var rec store.KeyRecord
			if json.Unmarshal(ev.Kv.Value, &rec) != nil {
				continue // nothing baton writes
			}
			e.Type, e.Time, e.Credential, e.Session, e.Value = EventPut, rec.Time, rec.Credential, rec.Session, rec.Value
			e.CreatedRevision, e.Version = ev.Kv.CreateRevision, ev.Kv.Version
		} else if prev := ev.PrevKv; prev != nil && prev.Lease != 0 {
			if leaseEnded == nil {
				leaseEnded = t.keys.LeasesEnded(evs)
			}
			var rec store.KeyRecord
			if leaseEnded[prev.Lease] && json.Unmarshal(prev.Value, &rec) == nil {
				e.Session, e.Credential = rec.Session, rec.Credential
				e.Detail = fmt.Sprintf("session ended; etcd deleted the key at revision %d", rev)
			}
		}
		out = append(out, pendingRecord{ev: e, entry: keyEntry(key), derived: true})
	}
	return out
}

// keyEntry is the <entry> of a key's event: one revision changes a key
// at most once, and its escape holds no "/".
func keyEntry(key string) string { return "2" + store.EscapeKey(key) }
