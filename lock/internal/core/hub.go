package core

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/watchhub"
)

// waiterHub wakes waiters: each waits for a change of one key (or of
// several, a lock set's), on the lock keys, queue entries, lock-delay
// guards and session keys that one etcd watch of the engine's follows,
// fanned out in process (internal/watchhub). A waiter whose backlog is
// full is told to read etcd again (keyWatch.take's missed).
type waiterHub struct {
	*watchhub.Hub
	Keys map[string]map[*keyWatch]struct{}
	kv   []byte // the prefix of the keys of data (store.Keys.KVs)
}

// NewWaiterHub starts the waiters' hub from revision from. Waiters wait
// on lock keys, queue entries, lock-delay guards, session keys and keys
// of data: delay/ to sessions/ in key order, which leaves out the audit
// trail's writes (audit/ before, trail/ after).
func (e *Engine) NewWaiterHub(from int64) *waiterHub {
	h := &waiterHub{Keys: map[string]map[*keyWatch]struct{}{}, kv: []byte(e.Keys.KVs())}
	cfg := e.Feeds.Config("waiters", e.Keys.Delay(""), from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(e.Keys.Sessions())))
	h.Hub = watchhub.New(cfg, h.dispatch, h.compacted)
	h.Trim = h.trim
	return h
}

// trim is the event the hub keeps of ev: a key of data's without its
// value. Its waiters read the key again (lock/internal/kv's Wait), and
// the hub keeps its latest events, which values of up to
// MaxKeyValueBytes each would make megabytes.
func (h *waiterHub) trim(ev *clientv3.Event) *clientv3.Event {
	if !bytes.HasPrefix(ev.Kv.Key, h.kv) {
		return ev
	}
	k := ev.Kv
	kv := &mvccpb.KeyValue{Key: k.Key, CreateRevision: k.CreateRevision, ModRevision: k.ModRevision, Version: k.Version, Lease: k.Lease}
	return &clientv3.Event{Type: ev.Type, Kv: kv}
}

// dispatch hands a response's events to the waiters of their keys.
func (h *waiterHub) dispatch(wr clientv3.WatchResponse) {
	for _, ev := range wr.Events {
		key := string(ev.Kv.Key)
		for kw := range h.Keys[key] {
			kw.push(ev)
		}
		if g, ok := seatGroup(key); ok {
			for kw := range h.Keys[g] {
				kw.push(ev)
			}
		}
	}
}

// compacted tells every waiter it may have missed events: each reads
// etcd again.
func (h *waiterHub) compacted(int64) {
	for _, set := range h.Keys {
		for kw := range set {
			kw.overflow()
		}
	}
}

// keyWatchBacklog bounds the events a waiter's registration holds. A waiter
// takes them as soon as it is woken; more than a few mean it should read
// the key instead.
const keyWatchBacklog = 64

// keyWatch is a waiter's registration for the changes of one key.
type keyWatch struct {
	h     *waiterHub
	keys  []string
	after int64 // events up to this revision are already known to the waiter
	// c is signalled when events arrive; take them with take.
	c chan struct{}

	mu     sync.Mutex
	evs    []*clientv3.Event
	missed bool
}

// WatchKey registers for the changes of key after revision after, the
// revision at which the caller read what it waits on; a key that ends in
// the seat separator (store.SeatsOf) registers for every seat of its thing.
// Changes already dispatched after that revision are handed to the
// registration at once, from recent. missed reports that recent no longer reaches back to
// after: the caller must then read the key with a linearizable read to
// learn of a change in between.
func (h *waiterHub) watchKey(key string, after int64) (kw *keyWatch, missed bool) {
	return h.watchKeys([]string{key}, after)
}

// putAt returns the put of key at revision rev, nil if rev did not put
// it. known is false when the hub cannot tell: it has not dispatched rev
// yet, or no longer holds all of rev's events. A revision is one txn, and
// etcd sends a txn's events in one watch response, so once the hub has
// dispatched one event of rev it holds them all.
func (h *waiterHub) putAt(key string, rev int64) (kv *mvccpb.KeyValue, known bool) {
	h.Lock()
	defer h.Unlock()
	evs, known := h.At(rev)
	for _, ev := range evs {
		if ev.Type == mvccpb.PUT && string(ev.Kv.Key) == key {
			return ev.Kv, true
		}
	}
	return nil, known
}

// watchKeys is WatchKey for changes of any of keys, in one registration:
// what a lock set waits on.
func (h *waiterHub) watchKeys(keys []string, after int64) (kw *keyWatch, missed bool) {
	kw = &keyWatch{h: h, keys: keys, after: after, c: make(chan struct{}, 1)}
	h.Lock()
	defer h.Unlock()
	for _, key := range keys {
		set := h.Keys[key]
		if set == nil {
			set = map[*keyWatch]struct{}{}
			h.Keys[key] = set
		}
		set[kw] = struct{}{}
	}
	if h.Rev() <= after {
		return kw, false
	}
	recent, ok := h.Recent(after)
	if !ok {
		return kw, true
	}
	for _, ev := range recent {
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
	h.Lock()
	defer h.Unlock()
	for _, key := range kw.keys {
		if set := h.Keys[key]; set != nil {
			delete(set, kw)
			if len(set) == 0 {
				delete(h.Keys, key)
			}
		}
	}
}

// KeyWatch is a registration with the waiter hub for the changes of one
// key, for the engine's packages beside the core (lock/internal/kv's
// blocking reads). Close it when done.
type KeyWatch struct{ kw *keyWatch }

// WatchKey registers for the changes of key after revision after, as
// watchKey does: missed means the hub no longer holds the events since
// after, and the caller must read the key again.
func (e *Engine) WatchKey(key string, after int64) (w KeyWatch, missed bool) {
	kw, missed := e.Waits.watchKey(key, after)
	return KeyWatch{kw}, missed
}

// C is signalled when events arrive; Take returns them.
func (w KeyWatch) C() <-chan struct{} { return w.kw.c }

// Take returns the events that arrived since the last Take. missed means
// some were dropped: read the key.
func (w KeyWatch) Take() (evs []*clientv3.Event, missed bool) { return w.kw.take() }

// Close ends the registration.
func (w KeyWatch) Close() { w.kw.close() }
