package lock

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// HistoryOptions selects audit events.
type HistoryOptions struct {
	// Lock keeps only the events of one lock.
	Lock string
	// Kind keeps only the events about one kind of thing (KindLock, …);
	// Name only those about the thing of that name. Name with KindLock,
	// or with no Kind, is the same as Lock.
	Kind EventKind
	Name string
	// Before keeps only events recorded before this revision; 0 means now.
	Before int64
	// Limit is the page size; 0 means 100.
	Limit int
	// Owner keeps only the events of holds by this owner.
	Owner string
	// Types keeps only events of these types; empty means all.
	Types []EventType
	// From and To keep only events recorded in [From, To); zero means
	// unbounded.
	From, To time.Time
}

func (o HistoryOptions) filtered() bool {
	return o.Owner != "" || len(o.Types) > 0 || !o.From.IsZero() || !o.To.IsZero() || o.Kind != ""
}

func (o HistoryOptions) keep(ev Event) bool {
	if o.Kind != "" && ev.Kind != o.Kind {
		return false
	}
	if o.Name != "" && ev.Name != o.Name {
		return false
	}
	if o.Owner != "" && ev.Owner != o.Owner {
		return false
	}
	if len(o.Types) > 0 && !slices.Contains(o.Types, ev.Type) {
		return false
	}
	if !o.From.IsZero() && ev.Time.Before(o.From) {
		return false
	}
	if !o.To.IsZero() && !ev.Time.Before(o.To) {
		return false
	}
	return true
}

// History returns audit events newest first, and the Before of the next
// page (0 when this is the last page). A page never ends between events of
// one revision, so it holds more than Limit events when more than Limit
// share a revision.
//
// etcd sorts by revision only after reading the whole range, so a page
// costs time in proportion to the events retained (for the lock, with
// Lock set). Retention bounds that; the live event index of the SSE stream
// is the place to make it cheaper.
func (e *Engine) History(ctx context.Context, o HistoryOptions) ([]Event, int64, error) {
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit < 1 || o.Limit > MaxListLimit {
		return nil, 0, invalid("limit", "must be between 1 and %d", MaxListLimit)
	}
	if o.Before < 0 {
		return nil, 0, invalid("before", "must be a positive revision")
	}
	for _, t := range o.Types {
		if !slices.Contains(eventTypes, t) {
			return nil, 0, invalid("type", "%q is not an event type (want %s)", t, joinTypes(eventTypes))
		}
	}
	if !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To) {
		return nil, 0, invalid("from", "must be before to")
	}
	var err error
	if o.Lock, err = lockOfName(o.Kind, o.Name, o.Lock); err != nil {
		return nil, 0, err
	}
	prefix := e.auditPrefix()
	if o.Lock != "" {
		if err := checkName("lock", o.Lock); err != nil {
			return nil, 0, err
		}
		prefix = e.lockAuditPrefix(o.Lock)
	}
	if o.Before == 1 {
		// Nothing is older than revision 1, etcd's first; and etcd reads
		// the maximum mod revision before-1 = 0 as no bound at all, so
		// this page must not reach etcd.
		return []Event{}, 0, nil
	}
	if o.filtered() {
		return e.filteredHistory(ctx, prefix, o)
	}
	resp, err := e.readAudit(ctx, prefix, o.Before, o.Limit+1)
	if err != nil {
		return nil, 0, err
	}
	kvs, next := resp.Kvs, int64(0)
	if len(kvs) > o.Limit {
		// A page never ends inside a revision: one txn may record several
		// events at one revision (deleting a session releases its locks
		// together), and the next page starts below next. End it
		// before the group; if the group fills the page, return all of it
		// (the only case where a page exceeds Limit).
		cut, n := kvs[o.Limit].ModRevision, o.Limit
		for n > 0 && kvs[n-1].ModRevision == cut {
			n--
		}
		if n == 0 {
			octx, done := e.op(ctx)
			group, err := e.cli.Get(octx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision),
				clientv3.WithMinModRev(cut), clientv3.WithMaxModRev(cut))
			done()
			if err != nil {
				return nil, 0, e.etcdErr(ctx, "read history", err)
			}
			kvs = group.Kvs
		} else {
			kvs = kvs[:n]
		}
		next = kvs[len(kvs)-1].ModRevision
	}
	events := make([]Event, 0, len(kvs))
	for _, kv := range kvs {
		ev, ok := decodeEvent(kv)
		if ok {
			events = append(events, ev)
		}
	}
	newestFirst(events)
	return events, next, nil
}

