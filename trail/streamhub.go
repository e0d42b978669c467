package trail

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/watchhub"
)

// streamHub feeds event streams: each follows the audit events its
// filter keeps, as one etcd watch of the trail's revisions
// (revisionsRange) brings them, fanned out in process
// (internal/watchhub). A stream that cannot take a revision's events
// ends with ErrSlowSubscriber and can resume from the last revision it
// read.
type streamHub struct {
	*watchhub.Hub
	t       *Trail
	streams map[*streamWatch]struct{}
	// lastEvent is the revision of the newest audit event dispatched.
	lastEvent int64
}

// newStreamHub starts the streams' hub from revision from.
func (t *Trail) newStreamHub(from int64) *streamHub {
	h := &streamHub{t: t, streams: map[*streamWatch]struct{}{}}
	key, end := t.keys.Revisions()
	h.Hub = watchhub.New(t.eng.WatchConfig("events", key, from, clientv3.WithRange(end), clientv3.WithPrevKV()), h.dispatch, h.compacted)
	return h
}

// dispatch hands a response's audit events to the streams.
func (h *streamHub) dispatch(wr clientv3.WatchResponse) {
	if len(h.streams) > 0 {
		h.stream(h.t.revisionEvents(wr, store.NowUTC()), h.streams)
	}
	h.lastEvent = max(h.lastEvent, h.t.lastEventIn(wr.Events))
}

// compacted ends every stream, to resume from the audit trail itself,
// which compaction does not touch.
func (h *streamHub) compacted(compactRev int64) {
	for sw := range h.streams {
		sw.end(fmt.Errorf("events up to revision %d were compacted away: %w", compactRev, ErrSlowSubscriber))
	}
}

// eventsThrough returns the revision of the newest audit event at or
// before rev, once the hub has heard everything up to rev (or a
// later one); it asks etcd for progress if it has to wait.
func (h *streamHub) eventsThrough(ctx context.Context, rev int64) (int64, error) {
	var last int64
	err := h.Await(ctx, rev, func() { last = h.lastEvent })
	return last, err
}

// stream hands recs, one or more revisions' audit events in revision
// order (revisionEvents), to the streams, a revision at a time: events of
// one revision (one txn) reach a stream all or none.
func (h *streamHub) stream(recs []pendingRecord, to map[*streamWatch]struct{}) {
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

// streamWatch is an event stream's registration for the audit events its
// filter keeps. Its events wait in evs until the pump has put them into the
// subscription's channel: evs and the channel together hold at most the
// subscription's buffer, the bound of ErrSlowSubscriber.
type streamWatch struct {
	h      *streamHub
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
func (h *streamHub) watchStream(f eventFilter, since int64, ch chan Event) (*streamWatch, int64) {
	sw := &streamWatch{h: h, filter: f, ch: ch, c: make(chan struct{}, 1)}
	h.Lock()
	defer h.Unlock()
	h.streams[sw] = struct{}{}
	rev := h.Rev()
	if recent, ok := h.Recent(since); ok && since < rev && len(recent) <= cap(ch)/2 {
		// The events after since are in recent and few: the stream gets
		// them from there, and its caller has nothing left to read from
		// the trail (which would wait for the history index while live
		// events pile up).
		sw.after = since
		recs := h.t.revisionEvents(clientv3.WatchResponse{Events: recent}, store.NowUTC())
		h.stream(recs, map[*streamWatch]struct{}{sw: {}})
		sw.after = rev
		return sw, since
	}
	sw.after = max(since, rev)
	return sw, rev
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
	sw.h.Lock()
	defer sw.h.Unlock()
	delete(sw.h.streams, sw)
}
