package lock

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/watchfeed"
)

// A hub fans one feed out in process: to waiters, each waiting for a change
// of one key, and to event streams, each following a prefix of the audit
// trail. Registering and leaving cost a map operation, not an etcd watch,
// so any number of waiters may give up at once.
//
// Dispatch never blocks on a registration. A waiter whose backlog is full
// is told to read etcd again (keyWatch.take's reset); a stream that cannot
// take a revision's events ends with ErrSlowSubscriber and can resume from
// the last revision it read.
//
// Invariant: under mu, every event with a revision up to rev has been
// dispatched to every registration present at that time, and every later
// event will be dispatched to every registration present when it comes.
//
// A waiter registers after it read what it waits on, at some revision;
// events between that read and the registration were dispatched without
// it. The hub keeps the latest events (recent) so that the registration
// gets them anyway. A read cannot stand in for them: a member's local
// read may still see the revision before the one it has just sent out
// on its watches.
type hub struct {
	e    *Engine
	feed *watchfeed.Feed

	mu      sync.Mutex
	rev     int64
	keys    map[string]map[*keyWatch]struct{}
	streams map[*streamWatch]struct{}
	// recent holds the latest dispatched events in revision order, at
	// most recentEvents; every event with a revision above floor is in it.
	recent []*clientv3.Event
	floor  int64
	// lastEvent is the revision of the newest audit event dispatched;
	// advanced is closed and replaced when rev moves.
	lastEvent int64
	advanced  chan struct{}
	// events says the hub's feed is the trail's revisions
	// (revisionsRange): it serves event streams and tracks lastEvent.
	events bool
}

// recentEvents bounds the events a hub keeps for late registrations: more
// than are committed between a waiter's read and its registration, bar
// a long stall of the waiter's goroutine (then it reads etcd instead).
const recentEvents = 4096

func newHub(e *Engine, name, key string, from int64, opts ...clientv3.OpOption) *hub {
	h := &hub{e: e, rev: from - 1, floor: from - 1, keys: map[string]map[*keyWatch]struct{}{}, streams: map[*streamWatch]struct{}{},
		advanced: make(chan struct{})}
	h.feed = e.newFeed(name, key, from, h.dispatch, h.compacted, opts...)
	return h
}

func (h *hub) dispatch(_ context.Context, wr clientv3.WatchResponse) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range wr.Events {
		key := string(ev.Kv.Key)
		for kw := range h.keys[key] {
			kw.push(ev)
		}
		if g, ok := seatGroup(key); ok {
			for kw := range h.keys[g] {
				kw.push(ev)
			}
		}
	}
	h.remember(wr.Events)
	if h.events {
		if len(h.streams) > 0 {
			h.stream(h.e.revisionEvents(wr, store.NowUTC()), h.streams)
		}
		h.lastEvent = max(h.lastEvent, h.e.lastEventIn(wr.Events))
	}
	was := h.rev
	if n := len(wr.Events); n > 0 {
		h.rev = max(h.rev, wr.Events[n-1].Kv.ModRevision)
	} else if wr.IsProgressNotify() {
		h.rev = max(h.rev, wr.Header.Revision)
	}
	if h.rev > was {
		close(h.advanced)
		h.advanced = make(chan struct{})
	}
	return nil
}

