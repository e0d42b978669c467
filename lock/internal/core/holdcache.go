package core

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A release must know the hold it ends: its owner, session and credential
// for the end event and the ownership check, its lock-delay, its lease.
// Read from etcd, that is a round trip before the end txn (ReadHold). The
// node that granted a hold wrote that record itself, and a holder record
// is never rewritten while its hold lasts, so the node keeps the records
// of the holds it granted (holdCache), and a release it receives for one
// of them ends the hold in one txn (releaseKnown). A node whose release
// handed a lock over wrote the new holder's record too, and read the
// entries queued behind it: it keeps both (Engine.keepHandedOver), so
// that under contention the next release hands the lock on with no read.
//
// The cache is a hint, never the truth: the end txn still requires
// ModRevision == token, so a record of a hold that ended elsewhere (an
// expiry, a revoke, a release through another node) only makes that txn
// fail, and the release then reads the hold as it would without the
// cache. It never ends a hold it does not name.

// holdCacheSize is how many holds one generation of the cache keeps; with
// two generations a node remembers between this many and twice as many of
// the holds it granted last (a few hundred bytes each, metadata left out:
// about 10 MB at most). A hold older than that is read from etcd at its
// release, as without the cache.
const holdCacheSize = 16384

// contendedFor is how long a name counts as contended once a waiter was
// seen on it: its releases then read the queue's head before their txn
// (to hand the lock over), instead of trying the one-txn release first
// and paying a failed txn for the waiter it finds.
const contendedFor = time.Second

// holdCache is the holder records of the holds this node granted, by lock
// name, and the names on which waiters were seen lately.
type holdCache struct {
	Mu sync.Mutex
	// cur and prev are two generations: a record goes into cur; when cur
	// is full it becomes prev, and the old prev is dropped.
	Cur, Prev map[string]cachedHold
	// contended is when each name last had a waiter; it is cleared
	// whenever it grows past holdCacheSize.
	contended map[string]time.Time
}

type cachedHold struct {
	token int64
	hr    store.Holder
	seat  string // the key name the hold is kept under
	// next is the queue entry that was behind the hold's own when a
	// release handed it the lock (Engine.keepHandedOver), with the ones
	// behind it; nil if there was none, or it asks for no grant.
	Next *QueueHead
}

// HoldCacheKey is the cache's key of the hold token kept under key name
// seat: the name, or for a thing with seats (internal/store/kinds.go) its key name and
// the token, so that a release, which names the thing and the token,
// finds the seat.
func HoldCacheKey(seat string, token int64) string {
	if store.HasSeats(seat) {
		return store.ThingKey(seat) + "\x00" + strconv.FormatInt(token, 10)
	}
	return seat
}

// put remembers hr as the record of the hold token kept under seat. The
// end of a hold does not use its metadata or value, which may be
// kilobytes: they are not kept.
func (c *holdCache) Put(seat string, token int64, hr store.Holder) {
	c.putBehind(seat, token, hr, nil)
}

// putBehind is put for a hold handed over by a release, with the queue
// entry that was behind it, whose record (metadata and all) the next
// handover puts.
func (c *holdCache) putBehind(seat string, token int64, hr store.Holder, next *QueueHead) {
	hr.Metadata, hr.Value = nil, nil
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.Cur == nil || len(c.Cur) >= holdCacheSize {
		c.Prev, c.Cur = c.Cur, make(map[string]cachedHold, 64)
	}
	c.Cur[HoldCacheKey(seat, token)] = cachedHold{token: token, hr: hr, seat: seat, Next: next}
}

// take returns the hold token of name (a thing's key name, or a seat's)
// and forgets it, if the node has it; contended says the thing has had a
// waiter lately.
func (c *holdCache) Take(name string, token int64) (h cachedHold, contended, ok bool) {
	key := HoldCacheKey(name, token)
	c.Mu.Lock()
	defer c.Mu.Unlock()
	h, ok = c.Cur[key]
	if ok {
		delete(c.Cur, key)
	} else if h, ok = c.Prev[key]; ok {
		delete(c.Prev, key)
	}
	if !ok || h.token != token {
		return cachedHold{}, false, false
	}
	at, seen := c.contended[store.ThingKey(name)]
	return h, seen && time.Since(at) < contendedFor, true
}

// sawWaiter notes that the thing name (or the thing of a seat) has
// waiters.
func (c *holdCache) sawWaiter(name string) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.contended == nil || len(c.contended) >= holdCacheSize {
		c.contended = make(map[string]time.Time)
	}
	c.contended[store.ThingKey(name)] = time.Now()
}

// releaseKnown releases the hold token of name, whose holder record hr
// this node granted, in one txn: it ends the hold if token still holds
// name and nobody waits for it. ended is false when the txn found either
// not so; the release then goes the way of a release without the record,
// which reads the hold and the queue's head first.
func (e *Engine) releaseKnown(ctx context.Context, name string, token int64, hr store.Holder) (ended bool, err error) {
	ev := hold.EndEvent(hr, ctx, name, token, store.EventReleased, "")
	var t store.Txn
	e.EndTxn(&t, name, token, hr, ev, nil, 0)
	// No waiter, so none to hand the lock to: a waiter that asked for a
	// grant must get it from this txn (handOverOps), and one that did not
	// takes the lock once it sees the key go.
	t.If(clientv3.Compare(clientv3.CreateRevision(e.Keys.Queue(name)), "=", 0).WithPrefix())
	var resp *clientv3.TxnResponse
	err = e.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = e.Batch.Txn(octx, t.Cmps, t.Then, nil)
		return err
	})
	if err != nil {
		return false, e.Etcd.Err(ctx, "end hold", err)
	}
	if !resp.Succeeded {
		e.Holds.sawWaiter(name) // or the hold is gone: the read that follows tells
		return false, nil
	}
	e.ended(name, store.EventReleased, hr, 0)
	return true, nil
}
