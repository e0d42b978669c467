package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// revoke is Revoke of the thing kept under key name (store.KeyName).
func (e *Engine) Revoke(ctx context.Context, name, reason string) (*hold.Lock, error) {
	for range MaxImmediateRetries {
		kv, err := e.GetLock(ctx, name)
		if err != nil {
			return nil, err
		}
		err = e.EndHold(ctx, name, kv.ModRevision, store.EventRevoked, reason)
		if err == nil {
			hr, _ := store.DecodeHolder(kv)
			return hold.ToLock(hr, name, kv.ModRevision), nil
		}
		if !errors.Is(err, hold.ErrTokenMismatch) && !errors.Is(err, hold.ErrNotHeld) { // else raced with a release: look again
			return nil, err
		}
	}
	return nil, fmt.Errorf("it changes hands too fast: %w", hold.ErrUnavailable)
}

// How a hold ends. Every end, whoever makes it, writes the same things
// (HoldEnd): the hold's end event and what becomes of its lock-delay
// guard. A release or revoke (EndHold) and a session's deletion
// (releaseSession) also delete the lock key in that txn; a release and a
// deletion, which are clean ends, hand the lock to the oldest waiter
// instead when it asks for that (handOverOps). The expiry recorder
// (recordEnd) writes the end of a hold whose key etcd deleted with its
// lease. The path of one release:
//
//	EndHold    reads the hold (ReadHold), checks the caller may end it
//	commitEnd  runs the end txn, without the handover if the waiter's lease is gone
//	EndTxn     builds it: the end (HoldEnd), the handover or the key's delete, the tally

// EndHold ends the hold of token on name by typ (released or revoked),
// with detail in its end event. A release hands the lock to the oldest
// waiter in the same txn when it can (handOverOps). A released lock's own
// lease goes to the pool for the next acquire; after a revoke it is
// revoked.
//
// The ownership check (see Caller) costs nothing more: it reads the holder
// record that EndHold reads anyway. It is race-free because a holder
// record is never rewritten while its hold lasts and the txn requires
// ModRevision == token, so the record checked is the record of the hold
// that the txn ends, or the txn fails.
func (e *Engine) EndHold(ctx context.Context, name string, token int64, typ store.EventType, detail string) error {
	if typ == store.EventReleased && token > 0 {
		if h, contended, ok := e.Holds.Take(name, token); ok {
			if !hold.MayActOn(ctx, h.hr.Credential) {
				return fmt.Errorf("the hold with token %d was acquired by another credential: %w", token, hold.ErrNotOwner)
			}
			if contended && h.Next != nil {
				return e.commitEnd(ctx, h.seat, token, h.hr, h.Next, typ, detail)
			}
			if !contended {
				if ended, err := e.releaseKnown(ctx, h.seat, token, h.hr); ended || err != nil {
					return err
				}
			}
		}
	}
	name, err := e.SeatOf(ctx, name, token)
	if err != nil {
		return err
	}
	hr, head, err := e.ReadHold(ctx, name, token, typ == store.EventReleased)
	if err != nil {
		return err
	}
	if !hold.MayActOn(ctx, hr.Credential) {
		return fmt.Errorf("the hold with token %d was acquired by another credential: %w", token, hold.ErrNotOwner)
	}
	return e.commitEnd(ctx, name, token, hr, head, typ, detail)
}

// ReadHold returns the holder record of the hold that token names and,
// when withHead is set, the oldest waiter of the lock if it asks to be
// handed the lock (nil otherwise). It reads the member's local state first
// (a serializable read: no ReadIndex round): the end txn compares
// ModRevision with token, so a stale read can never end the wrong hold,
// and a holder record is never rewritten while its hold lasts, so one read
// at ModRevision == token is that hold's. A stale head is as harmless: the
// handover requires that very entry to be the oldest (handOverCmps). Only
// when the local state does not show token holding the lock is the answer
// confirmed by a linearizable read.
func (e *Engine) ReadHold(ctx context.Context, name string, token int64, withHead bool) (store.Holder, *QueueHead, error) {
	if token <= 0 {
		return store.Holder{}, nil, hold.Invalid("token", "must be a positive fencing token")
	}
	read := func(opts ...clientv3.OpOption) (*mvccpb.KeyValue, *QueueHead, error) {
		var t store.Txn
		reads := e.HoldReads(&t, name, withHead, opts...)
		octx, done := e.Etcd.Op(ctx)
		defer done()
		resp, err := e.Cli.Txn(octx).Then(t.Then...).Commit()
		if err != nil {
			return nil, nil, e.Etcd.Err(ctx, "get lock", err)
		}
		kv, head := reads.Read(resp)
		if kv == nil {
			return nil, nil, hold.ErrNotHeld
		}
		return kv, head, nil
	}
	if !e.Etcd.MemberStopped() {
		kv, head, err := read(clientv3.WithSerializable())
		if err == nil && kv.ModRevision == token {
			hr, err := store.DecodeHolder(kv)
			return hr, head, err
		}
	}
	kv, head, err := read()
	if err != nil {
		return store.Holder{}, nil, err
	}
	if kv.ModRevision != token {
		return store.Holder{}, nil, fmt.Errorf("%w: held with token %d", hold.ErrTokenMismatch, kv.ModRevision)
	}
	hr, err := store.DecodeHolder(kv)
	return hr, head, err
}

