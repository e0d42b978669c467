// Package watchhub fans one etcd watch out in process. A Hub runs a
// watchfeed.Feed and hands each of its responses to its owner's
// registrations, under a lock that registering takes too; it keeps the
// latest events, so that a registration made after a read, at some
// revision, still gets what was dispatched since that revision.
// Registering and leaving then cost a map operation, not an etcd watch,
// so any number of registrations may come and go at once.
//
// Invariant: under the hub's lock, every event with a revision up to
// Rev has been dispatched to every registration present at that time,
// and every later event will be dispatched to every registration present
// when it comes.
//
// A registration is made after its owner read what it waits on, at some
// revision; events between that read and the registration were
// dispatched without it. Recent gives them: a read cannot stand in for
// them, since a member's local read may still see the revision before
// the one it has just sent out on its watches.
package watchhub

import (
	"context"
	"sort"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/watchfeed"
)

// RecentEvents bounds the events a hub keeps for late registrations: more
// than are committed between a read and its registration, bar a long
// stall of the registering goroutine (which then reads etcd instead).
const RecentEvents = 4096

// RecentBytes bounds the bytes of keys and values those events hold:
// keys of data carry values of up to 64 KiB by default, and 4,096 of them
// (with their previous values) would be half a gigabyte held for late
// registrations, which can read etcd instead.
const RecentBytes = 16 << 20

// eventBytes is what ev holds of keys and values.
func eventBytes(ev *clientv3.Event) int {
	n := len(ev.Kv.Key) + len(ev.Kv.Value)
	if ev.PrevKv != nil {
		n += len(ev.PrevKv.Key) + len(ev.PrevKv.Value)
	}
	return n
}

// Hub is one etcd watch fanned out. Its owner keeps the registrations,
// and touches them only under the hub's lock (Lock, or within Dispatch
// and Compacted).
type Hub struct {
	// Feed is the hub's etcd watch; its owner runs it.
	Feed *watchfeed.Feed
	// Trim, when set before the feed runs, gives the event the hub
	// dispatches and keeps in place of each one etcd sent: its owner's
	// copy without what it never reads. It must not change its argument:
	// an in-process client hands every watch of a revision the same
	// events, so the other watches would see the change.
	Trim func(*clientv3.Event) *clientv3.Event

	dispatch  func(clientv3.WatchResponse)
	compacted func(int64)

	mu  sync.Mutex
	rev int64
	// recent holds the latest dispatched events in revision order, at
	// most RecentEvents; every event with a revision above floor is in it.
	recent []*clientv3.Event
	floor  int64
	bytes  int // of recent's keys and values (eventBytes)
	// advanced is closed and replaced when rev moves.
	advanced chan struct{}
}

// New returns a hub over the feed that cfg describes, from revision
// cfg.From (cfg.Handle and cfg.Compacted are the hub's own). dispatch
// hands one watch response to the registrations, and compacted tells
// them that the events up to a revision were compacted away before they
// were dispatched; both run under the hub's lock, after which Rev covers
// what they were told.
func New(cfg watchfeed.Config, dispatch func(clientv3.WatchResponse), compacted func(compactRev int64)) *Hub {
	h := &Hub{dispatch: dispatch, compacted: compacted, rev: cfg.From - 1, floor: cfg.From - 1, advanced: make(chan struct{})}
	cfg.Handle, cfg.Compacted = h.handle, h.handleCompacted
	h.Feed = watchfeed.New(cfg)
	return h
}

func (h *Hub) handle(_ context.Context, wr clientv3.WatchResponse) error {
	if h.Trim != nil {
		evs := make([]*clientv3.Event, len(wr.Events))
		for i, ev := range wr.Events {
			evs[i] = h.Trim(ev)
		}
		wr.Events = evs
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dispatch(wr)
	h.remember(wr.Events)
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

// handleCompacted is the feed's answer to a history compacted away under
// it: every registration may have missed events.
func (h *Hub) handleCompacted(_ context.Context, compactRev int64) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.compacted(compactRev)
	h.rev = max(h.rev, compactRev)
	h.recent, h.floor, h.bytes = nil, h.rev, 0
	return compactRev + 1, nil
}

// remember keeps evs in recent, evicting the oldest beyond RecentEvents
// or RecentBytes.
func (h *Hub) remember(evs []*clientv3.Event) {
	if len(evs) == 0 {
		return
	}
	h.recent = append(h.recent, evs...)
	for _, ev := range evs {
		h.bytes += eventBytes(ev)
	}
	over := 0
	for over < len(h.recent) && (len(h.recent)-over > RecentEvents || h.bytes > RecentBytes) {
		h.bytes -= eventBytes(h.recent[over])
		over++
	}
	if over > 0 {
		h.floor = max(h.floor, h.recent[over-1].Kv.ModRevision)
		// Shift rather than reslice, so the array does not grow for ever.
		n := copy(h.recent, h.recent[over:])
		clear(h.recent[n:])
		h.recent = h.recent[:n]
	}
}

// Lock and Unlock guard the owner's registrations: a registration made
// under the lock, after reading Rev and Recent, misses nothing.
func (h *Hub) Lock()   { h.mu.Lock() }
func (h *Hub) Unlock() { h.mu.Unlock() }

// Rev is the revision up to which the hub has dispatched events. Call it
// under the lock.
func (h *Hub) Rev() int64 { return h.rev }

// Recent returns the dispatched events after revision after, in revision
// order, or reports false when the hub no longer holds all of them. Call
// it under the lock; the slice is the hub's, to read before unlocking.
func (h *Hub) Recent(after int64) ([]*clientv3.Event, bool) {
	if after < h.floor {
		return nil, false
	}
	i := sort.Search(len(h.recent), func(i int) bool { return h.recent[i].Kv.ModRevision > after })
	return h.recent[i:], true
}

// At returns the events of revision rev, or reports false when the hub
// cannot tell them: it has not dispatched rev yet, or no longer holds
// all of its events. A revision is one txn, and etcd sends a txn's
// events in one watch response, so once the hub has dispatched one event
// of rev it holds them all. Call it under the lock.
func (h *Hub) At(rev int64) ([]*clientv3.Event, bool) {
	if rev > h.rev || rev <= h.floor {
		return nil, false
	}
	i := sort.Search(len(h.recent), func(i int) bool { return h.recent[i].Kv.ModRevision >= rev })
	j := i
	for j < len(h.recent) && h.recent[j].Kv.ModRevision == rev {
		j++
	}
	return h.recent[i:j], true
}

// Revision is the revision up to which the hub has dispatched events.
func (h *Hub) Revision() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev
}

// Await waits until the hub has dispatched everything up to rev, asking
// etcd for progress while it waits, and then runs read under the lock
// (nil: nothing), so that read sees the hub as it was once rev was
// reached or later.
func (h *Hub) Await(ctx context.Context, rev int64, read func()) error {
	for {
		h.mu.Lock()
		reached, advanced := h.rev >= rev, h.advanced
		if reached && read != nil {
			read()
		}
		h.mu.Unlock()
		if reached {
			return nil
		}
		h.Feed.RequestProgress()
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
