package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// maxEndedMemory bounds how many ends of holds nobody registered the
// watcher remembers (see holdWatcher.ended).
const maxEndedMemory = 1024

// holdWatcher is a Client's one event stream for all the holds it keeps
// (locks, lock sets, leaderships, permits and rwlock holds), so that Lost fires as soon as the audit trail
// records a hold's end (revoked, expired, session_expired, or released or
// resigned by someone else), rather than at the next renew.
//
// One stream per Client, not one per lock: nodes cap event streams per
// client address (250) and per credential (500), and a process holding
// hundreds of locks, or many processes behind one address, must not spend
// those slots on watching. While every hold is of one thing (one lock or
// one election or permits of one semaphore or holds of one rwlock, the usual case, as in "baton
// exec" or "baton elect") the stream asks for that thing's events only
// (lock=NAME for a lock, kind=election&name=NAME for an election,
// kind=semaphore&name=NAME for a semaphore, kind=rwlock&name=NAME for a
// read/write lock); holds of several things widen
// it to every event (a lock set's hold is watched as each of its locks,
// so a set watches every event), and it narrows again when they end. A change of
// filter reconnects from where the old stream was, so no event falls in
// between.
//
// The stream only ever makes a hold lost sooner: renewal stays the
// liveness check. A stream that cannot connect, or that a node refuses,
// changes nothing, and the hold is then lost by a renew's answer or by
// its TTL as before.
type holdWatcher struct {
	c  *Client
	mu sync.Mutex
	// holds are the holds watched, by kind, name and token: several
	// share a key when a session acquired the lock again (a 200).
	holds map[holdKey][]*hold
	// ended remembers ends of holds not (yet) registered, oldest first in
	// endedOrder: a revoke can be streamed in the moment between the
	// grant's answer and the hold's registration.
	ended      map[holdKey]Event
	endedOrder []holdKey

	// The current stream: cancel is nil when none runs. It delivers the
	// events after revision from, of the thing filter (zero: every
	// event); pos
	// is the latest revision it delivered. gen tells a stream's events
	// from those of the stream it replaced.
	cancel context.CancelFunc
	filter thing
	from   int64
	pos    int64
	gen    uint64
}

// thing is what events are about: a kind ("lock", "election",
// "semaphore", "rwlock") and a name. A semaphore's permits are all one
// thing, and so are a read/write lock's holds; each is a hold of its own,
// told apart by its token.
type thing struct{ kind, name string }

// holdKey names a hold as its events do.
type holdKey struct {
	thing
	token int64
}

// eventHold is the hold ev is about. A lock's events name it in lock
// too; a server from before kinds existed sends no kind.
func eventHold(ev Event) holdKey {
	k := holdKey{thing{ev.Kind, ev.Name}, ev.Token}
	if k.kind == "" || k.kind == kindLock {
		k.kind = kindLock
		if ev.Lock != "" {
			k.name = ev.Lock
		}
	}
	return k
}

// endsHold reports whether an event of type typ ends a hold of kind.
func endsHold(kind, typ string) bool {
	switch typ {
	case "revoked", "expired", "session_expired":
		return true
	case "released":
		return kind == kindLock || kind == kindSemaphore || kind == kindRWLock
	case "resigned":
		return kind == kindElection
	}
	return false
}

// register starts watching h, under each key its ends come under.
func (w *holdWatcher) register(h *hold) {
	keys := h.watched()
	w.mu.Lock()
	if w.holds == nil {
		w.holds = map[holdKey][]*hold{}
		w.ended = map[holdKey]Event{}
	}
	ev, ended := w.endedLocked(keys)
	if !ended {
		covered := w.cancel != nil
		since := int64(^uint64(0) >> 1)
		for _, k := range keys {
			w.holds[k] = append(w.holds[k], h)
			covered = covered && (w.filter == thing{} || w.filter == k.thing) && w.from < k.token
			since = min(since, k.token-1)
		}
		if !covered {
			// The events after token-1 include every end of this hold;
			// the events after pos, every event the other holds still
			// wait for.
			w.restartLocked(min(w.resumeLocked(), since))
		}
	}
	w.mu.Unlock()
	if ended {
		h.lose(endedError{ev})
	}
}

// endedLocked returns the end remembered of any of keys.
func (w *holdWatcher) endedLocked(keys []holdKey) (Event, bool) {
	for _, k := range keys {
		if ev, ok := w.ended[k]; ok {
			return ev, true
		}
	}
	return Event{}, false
}