// newestFirst orders events (read sorted by revision, newest first) within
// each revision too: etcd leaves the order of equal revisions to its key
// order, but a release that hands the lock over ends one hold and begins
// the next in one revision, and the next hold's acquired event is the
// newer of the two.
func newestFirst(events []Event) {
	slices.SortStableFunc(events, func(a, b Event) int {
		if a.Revision != b.Revision {
			return cmp.Compare(b.Revision, a.Revision)
		}
		return cmp.Compare(endRank(a.Type), endRank(b.Type))
	})
}

func endRank(t EventType) int {
	if t == EventAcquired {
		return 0
	}
	return 1
}

var eventTypes = []EventType{
	EventAcquired, EventReleased, EventExpired, EventRevoked, EventSessionExpired,
	EventElected, EventResigned, EventProclaimed, EventFenceReset, EventDelayCleared,
}

func joinTypes(ts []EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// readAudit reads the audit records under prefix recorded before before
// (0: all), newest first, at most limit of them (0: all).
func (e *Engine) readAudit(ctx context.Context, prefix string, before int64, limit int) (*clientv3.GetResponse, error) {
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend)}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	if before > 0 {
		opts = append(opts, clientv3.WithMaxModRev(before-1))
	}
	octx, done := e.op(ctx)
	defer done()
	resp, err := e.cli.Get(octx, prefix, opts...)
	if err != nil {
		return nil, e.etcdErr(ctx, "read history", err)
	}
	return resp, nil
}

// filteredHistory serves filters etcd cannot apply: it reads every event
// before o.Before (one read, sorted by etcd) and filters here. Its cost
// grows with the events retained, like the unfiltered read's.
func (e *Engine) filteredHistory(ctx context.Context, prefix string, o HistoryOptions) ([]Event, int64, error) {
	resp, err := e.readAudit(ctx, prefix, o.Before, 0)
	if err != nil {
		return nil, 0, err
	}
	var events []Event
	for _, kv := range resp.Kvs {
		if ev, ok := decodeEvent(kv); ok && o.keep(ev) {
			events = append(events, ev)
		}
	}
	newestFirst(events)
	if len(events) <= o.Limit {
		return append([]Event{}, events...), 0, nil
	}
	// As in History: never end a page inside a revision's group.
	cut, n := events[o.Limit].Revision, o.Limit
	for n > 0 && events[n-1].Revision == cut {
		n--
	}
	if n == 0 {
		for n < len(events) && events[n].Revision == cut {
			n++
		}
	}
	if n == len(events) {
		return events, 0, nil
	}
	return events[:n], events[n-1].Revision, nil
}

// lockOfName resolves the name filter of kind: a lock's name is its Lock
// filter. The audit trail holds records of locks only (their kind is
// derived), so a filter on another kind keeps its name for keep to apply.
func lockOfName(kind EventKind, name, lock string) (string, error) {
	if err := checkKind(kind); err != nil {
		return "", err
	}
	if name == "" || kind != "" && kind != KindLock {
		return lock, nil
	}
	if err := checkName("name", name); err != nil {
		return "", err
	}
	if lock != "" && lock != name {
		return "", invalid("name", "names another lock than lock (%q): give one of them", lock)
	}
	return name, nil
}

func decodeEvent(kv *mvccpb.KeyValue) (Event, bool) {
	var ev Event
	if json.Unmarshal(kv.Value, &ev) != nil {
		return ev, false
	}
	ev.Revision = kv.ModRevision
	if ev.Kind == "" {
		ev.Kind, ev.Name = KindLock, ev.Lock
	}
	if ev.Type == EventAcquired {
		// Written in the acquire txn, before the token existed: the
		// record's own revision is the token.
		ev.Token = kv.CreateRevision
	}
	return ev, true
}
