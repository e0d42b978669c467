package trail

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrSlowSubscriber ends a subscription whose reader fell more than its
// buffer behind: one slow reader must not hold events in memory for ever
// nor slow anyone else. It can resume from the last revision it read.
var ErrSlowSubscriber = errors.New("subscriber too slow: resume from the last revision read")

// SubscribeOptions selects the events of a subscription.
type SubscribeOptions struct {
	// Replay sends the events recorded after revision Since (exclusive:
	// Since 0 replays every retained event) before the live ones. Without
	// it only live events come.
	Replay bool
	Since  int64
	// Lock keeps only the events of one lock.
	Lock string
	// Kind keeps only the events about one kind of thing, and Name only
	// those about the thing of that name, as in HistoryOptions.
	Kind EventKind
	Name string
	// NamePrefix keeps only the events about things whose names start
	// with it (keys under a prefix: "config/").
	NamePrefix string
	// Scope, when not nil, keeps only the events about names under its
	// prefixes (a credential's view), and gaps, as in HistoryOptions.
	Scope Scope
	// Buffer is how many events may wait for the reader; 0 means 1024.
	Buffer int
	// marks asks for a mark after each revision's events (eventFilter).
	marks bool
}

// Subscription streams audit events in revision order.
type Subscription struct {
	// C delivers the events. It is closed when the subscription ends; Err
	// then tells why.
	C      <-chan Event
	cancel context.CancelFunc
	mu     sync.Mutex
	err    error
}

// Err returns why C was closed: the caller's context, ErrClosed when the
// engine stops, ErrSlowSubscriber, or an etcd failure.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription.
func (s *Subscription) Close() { s.cancel() }

// Subscribe streams the audit trail: first the events recorded after
// o.Since, read from etcd, then live events from the engine's event watch,
// which takes over exactly where that read ended, so nothing is missed and
// nothing comes twice. Events that share a revision (one transaction)
// arrive together.
func (t *Trail) Subscribe(ctx context.Context, o SubscribeOptions) (*Subscription, error) {
	if o.Since < 0 {
		return nil, invalid("since", "must be a revision, 0 or more")
	}
	lockName, err := lockOfName(o.Kind, o.Name, o.Lock)
	if err != nil {
		return nil, err
	}
	o.Lock = lockName
	src, err := t.trailOf(o.Lock, o.Kind, o.Name)
	if err != nil {
		return nil, err
	}
	f := eventFilter{kind: o.Kind, name: o.Name, prefix: o.NamePrefix, scope: o.Scope, marks: o.marks}
	if o.Lock != "" {
		// A lock's, or an election's (lockOfName): the thing its key
		// name keeps.
		f.kind, f.name = store.ThingOf(o.Lock)
	}
	if o.Buffer <= 0 {
		o.Buffer = 1024
	}
	if t.drain.Err() != nil {
		return nil, ErrClosed
	}
	if n := t.subs.Add(1); t.cfg.MaxEventStreams > 0 && n > int64(t.cfg.MaxEventStreams) {
		t.subs.Add(-1)
		return nil, &LimitError{
			Err: ErrTooManyStreams, Limit: t.cfg.MaxEventStreams, RetryAfter: streamsRetryAfter,
			Reason: fmt.Sprintf("this node serves the maximum of %d event streams; try another node, or later", t.cfg.MaxEventStreams),
		}
	}
	since := o.Since
	if !o.Replay {
		// Live events are those after the revision etcd is at now; the
		// hub may not have sent out the ones before it yet.
		octx, done := t.etcd.Op(ctx)
		head, err := t.cli.Get(octx, t.keys.HistoryMeta(), clientv3.WithCountOnly())
		done()
		if err != nil {
			t.subs.Add(-1)
			return nil, t.etcd.Err(ctx, "subscribe", err)
		}
		since = head.Header.Revision
	}

	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.drain, cancel)
	ch := make(chan Event, o.Buffer)
	s := &Subscription{C: ch, cancel: cancel}
	go func() {
		defer t.subs.Add(-1)
		defer stop()
		defer close(ch)
		err := t.stream(sctx, src, f, since, ch)
		if t.drain.Err() != nil {
			err = ErrClosed
		} else if ctx.Err() != nil {
			err = ctx.Err()
		}
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}()
	return s, nil
}

// stream sends the events after since, then the live ones, on ch. The
// replay reads etcd up to a revision the event hub has reached, and the
// hub sends everything after it: nothing is missed and nothing comes
// twice. A long replay first catches up leg by leg, so that live events
// wait in memory only for the last, short leg.
func (t *Trail) stream(ctx context.Context, src trailSource, f eventFilter, since int64, ch chan Event) error {
	for {
		to := t.streams.Revision()
		if to <= since {
			break
		}
		n, err := t.replay(ctx, src, f, since, to, ch)
		if err != nil {
			return err
		}
		since = to
		if n < cap(ch)/2 {
			break
		}
	}
	// The hub sends what comes after both since and what it had reached.
	sw, rev := t.streams.watchStream(f, since, ch)
	defer sw.close()
	if _, err := t.replay(ctx, src, f, since, rev, ch); err != nil {
		return err
	}
	return sw.pump(ctx)
}