// QueueHead is the oldest queue entry of a lock, when it asks to be
// handed the lock on release.
type QueueHead struct {
	Key   string
	Rev   int64 // its CreateRevision
	Grant store.Holder
	since time.Time // when it joined the queue
	// behind are the entries next in line, oldest first, as the read that
	// found this one found them (at most headReadAhead-1): a release that
	// hands the lock over keeps them with the new hold (keepHandedOver).
	Behind []*mvccpb.KeyValue
}

// headReadAhead is how many of a queue's oldest entries a release reads.
// etcd reads the whole queue to sort it by CreateRevision whatever the
// limit, so the entries behind the head cost little more than the head:
// kept with the hold a handover begins, they let the next release hand
// the lock over with no read at all.
const headReadAhead = 8

// queueHeadOf is the head that kvs, a queue's oldest entries in order,
// start with; nil if there is none or it asks for no grant (a waiter
// that takes the lock itself once it sees it go, or a record that does
// not decode).
func queueHeadOf(kvs []*mvccpb.KeyValue) *QueueHead {
	if len(kvs) == 0 {
		return nil
	}
	var wr hold.WaiterRecord
	if json.Unmarshal(kvs[0].Value, &wr) != nil || wr.Grant == nil {
		return nil
	}
	return &QueueHead{Key: string(kvs[0].Key), Rev: kvs[0].CreateRevision, Grant: *wr.Grant, since: wr.Since, Behind: kvs[1:]}
}

// HoldReads name the responses of the reads HoldReads adds to a txn.
type HoldReads struct {
	Lock store.Ref
	Head store.Ref // without the head, none
}

// HoldReads adds to t's Then branch the reads of a lock key and, with
// withHead, of its oldest queue entries; opts are added to each read.
func (e *Engine) HoldReads(t *store.Txn, name string, withHead bool, opts ...clientv3.OpOption) HoldReads {
	r := HoldReads{Lock: t.OnSuccess(clientv3.OpGet(e.Keys.Lock(name), opts...))}
	if withHead {
		r.Head = t.OnSuccess(clientv3.OpGet(e.Keys.Queue(name), append([]clientv3.OpOption{clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(headReadAhead)}, opts...)...))
	}
	return r
}

// read returns the lock key (nil if absent) and the queue head that
// resp's reads found.
func (r HoldReads) Read(resp *clientv3.TxnResponse) (*mvccpb.KeyValue, *QueueHead) {
	lock := r.Lock.KVs(resp)
	if len(lock) == 0 {
		return nil, nil
	}
	if !r.Head.Ok() {
		return lock[0], nil
	}
	return lock[0], queueHeadOf(r.Head.KVs(resp))
}

// commitEnd ends a hold whose holder record hr is known, and which the
// caller may end, handing a seat to head if it is not nil and
// handOverPlan finds one for it.
func (e *Engine) commitEnd(ctx context.Context, name string, token int64, hr store.Holder, head *QueueHead, typ store.EventType, detail string) error {
	ev := hold.EndEvent(hr, ctx, name, token, typ, detail)
	var (
		resp *clientv3.TxnResponse
		end  EndRefs
	)
	send := func() error {
		var t store.Txn
		end = e.EndTxn(&t, name, token, hr, ev, head, 0)
		txn := e.Batch.Txn
		if end.HandOver.Ok() {
			txn = e.Batch.TxnUrgent // the next holder waits on this commit
		}
		return e.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
			resp, err = txn(octx, t.Cmps, t.Then, nil)
			return err
		})
	}
	err := send()
	if err != nil && end.HandOver.Ok() && store.IsLeaseNotFound(err) {
		// A head's lease (its own, or its session's) ended while it
		// waited: end the hold without handing the lock over; the
		// waiters then take it as they see it go.
		head = nil
		err = send()
	}
	if err != nil {
		return e.Etcd.Err(ctx, "end hold", err)
	}
	if !resp.Succeeded {
		// Someone else ended it between our read and our write.
		if _, err := e.HeldWith(ctx, name, token); err != nil {
			return err
		}
		return hold.ErrTokenMismatch
	}
	n := end.HandedOver(resp)
	if n == 1 {
		e.keepHandedOver(name, resp.Header.Revision, ev.Time, head)
	}
	e.ended(name, typ, hr, n)
	return nil
}