// eventsThrough returns the revision of the newest audit event at or
// before rev, once the hub has heard everything up to rev (or a
// later one); it asks etcd for progress if it has to wait.
func (h *hub) eventsThrough(ctx context.Context, rev int64) (int64, error) {
	for {
		h.mu.Lock()
		reached, last, advanced := h.rev, h.lastEvent, h.advanced
		h.mu.Unlock()
		if reached >= rev {
			return last, nil
		}
		h.feed.RequestProgress()
		select {
		case <-advanced:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// remember keeps evs in recent, evicting the oldest beyond recentEvents.
func (h *hub) remember(evs []*clientv3.Event) {
	if len(evs) == 0 {
		return
	}
	h.recent = append(h.recent, evs...)
	if over := len(h.recent) - recentEvents; over > 0 {
		h.floor = max(h.floor, h.recent[over-1].Kv.ModRevision)
		// Shift rather than reslice, so the array does not grow for ever.
		n := copy(h.recent, h.recent[over:])
		clear(h.recent[n:])
		h.recent = h.recent[:n]
	}
}

// stream hands recs, one or more revisions' audit events in revision
// order (revisionEvents), to the streams, a revision at a time: events of
// one revision (one txn) reach a stream all or none.
func (h *hub) stream(recs []pendingRecord, to map[*streamWatch]struct{}) {
	for i := 0; i < len(recs); {
		rev := recs[i].ev.Revision
		j := i + 1
		for j < len(recs) && recs[j].ev.Revision == rev {
			j++
		}
		for sw := range to {
			if rev <= sw.after {
				continue
			}
			var mine []Event
			for _, p := range recs[i:j] {
				if sw.filter.keep(p.ev) {
					mine = append(mine, p.ev)
				}
			}
			if len(mine) > 0 {
				if sw.filter.marks {
					mine = append(mine, mark(rev))
				}
				sw.push(mine)
			}
		}
		i = j
	}
}

// compacted is the feed's answer to a history compacted away under it:
// every registration may have missed events, so each waiter reads etcd
// again and each stream ends (to resume from the audit trail itself,
// which compaction does not touch).
func (h *hub) compacted(_ context.Context, compactRev int64) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.keys {
		for kw := range set {
			kw.overflow()
		}
	}
	for sw := range h.streams {
		sw.end(fmt.Errorf("events up to revision %d were compacted away: %w", compactRev, ErrSlowSubscriber))
	}
	h.rev = max(h.rev, compactRev)
	h.recent, h.floor = nil, h.rev
	return compactRev + 1, nil
}

// keyWatchBacklog bounds the events a waiter's registration holds. A waiter
// takes them as soon as it is woken; more than a few mean it should read
// the key instead.
const keyWatchBacklog = 64

// keyWatch is a waiter's registration for the changes of one key.
type keyWatch struct {
	h     *hub
	keys  []string
	after int64 // events up to this revision are already known to the waiter
	// c is signalled when events arrive; take them with take.
	c chan struct{}

	mu     sync.Mutex
	evs    []*clientv3.Event
	missed bool
}

// watchKey registers for the changes of key after revision after, the
// revision at which the caller read what it waits on; a key that ends in
// the seat separator (store.SeatsOf) registers for every seat of its thing.
// Changes already dispatched after that revision are handed to the
// registration at once, from recent. missed reports that recent no longer reaches back to
// after: the caller must then read the key with a linearizable read to
// learn of a change in between.
func (h *hub) watchKey(key string, after int64) (kw *keyWatch, missed bool) {
	return h.watchKeys([]string{key}, after)
}

// putAt returns the put of key at revision rev, nil if rev did not put
// it. known is false when the hub cannot tell: it has not dispatched rev
// yet, or no longer holds all of rev's events. A revision is one txn, and
// etcd sends a txn's events in one watch response, so once the hub has
// dispatched one event of rev it holds them all.
func (h *hub) putAt(key string, rev int64) (kv *mvccpb.KeyValue, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rev > h.rev || rev <= h.floor {
		return nil, false
	}
	i := sort.Search(len(h.recent), func(i int) bool { return h.recent[i].Kv.ModRevision >= rev })
	for _, ev := range h.recent[i:] {
		if ev.Kv.ModRevision != rev {
			break
		}
		if ev.Type == mvccpb.PUT && string(ev.Kv.Key) == key {
			return ev.Kv, true
		}
	}
	return nil, true
}

// watchKeys is watchKey for changes of any of keys, in one registration:
// what a lock set waits on.
func (h *hub) watchKeys(keys []string, after int64) (kw *keyWatch, missed bool) {
	kw = &keyWatch{h: h, keys: keys, after: after, c: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range keys {
		set := h.keys[key]
		if set == nil {
			set = map[*keyWatch]struct{}{}
			h.keys[key] = set
		}
		set[kw] = struct{}{}
	}
	if h.rev <= after {
		return kw, false
	}
	if after < h.floor {
		return kw, true
	}
	// recent is in revision order: its events after after are its tail.
	i := sort.Search(len(h.recent), func(i int) bool { return h.recent[i].Kv.ModRevision > after })
	for _, ev := range h.recent[i:] {
		k := string(ev.Kv.Key)
		if slices.ContainsFunc(keys, func(key string) bool {
			return k == key || strings.HasSuffix(key, string(store.SeatSep)) && strings.HasPrefix(k, key)
		}) {
			kw.push(ev)
		}
	}
	return kw, false
}

// seatGroup is the registration key that stands for every seat of the
// thing whose seat key is key (store.SeatsOf): a waiter registered under it
// hears of every seat's changes. ok is false for a key that is no seat.
func seatGroup(key string) (string, bool) {
	i := strings.LastIndexByte(key, store.SeatSep)
	if i < 0 {
		return "", false
	}
	return key[:i+1], true
}

// push is called by the hub under its lock.
func (kw *keyWatch) push(ev *clientv3.Event) {
	if ev.Kv.ModRevision <= kw.after {
		return
	}
	kw.mu.Lock()
	if len(kw.evs) < keyWatchBacklog {
		kw.evs = append(kw.evs, ev)
	} else {
		kw.missed = true
	}
	kw.mu.Unlock()
	kw.signal()
}

// overflow tells the waiter it may have missed events.
func (kw *keyWatch) overflow() {
	kw.mu.Lock()
	kw.missed = true
	kw.mu.Unlock()
	kw.signal()
}

func (kw *keyWatch) signal() {
	select {
	case kw.c <- struct{}{}:
	default:
	}
}

// take returns the events that arrived since the last take. missed means
// some were dropped: the waiter must read the key.
func (kw *keyWatch) take() (evs []*clientv3.Event, missed bool) {
	kw.mu.Lock()
	defer kw.mu.Unlock()
	evs, missed = kw.evs, kw.missed
	kw.evs, kw.missed = nil, false
	return evs, missed
}

// close ends the registration. It may be called more than once.
func (kw *keyWatch) close() {
	h := kw.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range kw.keys {
		if set := h.keys[key]; set != nil {
			delete(set, kw)
			if len(set) == 0 {
				delete(h.keys, key)
			}
		}
	}
}

// streamWatch is an event stream's registration for the audit events its
// filter keeps. Its events wait in evs until the pump has put them into the
// subscription's channel: evs and the channel together hold at most the
// subscription's buffer, the bound of ErrSlowSubscriber.
type streamWatch struct {
	h      *hub
	filter eventFilter
	after  int64      // events up to this revision are the replay's, not the hub's
	ch     chan Event // the subscription's channel; only pump sends on it
	c      chan struct{}

	mu sync.Mutex
	// evs are dispatched and not yet sent on ch; evs[0] may be on ch
	// already while pump removes it.
	evs []Event
	// err is set once: the stream ends then, at the next revision, and
	// what evs still hold is dropped (the reader resumes from the last
	// revision it read).
	err error
}

// watchStream registers a stream for the audit events that f keeps, to be sent on ch, and returns the revision up to which the caller
// must read events itself: the stream gets every event after it and after
// since. That is since when the hub's recent events cover the gap, and
// the revision up to which it had dispatched otherwise.
func (h *hub) watchStream(f eventFilter, since int64, ch chan Event) (*streamWatch, int64) {
	sw := &streamWatch{h: h, filter: f, ch: ch, c: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streams[sw] = struct{}{}
	if since < h.rev && since >= h.floor {
		// The events after since are in recent: when they are few, the
		// stream gets them from there, and its caller has nothing left
		// to read from the trail (which would wait for the history index
		// while live events pile up).
		i := sort.Search(len(h.recent), func(i int) bool { return h.recent[i].Kv.ModRevision > since })
		if len(h.recent)-i <= cap(ch)/2 {
			sw.after = since
			recs := h.e.revisionEvents(clientv3.WatchResponse{Events: h.recent[i:]}, store.NowUTC())
			h.stream(recs, map[*streamWatch]struct{}{sw: {}})
			sw.after = h.rev
			return sw, since
		}
	}
	sw.after = max(since, h.rev)
	return sw, h.rev
}

// revision is the revision up to which the hub has dispatched events.
func (h *hub) revision() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev
}

// push is called by the hub under its lock with one revision's events.
func (sw *streamWatch) push(evs []Event) {
	sw.mu.Lock()
	switch {
	case sw.err != nil:
	case len(sw.evs)+len(sw.ch)+len(evs) > cap(sw.ch):
		sw.err = ErrSlowSubscriber
	default:
		sw.evs = append(sw.evs, evs...)
	}
	sw.mu.Unlock()
	sw.signal()
}

func (sw *streamWatch) end(err error) {
	sw.mu.Lock()
	if sw.err == nil {
		sw.err = err
	}
	sw.mu.Unlock()
	sw.signal()
}

func (sw *streamWatch) signal() {
	select {
	case sw.c <- struct{}{}:
	default:
	}
}

// pump sends the stream's events on ch, in order, until ctx ends or the
// stream does. It is ch's only sender once the replay is over. The end
// comes between revisions, never inside one: the reader resumes from the
// last revision it read, and must have read all of it.
func (sw *streamWatch) pump(ctx context.Context) error {
	var last int64 // the revision of the last event sent
	for {
		sw.mu.Lock()
		var ev Event
		pending := len(sw.evs) > 0
		if pending {
			ev = sw.evs[0]
		}
		err := sw.err
		sw.mu.Unlock()
		if err != nil && (!pending || ev.Revision != last) {
			return err
		}
		if !pending {
			select {
			case <-sw.c:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if ev.Revision == last {
			// The rest of a revision: admitted whole, so it has room
			// on ch unless a replay filled it.
			select {
			case sw.ch <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
		} else {
			select {
			case sw.ch <- ev:
			case <-sw.c:
				continue // news, maybe the end: look again
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		last = ev.Revision
		sw.mu.Lock()
		sw.evs[0] = Event{}
		sw.evs = sw.evs[1:]
		sw.mu.Unlock()
	}
}

func (sw *streamWatch) close() {
	sw.h.mu.Lock()
	defer sw.h.mu.Unlock()
	delete(sw.h.streams, sw)
}