// eventFilter keeps the events about one kind of thing, or one thing: the
// filters beyond the key prefix (a lock's events have a prefix of their
// own). With marks, each revision's events that it keeps are followed by
// a mark, an Event with only Revision set, so that a reader knows when it
// has all of a revision (Observe).
type eventFilter struct {
	kind   EventKind
	name   string
	prefix string
	scope  Scope
	marks  bool
}

// mark is the mark that ends revision rev's events (eventFilter.marks).
func mark(rev int64) Event { return Event{Revision: rev} }

// isMark reports whether ev is a mark.
func isMark(ev Event) bool { return ev.Type == "" }

func (f eventFilter) keep(ev Event) bool {
	return (f.kind == "" || ev.Kind == f.kind) && (f.name == "" || ev.Name == f.name) && strings.HasPrefix(ev.Name, f.prefix) &&
		f.scope.allows(ev)
}

// streamsRetryAfter is the hint given with ErrTooManyStreams.
const streamsRetryAfter = 5 * time.Second

// EventStreams is how many subscriptions (event streams) the engine
// serves now: each holds at most its Buffer of events; they share one
// etcd watch.
func (t *Trail) EventStreams() int { return int(t.subs.Load()) }

// replayPage bounds each read of a replay, in events (about, for the
// trail's keys of a revision each: keysFor).
const replayPage = 1000

// replay sends the events with since < revision <= to, oldest first, and
// says how many. The reader pulls at its own pace here: the data waits in
// etcd, not in memory. The trail is keyed newest first, so the replay
// reads it a window of revisions at a time, each read newest first and
// sent reversed; a window is narrowed until its events fit a page, and
// widened while they are few. Its reads are pinned to one revision
// (trailread.go); should compaction take that, it goes on, pinned anew,
// after the last revision it sent.
func (t *Trail) replay(ctx context.Context, src trailSource, f eventFilter, since, to int64, ch chan<- Event) (int, error) {
	if since >= to {
		return 0, nil
	}
	if err := t.awaitReplay(ctx, to); err != nil {
		return 0, err
	}
	total := 0
	for try := 1; ; try++ {
		rp := replaying{t: t, src: src, f: f, to: to, ch: ch, sent: since}
		err := rp.run(ctx)
		total += rp.n
		if !errors.Is(err, errPinCompacted) || try == pinnedTries {
			return total, err
		}
		since = rp.sent
	}
}

// replaying is one pinned leg of a replay.
type replaying struct {
	t    *Trail
	src  trailSource
	f    eventFilter
	to   int64
	ch   chan<- Event
	pin  pin
	sent int64 // every event up to it is sent
	n    int   // events sent
}

func (rp *replaying) run(ctx context.Context) error {
	src, since := rp.src, rp.sent
	// A chunk named at or below since may hold events after it
	// (histchunks.go).
	r, err := rp.t.readTrailKVs(ctx, src, &rp.pin, src.prefix+revKey(since), src.end(), 1)
	if err != nil {
		return err
	}
	if err := rp.send(ctx, decodeTrail(r.events)); err != nil {
		return err
	}
	read, keys := 0, 0
	width := int64(replayPage)
	for lo := since; lo < rp.to; {
		hi := min(lo+width, rp.to)
		limit := src.keysFor(replayPage, read, keys)
		if hi == lo+1 {
			limit = 0 // one revision: all of it
		}
		r, err := rp.t.readTrailKVs(ctx, src, &rp.pin, src.prefix+revKey(hi), src.prefix+revKey(lo), limit)
		if err != nil {
			return err
		}
		read, keys = read+len(r.events), keys+r.keys
		if r.more {
			width = max((hi-lo)/2, 1)
			continue
		}
		evs := decodeTrail(r.events)
		if err := rp.send(ctx, evs); err != nil {
			return err
		}
		lo = hi
		if len(evs) < replayPage/4 {
			width = min(2*width, 1<<40)
		}
	}
	return nil
}

// send sends the events of evs (newest first) after those sent, up to
// to, oldest first, each revision's followed by its mark when the filter
// wants marks. A chunk is sent whole with the window that found its key,
// so evs may go past the window, never past to.
func (rp *replaying) send(ctx context.Context, evs []Event) error {
	kept := false // an event of the revision at hand was sent
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if ev.Revision <= rp.sent || ev.Revision > rp.to {
			continue
		}
		if rp.f.keep(ev) {
			select {
			case rp.ch <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
			rp.n, kept = rp.n+1, true
		}
		if i == 0 || evs[i-1].Revision != ev.Revision {
			if kept && rp.f.marks {
				select {
				case rp.ch <- mark(ev.Revision):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			kept, rp.sent = false, max(rp.sent, ev.Revision)
		}
	}
	return nil
}

// awaitReplay waits until the index holds every event the hub has heard
// of up to to.
func (t *Trail) awaitReplay(ctx context.Context, to int64) error {
	wctx, cancel := context.WithTimeout(ctx, t.etcd.OpTimeout)
	defer cancel()
	last, err := t.streams.eventsThrough(wctx, to)
	if err != nil {
		return t.indexBehind(wctx, 0, to, err)
	}
	return t.awaitIndexedThrough(wctx, min(last, to))
}