// unregister stops watching h; the stream stops with the last hold.
func (w *holdWatcher) unregister(h *hold) {
	w.mu.Lock()
	defer w.mu.Unlock()
	emptied := false
	for _, k := range h.watched() {
		ls := w.holds[k]
		i := slices.Index(ls, h)
		if i < 0 {
			continue
		}
		if ls = slices.Delete(ls, i, i+1); len(ls) > 0 {
			w.holds[k] = ls
			continue
		}
		delete(w.holds, k)
		emptied = true
	}
	if !emptied {
		return
	}
	switch {
	case len(w.holds) == 0:
		w.stopLocked()
		w.ended, w.endedOrder = map[holdKey]Event{}, nil
	case w.filter == thing{} && w.wantFilterLocked() != thing{}:
		w.restartLocked(w.resumeLocked())
	}
}

// wantFilterLocked is the filter the holds allow: their thing when they
// are all of the same, else the zero thing (every event).
func (w *holdWatcher) wantFilterLocked() thing {
	var t thing
	for k := range w.holds {
		if t != (thing{}) && k.thing != t {
			return thing{}
		}
		t = k.thing
	}
	return t
}

// options is the event stream that filter f asks for.
func (f thing) options(since int64) EventsOptions {
	switch f.kind {
	case "":
		return EventsOptions{Since: since}
	case kindLock:
		return EventsOptions{Lock: f.name, Since: since}
	}
	return EventsOptions{Kind: f.kind, Name: f.name, Since: since}
}

// resumeLocked is where a new stream must start so the current one's
// holds miss nothing: the latest revision it delivered, again (the
// stream may have been cut in the middle of that revision's events), or
// where it started. Repeats are harmless: a hold ends once.
// With no stream running, it is where the oldest hold began.
func (w *holdWatcher) resumeLocked() int64 {
	if w.cancel != nil {
		return max(w.from, w.pos-1)
	}
	from := int64(^uint64(0) >> 1)
	for k := range w.holds {
		from = min(from, k.token-1)
	}
	return from
}

func (w *holdWatcher) stopLocked() {
	if w.cancel != nil {
		w.cancel()
		w.cancel = nil
	}
	w.gen++
}

// restartLocked replaces the stream with one from revision since, with
// the filter the holds allow.
func (w *holdWatcher) restartLocked(since int64) {
	w.stopLocked()
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.filter, w.from, w.pos = cancel, w.wantFilterLocked(), max(since, 0), 0
	gen := w.gen
	// Since 0 would mean "from now"; revision 0 holds no event anyway.
	evc, errc := w.c.Events(ctx, w.filter.options(max(since, 1)))
	go func() {
		for ev := range evc {
			w.handle(gen, ev)
		}
		<-errc
		// A refused stream (a 4xx: no credential for events, say) is
		// not retried here; renewals go on, and the next registration
		// tries again.
		w.mu.Lock()
		if w.gen == gen {
			w.cancel = nil
		}
		w.mu.Unlock()
		cancel()
	}()
}

// handle takes one event of stream gen.
func (w *holdWatcher) handle(gen uint64, ev Event) {
	var lost []*hold
	w.mu.Lock()
	if w.gen != gen {
		w.mu.Unlock()
		return // a replaced stream's: its successor delivers it again
	}
	w.pos = max(w.pos, ev.Revision)
	var asked []*hold
	if ev.Type == "yield_requested" {
		asked = slices.Clone(w.holds[eventHold(ev)])
	}
	if k := eventHold(ev); endsHold(k.kind, ev.Type) {
		// A released or resigned event for a registered hold is someone
		// else's doing (a release by its token elsewhere, a session
		// deleted): the hold's own release unregisters it first.
		if ls, ok := w.holds[k]; ok {
			lost = slices.Clone(ls) // lose unregisters each, and stops the stream with the last
		} else if _, dup := w.ended[k]; !dup {
			w.ended[k] = ev
			w.endedOrder = append(w.endedOrder, k)
			if len(w.endedOrder) > maxEndedMemory {
				delete(w.ended, w.endedOrder[0])
				w.endedOrder = w.endedOrder[1:]
			}
		}
	}
	w.mu.Unlock()
	// Outside mu: lose takes the hold's mutex, and holds it while it
	// unregisters (taking mu).
	for _, h := range lost {
		h.lose(endedError{ev})
	}
	for _, h := range asked {
		h.askedToYield(ev)
	}
}

// endedError is a hold's end as the audit trail recorded it. It matches
// ErrNotHeld for a lock, a permit or an rwlock hold, ErrNoLeader for a leadership: the
// token no longer holds it.
type endedError struct{ ev Event }

func (e endedError) Error() string {
	s := fmt.Sprintf("%s at revision %d", e.ev.Type, e.ev.Revision)
	if len(e.ev.Set) > 0 {
		// A lock set is lost by the end of any of its locks: say which.
		s = fmt.Sprintf("lock %q %s", eventHold(e.ev).name, s)
	}
	if e.ev.Detail != "" {
		s += ": " + e.ev.Detail
	}
	return s
}

func (e endedError) Is(target error) bool {
	if e.ev.Kind == kindElection {
		return target == ErrNoLeader
	}
	return target == ErrNotHeld
}
