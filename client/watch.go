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

// holdWatcher is a Client's one event stream for all the locks it holds,
// so that Lost fires as soon as the audit trail records a hold's end
// (revoked, expired, session_expired, or released by someone else),
// rather than at the next renew.
//
// One stream per Client, not one per lock: nodes cap event streams per
// client address (250) and per credential (500), and a process holding
// hundreds of locks, or many processes behind one address, must not spend
// those slots on watching. While every hold has the same name (one lock,
// the usual case, as in "baton exec") the stream asks for that lock's
// events only; holds of several names widen it to every event, and it
// narrows again when they end. A change of filter reconnects from where
// the old stream was, so no event falls in between.
//
// The stream only ever makes a lock lost sooner: renewal stays the
// liveness check. A stream that cannot connect, or that a node refuses,
// changes nothing, and the lock is then lost by a renew's answer or by
// its TTL as before.
type holdWatcher struct {
	c  *Client
	mu sync.Mutex
	// holds are the locks watched, by name and token: several *Locks
	// share a hold when a session acquired the lock again (a 200).
	holds map[holdKey][]*Lock
	// ended remembers ends of holds not (yet) registered, oldest first in
	// endedOrder: a revoke can be streamed in the moment between the
	// acquire's answer and the lock's registration.
	ended      map[holdKey]Event
	endedOrder []holdKey

	// The current stream: cancel is nil when none runs. It delivers the
	// events after revision from, of lock filter ("" for every lock); pos
	// is the latest revision it delivered. gen tells a stream's events
	// from those of the stream it replaced.
	cancel context.CancelFunc
	filter string
	from   int64
	pos    int64
	gen    uint64
}

type holdKey struct {
	name  string
	token int64
}

// register starts watching l.
func (w *holdWatcher) register(l *Lock) {
	k := holdKey{l.name, l.token}
	w.mu.Lock()
	if w.holds == nil {
		w.holds = map[holdKey][]*Lock{}
		w.ended = map[holdKey]Event{}
	}
	ev, ended := w.ended[k]
	if !ended {
		w.holds[k] = append(w.holds[k], l)
		covered := w.cancel != nil && (w.filter == "" || w.filter == l.name) && w.from < l.token
		if !covered {
			// The events after token-1 include every end of this hold;
			// the events after pos, every event the other holds still
			// wait for.
			w.restartLocked(min(w.resumeLocked(), l.token-1))
		}
	}
	w.mu.Unlock()
	if ended {
		l.lose(endedError{ev})
	}
}

// unregister stops watching l; the stream stops with the last hold.
func (w *holdWatcher) unregister(l *Lock) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := holdKey{l.name, l.token}
	ls := w.holds[k]
	i := slices.Index(ls, l)
	if i < 0 {
		return
	}
	if ls = slices.Delete(ls, i, i+1); len(ls) > 0 {
		w.holds[k] = ls
		return
	}
	delete(w.holds, k)
	switch {
	case len(w.holds) == 0:
		w.stopLocked()
		w.ended, w.endedOrder = map[holdKey]Event{}, nil
	case w.filter == "" && w.wantFilterLocked() != "":
		w.restartLocked(w.resumeLocked())
	}
}

// wantFilterLocked is the lock filter the holds allow: their name when
// they all have the same, else "" (every lock).
func (w *holdWatcher) wantFilterLocked() string {
	name := ""
	for k := range w.holds {
		if name != "" && k.name != name {
			return ""
		}
		name = k.name
	}
	return name
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
	evc, errc := w.c.Events(ctx, EventsOptions{Lock: w.filter, Since: max(since, 1)})
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
	var lost []*Lock
	w.mu.Lock()
	if w.gen != gen {
		w.mu.Unlock()
		return // a replaced stream's: its successor delivers it again
	}
	w.pos = max(w.pos, ev.Revision)
	switch ev.Type {
	case "revoked", "expired", "session_expired", "released":
		// A released event for a registered hold is someone else's
		// doing (a release by its token elsewhere, a session deleted):
		// Lock.Release unregisters before it releases.
		k := holdKey{ev.Lock, ev.Token}
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
	// Outside mu: lose takes the lock's mutex, and holds it while it
	// unregisters (taking mu).
	for _, l := range lost {
		l.lose(endedError{ev})
	}
}

// endedError is a hold's end as the audit trail recorded it. It matches
// ErrNotHeld: the token no longer holds the lock.
type endedError struct{ ev Event }

func (e endedError) Error() string {
	s := fmt.Sprintf("%s at revision %d", e.ev.Type, e.ev.Revision)
	if e.ev.Detail != "" {
		s += ": " + e.ev.Detail
	}
	return s
}

func (e endedError) Is(target error) bool { return target == ErrNotHeld }
