package trail

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
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
	// Scope, when not nil, keeps only the events about names under one
	// of its prefixes (a credential's view), and gaps, which are about no
	// name.
	Scope Scope
}

// Scope is the names a view may show: those under any of its prefixes.
// nil is every name; an empty, non-nil Scope none.
type Scope []string

// allows reports whether s lets a view show the event ev.
func (s Scope) allows(ev Event) bool {
	if s == nil || ev.Type == EventGap {
		return true
	}
	for _, p := range s {
		if strings.HasPrefix(ev.Name, p) {
			return true
		}
	}
	return false
}

// markers are the bytes of which a trail value of an event s allows
// holds one (prefilter): its name's or lock's field starting with a
// prefix, or a gap's type. encoding/json writes names as they are: they
// hold no character it escapes.
func (s Scope) markers() [][]byte {
	if s == nil {
		return nil
	}
	out := [][]byte{[]byte(`"type":"gap"`)}
	for _, p := range s {
		out = append(out, []byte(`"name":"`+p), []byte(`"lock":"`+p))
	}
	return out
}

func (o HistoryOptions) filtered() bool {
	return o.Owner != "" || len(o.Types) > 0 || !o.From.IsZero() || !o.To.IsZero() || o.Kind != "" || o.Scope != nil
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
	return o.Scope.allows(ev)
}

// History returns audit events newest first, and the Before of the next
// page (0 when this is the last page). Unless the trail ends, a page
// holds Limit events, or more: it never ends between events of one
// revision, so it runs over Limit to the end of its last revision. A page
// with filters beyond Lock, or Kind and Name, may come back short.
//
// A page is one range with a limit over the indexed trail (histkeys.go),
// or over one thing's index with Lock or Kind and Name: it costs Limit
// events whatever the trail holds. Other filters read at most
// HistoryScanBudget events per call (filteredHistory).
func (t *Trail) History(ctx context.Context, o HistoryOptions) ([]Event, int64, error) {
	src, err := t.checkHistory(&o)
	if err != nil {
		return nil, 0, err
	}
	if o.Before == 1 {
		// Nothing is older than revision 1, etcd's first.
		return []Event{}, 0, nil
	}
	top, err := t.awaitIndexed(ctx)
	if err != nil {
		return nil, 0, err
	}
	if o.Before == 0 || o.Before > top {
		o.Before = top + 1
	}
	if o.filtered() {
		return t.filteredHistory(ctx, src, o)
	}
	evs, err := t.readNewest(ctx, src, o.Before, o.Limit+1)
	if err != nil {
		return nil, 0, err
	}
	if len(evs) <= o.Limit {
		return evs, 0, nil
	}
	// A page never ends inside a revision: one txn records many events
	// at one revision (a batch of grants, a session's locks released
	// together), and the next page starts below next. When its Limit-th
	// event's revision goes on past it, the page takes the rest of that
	// revision: it runs over Limit rather than come back short.
	cut := evs[o.Limit-1].Revision
	if evs[o.Limit].Revision != cut {
		return evs[:o.Limit], cut, nil
	}
	n := o.Limit
	for n > 0 && evs[n-1].Revision == cut {
		n--
	}
	whole, err := t.readRevision(ctx, src, cut)
	if err != nil {
		return nil, 0, err
	}
	return append(evs[:n], whole...), cut, nil
}

// checkHistory validates o, filling in its defaults, and returns the
// index its pages are read from.
func (t *Trail) checkHistory(o *HistoryOptions) (trailSource, error) {
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit < 1 || o.Limit > MaxListLimit {
		return trailSource{}, invalid("limit", "must be between 1 and %d", MaxListLimit)
	}
	if o.Before < 0 {
		return trailSource{}, invalid("before", "must be a positive revision")
	}
	for _, t := range o.Types {
		if !slices.Contains(eventTypes, t) {
			return trailSource{}, invalid("type", "%q is not an event type (want %s)", t, joinTypes(eventTypes))
		}
	}
	if !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To) {
		return trailSource{}, invalid("from", "must be before to")
	}
	var err error
	if o.Lock, err = lockOfName(o.Kind, o.Name, o.Lock); err != nil {
		return trailSource{}, err
	}
	return t.trailOf(o.Lock, o.Kind, o.Name)
}