// keepHandedOver puts the hold that a release of name handed to head, at
// revision rev and time at, in the hold cache, with the entry that was
// behind head: its release then ends it without reading it, handing the
// lock to that entry if it is still there.
//
// That entry is the oldest from rev on, while it exists. In the read that
// found head, at some revision R, only head was older; head's entry went
// with this handover, and every entry queued since R is younger. A
// release that hands the lock to a kept entry keeps the one behind it
// with the hold it begins, so the same holds for them in turn; one that
// finds its entry gone frees the lock instead (handOverCmps), and keeps
// nothing.
//
// Only a plain lock's holds are kept: an election's grant carries a term,
// and a seat's is in a seat of the releaser's choosing (handOverPlan).
func (e *Engine) keepHandedOver(name string, rev int64, at time.Time, head *QueueHead) {
	if kind, _ := store.ThingOf(name); kind != store.KindLock || len(head.Grant.Set) > 0 {
		return
	}
	g := hold.Begun(head.Grant, at, head.since) // as handOverOps put it
	e.Holds.putBehind(name, rev, g, queueHeadOf(head.Behind))
}

// ended counts the end by typ of a hold of name, and the holds its
// handover began, and does what is left to do with the hold's own lease once its
// key is gone.
func (e *Engine) ended(name string, typ store.EventType, hr store.Holder, handedOver int) {
	e.Metrics.RecordedOf(name, typ, 1)
	e.Metrics.RecordedOf(name, store.EventAcquired, handedOver)
	if len(hr.Set) == 0 {
		e.LeaseAfter(typ, hr)
	}
	// A lock set's member ended on its own leaves the lease to the other
	// members: it ends with them (endSet), or runs out.
}

// LeaseAfter does what is left to do with an ended hold's own lease once
// no key is under it.
func (e *Engine) LeaseAfter(typ store.EventType, hr store.Holder) {
	if hr.Session != "" {
		return
	}
	// A released lock's lease serves the next acquire with its TTL
	// (leasePool): a hold handed over is under the new holder's lease, so
	// this one holds no key any more. After a revoke or an expiry the
	// lease is ended, as the operator or etcd meant.
	if id, ok := store.ParseLeaseHex(hr.Lease); ok && typ == store.EventReleased && e.Leases.put(id, hr.TTL) {
		return
	}
	e.RevokeLease(hr.Lease)
}

// EndRefs name the responses of an end that EndTxn added to a txn.
type EndRefs struct {
	// HandOver is the nested txn that hands the lock to the queue's
	// head, if any; grants is how many holds that begins (a lock set's
	// head: one per lock of the set).
	HandOver store.Ref
	grants   int
}

// HandedOver is how many holds resp, the end txn's response, shows begun
// by handing the lock to the queue's head: none, one, or a lock set's.
func (r EndRefs) HandedOver(resp *clientv3.TxnResponse) int {
	if r.HandOver.Ok() && r.HandOver.Nested(resp).Succeeded {
		return r.grants
	}
	return 0
}