// trailOf is the index of one lock's events (lock set), of the thing of
// kind named name, or the whole trail.
func (t *Trail) trailOf(lock string, kind EventKind, name string) (trailSource, error) {
	switch {
	case lock != "":
		if err := store.CheckName("lock", lock); err != nil {
			return trailSource{}, err
		}
		return trailSource{prefix: t.keys.TrailName(KindLock, lock), byName: true}, nil
	case kind == KindKey && name != "":
		if err := store.CheckKey("name", name); err != nil {
			return trailSource{}, err
		}
		return trailSource{prefix: t.keys.TrailName(kind, name), byName: true}, nil
	case kind != "" && name != "":
		if err := store.CheckName("name", name); err != nil {
			return trailSource{}, err
		}
		return trailSource{prefix: t.keys.TrailName(kind, name), byName: true}, nil
	}
	return trailSource{prefix: t.keys.Trail()}, nil
}

// trailSource is an index of the trail: trail/ itself, or one thing's
// trailname/ keys, which point into it.
type trailSource struct {
	prefix string
	byName bool
}

func (s trailSource) end() string { return clientv3.GetPrefixRangeEnd(s.prefix) }

// readNewest reads the want newest events of src recorded before before
// (or all, if fewer), newest first.
func (t *Trail) readNewest(ctx context.Context, src trailSource, before int64, want int) ([]Event, error) {
	kvs, err := t.readNewestKVs(ctx, src, before, want)
	return decodeTrail(kvs), err
}

// firstWindow is readNewestKVs' first window, in revisions. A revision
// holds from one event to a batch's worth (tens, under load), so it
// walks from 32 to a few thousand events; a sparse trail costs a few more
// reads, each twice as wide.
const firstWindow = 32

// firstGroups is how many trail/ keys the first read of a page asks for,
// before it knows how many events a key holds here.
const firstGroups = 4

// trailKV is one event of the trail, undecoded, and its revision (from
// its key).
type trailKV struct {
	rev   int64
	value []byte
}

func decodeTrail(kvs []trailKV) []Event {
	events := make([]Event, 0, len(kvs))
	for _, t := range kvs {
		if ev, ok := t.decode(); ok {
			events = append(events, ev)
		}
	}
	return events
}

func (t trailKV) decode() (Event, bool) {
	var ev Event
	if json.Unmarshal(t.value, &ev) != nil {
		return Event{}, false
	}
	ev.Revision = t.rev
	return ev, true
}

var eventTypes = []EventType{
	EventAcquired, EventReleased, EventExpired, EventRevoked, EventSessionExpired,
	EventElected, EventResigned, EventProclaimed, EventFenceReset, EventDelayCleared, EventYieldRequested, EventGap, EventPut, EventDelete,
}