// EndTxn adds to t the end of token's hold, ended by ev: it records the
// end (HoldEnd), deletes the lock key or hands a seat to head
// (handOverPlan), and, with a tally shard (Keys.TallyShard) of 0 or more,
// counts the release in the session's tally. Its compare is the hold's
// (ModRevision == token); its ops go in the Then branch, at most five:
// the event, the delete (or the handover), the guard, an election's value
// and the tally.
func (e *Engine) EndTxn(t *store.Txn, name string, token int64, hr store.Holder, ev store.Event, head *QueueHead, tally int) EndRefs {
	lkey := e.Keys.Lock(name)
	event, guard := e.HoldEnd(name, token, hr, ev)
	t.If(clientv3.Compare(clientv3.ModRevision(lkey), "=", token))
	// The end event comes first, so a watcher of the trail sees the hold
	// end before the next one begins in the same revision.
	for _, op := range event {
		t.OnSuccess(op)
	}
	var r EndRefs
	if w := hr.WindowEnd(); w.After(ev.Time) {
		// Inside the hold's at-least window no grant may begin: the
		// guard (HoldEnd) keeps the lock free until w, and the waiters
		// take it then.
		head = nil
	}
	if seat, ok := handOverPlan(name, head); ok {
		handOver := store.Txn{Cmps: e.handOverCmps(name, token, hr, head), Then: e.handOverOps(name, hr, ev.Time, head, seat),
			Else: append([]clientv3.Op{clientv3.OpDelete(lkey)}, guard...)}
		r.grants = max(len(head.Grant.Set), 1)
		r.HandOver = t.OnSuccess(handOver.Op())
	} else {
		t.OnSuccess(clientv3.OpDelete(lkey))
		for _, op := range guard {
			t.OnSuccess(op)
		}
	}
	if kind, _ := store.ThingOf(name); kind == store.KindElection {
		// A proclaimed value is the hold's (lock.Engine.Proclaim): it goes
		// with it, whoever leads next.
		t.OnSuccess(clientv3.OpDelete(e.Keys.Value(name)))
	}
	if id, ok := store.ParseLeaseHex(hr.Session); ok && tally >= 0 && !hr.NoTally {
		// One more release in the session's tally, if it keeps one and
		// the acquire counted this hold (store.Holder.NoTally): the
		// node that acquired into it may have MaxLocksPerSession on while
		// this one has it off, and a release it does not count would make
		// that node refuse acquires the session has room for. A session
		// without a tally costs this release a compare and no write. The
		// tally lives under the session's lease, so where it exists the
		// lease does too, and the put cannot fail on a lease.
		t.OnSuccess(clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.Keys.SessionTally(hr.Session, "acquired")), ">", 0)},
			[]clientv3.Op{clientv3.OpPut(e.Keys.TallyShard(hr.Session, "released", tally), "", clientv3.WithLease(id))},
			nil))
	}
	return r
}

// HoldEnd is what every end of token's hold hr writes, whoever ends it:
// its end event ev and, if the hold has a guard (a lock-delay or an
// at-least window), what becomes of it: stamped to keep the lock free
// until the window's end or, for an end other than a clean release, the
// delay from ev.Time, whichever is later; deleted if that is not after
// ev.Time. The guard is the hold's own while its
// ModRevision is token (it is put with the hold, and changes only after
// the hold ended): a guard already stamped, by an acquire that found the
// lease expired, or already replaced by the next hold's, is left alone.
//
// In storage format 2 the event goes over the hold's acquired record, with
// the acquired event it replaces (store.EndRecord); in format 1 beside it. A
// derived hold (store.Holder.Derived) has no acquired record: its end
// writes no event when the trail derives it from the lock key's delete
// (derivable), and otherwise writes it beside, as in format 1.
func (e *Engine) HoldEnd(name string, token int64, hr store.Holder, ev store.Event) (event, guard []clientv3.Op) {
	switch {
	case hr.Derived && derivable(hr, ev):
	case e.Format >= 2 && !hr.Derived:
		began := hr.BegunEvent(name)
		event = []clientv3.Op{clientv3.OpPut(e.Keys.Acquired(name, hr.Hold), store.MustJSON(store.EndRecord{Event: ev, Began: &began}))}
	default:
		event = []clientv3.Op{clientv3.OpPut(e.Keys.End(name, hr.Hold), store.MustJSON(ev))}
	}
	if !hr.Guarded() {
		return event, nil
	}
	gkey := e.Keys.Delay(name)
	op := clientv3.OpDelete(gkey)
	if g := hold.GuardOf(hr).Ended(ev.Time, ev.Type); g.Binds(ev.Time) {
		op = clientv3.OpPut(gkey, store.MustJSON(g))
	}
	return event, []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(gkey), "=", token)}, []clientv3.Op{op}, nil)}
}

// derivable reports whether ev, an end of the hold hr, is the one the
// trail derives from the lock key's delete (trail/derive.go): a release or a
// resignation by the credential that acquired the hold, with nothing to
// say of it.
func derivable(hr store.Holder, ev store.Event) bool {
	return (ev.Type == store.EventReleased || ev.Type == store.EventResigned) && ev.Detail == "" && ev.Credential == hr.Credential
}

// RevokeLease ends a lock's own lease after its key is gone; failing only
// leaves an empty lease that expires by itself.
func (e *Engine) RevokeLease(hex string) {
	id, ok := store.ParseLeaseHex(hex)
	if !ok {
		return
	}
	ctx, done := e.Etcd.CleanupCtx()
	defer done()
	err := e.Etcd.RetryCleanup(ctx, func(ctx context.Context) error {
		_, err := e.Cli.Revoke(ctx, id)
		return err
	})
	if err != nil && !store.IsLeaseNotFound(err) {
		e.Log.Warn("revoke lease of ended hold", "lease", hex, "err", err)
	}
}