func joinTypes(ts []EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// HistoryScanBudget bounds the events a filtered History call reads: a
// filter that matches rarely returns a short (even empty) page with a
// next Before, where the next call goes on, so no call reads the whole
// trail. At 5,000 events a call stays within tens of milliseconds. The
// trail is read a revision's events at a time (histkeys.go), so a call
// may read the rest of the last revision it reached beyond the budget.
const HistoryScanBudget = 5000

// scanPage is how many events a scan reads at a time.
const scanPage = 1000

// clockSkew is how much older than From an event may look, by its
// writer's clock, and still be followed by events of From or later: the
// scan of a From filter ends past it.
const clockSkew = 10 * time.Second

// filteredHistory serves the filters no index answers: it scans src
// newest first from o.Before, a revision at a time, keeping what o keeps,
// until the page is full, HistoryScanBudget events were read, or the
// events are older than o.From.
func (t *Trail) filteredHistory(ctx context.Context, src trailSource, o HistoryOptions) ([]Event, int64, error) {
	events := []Event{}
	pastFrom := false
	candidate := o.prefilter()
	next := o.Before
	for round := 0; ; round++ {
		var err error
		next, err = t.scanTrail(ctx, src, next, HistoryScanBudget, func(group []trailKV) bool {
			for _, t := range group {
				if !candidate(t.value) {
					continue
				}
				if ev, ok := t.decode(); ok && o.keep(ev) {
					events = append(events, ev)
				}
			}
			if !o.From.IsZero() {
				if oldest, ok := group[len(group)-1].decode(); ok && oldest.Time.Before(o.From.Add(-clockSkew)) {
					pastFrom = true // nothing older can match
					return false
				}
			}
			return len(events) < o.Limit
		})
		if err != nil {
			return nil, 0, err
		}
		// A credential's view must not come back empty while its events
		// remain further back: it scans on, up to scopedScanRounds
		// budgets, before it answers an empty page with a cursor.
		if len(events) > 0 || next == 0 || pastFrom || o.Scope == nil || round+1 == scopedScanRounds {
			break
		}
	}
	if pastFrom {
		next = 0
	}
	return events, next, nil
}

// scopedScanRounds bounds the budgets a credential's view scans for its
// first event (filteredHistory): 100,000 events, a second or so.
const scopedScanRounds = 20

// prefilter says, from an event's JSON alone, whether it may pass o's
// owner, type and kind filters: most records of a scan fail them, and a
// byte search is much cheaper than decoding. It never rejects an event
// keep would keep: the trail's values are encoding/json's, which writes
// each field as "name":value with value as json.Marshal writes it alone.
func (o HistoryOptions) prefilter() func(value []byte) bool {
	var all [][]byte
	if o.Owner != "" {
		all = append(all, jsonField("owner", o.Owner))
	}
	if o.Kind != "" {
		all = append(all, jsonField("kind", string(o.Kind)))
	}
	anyType := make([][]byte, len(o.Types))
	for i, t := range o.Types {
		anyType[i] = jsonField("type", string(t))
	}
	inScope := o.Scope.markers()
	return func(v []byte) bool {
		for _, f := range all {
			if !bytes.Contains(v, f) {
				return false
			}
		}
		contains := func(f []byte) bool { return bytes.Contains(v, f) }
		return (len(anyType) == 0 || slices.ContainsFunc(anyType, contains)) && (inScope == nil || slices.ContainsFunc(inScope, contains))
	}
}

func jsonField(name, value string) []byte {
	b, _ := json.Marshal(value) // a string always encodes
	return append([]byte(`"`+name+`":`), b...)
}

// scanTrail hands visit the records of src recorded before before, newest
// first, a revision's records at a time, until visit returns false or
// budget records were read. It returns the Before that goes on where it
// stopped, 0 at the trail's end.
func (t *Trail) scanTrail(ctx context.Context, src trailSource, before int64, budget int, visit func(group []trailKV) bool) (int64, error) {
	for budget > 0 {
		n := min(scanPage, budget)
		kvs, err := t.readNewestKVs(ctx, src, before, n+1)
		if err != nil {
			return 0, err
		}
		if len(kvs) == 0 {
			return 0, nil
		}
		more := len(kvs) > n
		if more {
			// Hold back the revision that may go on past the read.
			last, k := kvs[n].rev, n
			for k > 0 && kvs[k-1].rev == last {
				k--
			}
			if k > 0 {
				kvs = kvs[:k]
			} else if kvs, err = t.readRevisionKVs(ctx, src, last); err != nil {
				return 0, err
			}
		}
		budget -= len(kvs)
		for i := 0; i < len(kvs); {
			j := i + 1
			for j < len(kvs) && kvs[j].rev == kvs[i].rev {
				j++
			}
			if !visit(kvs[i:j]) {
				return kvs[i].rev, nil
			}
			i = j
		}
		if !more {
			return 0, nil
		}
		before = kvs[len(kvs)-1].rev
	}
	return before, nil
}

// lockOfName resolves the name filter of kind: a lock's name is its Lock
// filter. The audit trail holds records of locks only (their kind is
// derived), so a filter on another kind keeps its name for keep to apply.
func lockOfName(kind EventKind, name, lock string) (string, error) {
	if err := store.CheckKind(kind); err != nil {
		return "", err
	}
	if name == "" || kind != "" && kind != KindLock {
		return lock, nil
	}
	if err := store.CheckName("name", name); err != nil {
		return "", err
	}
	if lock != "" && lock != name {
		return "", invalid("name", "names another lock than lock (%q): give one of them", lock)
	}
	return name, nil
}
