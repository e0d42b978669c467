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

// outcome is what an acquire transaction's else branch tells.
type outcome int

const (
	Won        outcome = iota
	RetryNow           // something changed under us; try again at once
	HeldBy             // someone holds it: wait for the key to go
	Behind             // an earlier waiter is queued: wait for it to go
	Delayed            // lock-delay: wait until RetryAt
	SameHolder         // our session holds it already
	NoSession          // the session is gone
	Dequeued           // our queue entry vanished (waiter lease lost)
	unstamped          // an expired hold's lock-delay has no end yet: stamp it (stampLockDelay)
	Mismatched         // a semaphore's permits are held under another limit
)

type AttemptResult struct {
	Outcome  outcome
	Lock     *hold.Lock
	WatchKey string // with HeldBy/behind/delayed
	WatchRev int64  // watch from here on
	// WatchCreated is the CreateRevision of the queue entry at WatchKey,
	// with behind: queue keys are reused (waiterLease.slot), and a key
	// created anew is another waiter's entry, not the one we wait for.
	WatchCreated int64
	RetryAt      time.Time
	DelayCause   store.EventType // with delayed: how the hold ended
	// guard is the lock-delay guard read, with unstamped; guardRev is
	// its ModRevision.
	guard    hold.DelayRecord
	guardRev int64
	Holder   *hold.Lock
	// EnqueuedRev is the revision at which a failed direct attempt made
	// with a.enqueue put our queue entry (its CreateRevision); ahead is
	// the newest entry queued before it, "" if none.
	EnqueuedRev int64
	ahead       string
	aheadRev    int64 // ahead's CreateRevision
	// QueuedBefore is how many entries were queued before ours, by the
	// same txn that put ours.
	QueuedBefore int64
	// placeRev is the CreateRevision of the session's place that a
	// direct attempt with a.enqueue found in the queue before it put the
	// entry again (keeping that revision), 0 if there was none; place is
	// the entry's value then.
	placeRev int64
	place    []byte
	// limit is the semaphore's stored limit, with mismatched; asked the
	// limit the acquire asked for.
	Limit, Asked int
	// keys are what a lock set waits on, with HeldBy, behind and delayed
	// (WatchKey is the first); holders the members held by others.
	Keys    []string
	Holders []*hold.Lock
}

// AcquireTxn is one acquire transaction, built by its kind (HoldKind.txn),
// with the responses its readers name. An op the txn does not carry has
// the zero Ref.
type AcquireTxn struct {
	store.Txn
	// won is the Then branch: the lock was granted.
	Won struct {
		Acquired, Released store.Ref // the session's tallies (MaxLocksPerSession)
		Session            store.Ref // the session record
	}
	// lost is the Else branch.
	Lost struct {
		Lock, Guard store.Ref
		Queued      store.Ref // count of the lock's queue
		Blocking    store.Ref // count of the entries we wait behind: the queue's, or a reader's writers'
		Ahead       store.Ref // with enqueue: the newest entry queued before ours
		place       store.Ref // with enqueue of a session's place: the entry before the put
		Entry       store.Ref // queued attempt: our queue entry
		Pred        store.Ref // queued attempt: the entry just ahead of ours
		Session     store.Ref // the session record
		Term        store.Ref // an election's term key
		Limit       store.Ref // a semaphore's stored limit
		Seats       store.Ref // the seats the acquire picks from, keys only
		Blocker     store.Ref // a read/write lock's hold in the way: the writer's, or (a writer's acquire) a reader's
		// Guards are the guards of the seats beside ours that may keep a
		// thing with seats: those of the seats the acquire picks from, or
		// a read/write lock's other mode's (lock/seats.go).
		Guards store.Ref
	}
	// members are a lock set's, one per member (setKind.txn).
	Members []MemberRefs
}

// attempt runs one acquire transaction. queueKey/queueRev identify our
// queue entry when waiting; "" means a direct attempt, which must not jump
// ahead of queued waiters.
func (a *Acquirer) attempt(ctx context.Context, queueKey string, queueRev int64) (AttemptResult, error) {
	e := a.E
	if err := a.EnsureLease(ctx); err != nil {
		return AttemptResult{}, err
	}
	if err := a.Kind.Prepare(ctx); err != nil {
		return AttemptResult{}, err
	}
	now := store.NowUTC()
	rec := a.Holder(now)
	var resp *clientv3.TxnResponse
	t := a.Kind.Txn(queueKey, queueRev, rec, now)
	// The txn is not bound to the caller's context: if the caller leaves
	// mid-flight we still learn the outcome, and undo a grant.
	err := e.Etcd.RetryNotApplied(context.WithoutCancel(ctx), func(octx context.Context) (err error) {
		resp, err = e.Batch.Txn(octx, t.Cmps, t.Then, t.Else)
		return err
	})
	if err != nil {
		return a.attemptFailed(ctx, queueKey, err)
	}
	if resp.Succeeded {
		return a.won(ctx, resp, &t, rec)
	}
	return a.Kind.Analyse(ctx, resp, &t, queueKey)
}

// holdTxn builds the acquire txn of one hold (LockKind.txn): the hold
// rec, begun at now, with its acquired event, and what the kind adds. queueKey/queueRev are as for attempt.
// The Then branch grants the lock; the Else branch reads what stood in
// the way and, for a direct attempt with a.enqueue, joins the queue.
//
// Two entries of one queue never share a CreateRevision: a txn that joins
// the queue has a Then branch that writes a key every grant of the thing
// writes (its lock key; a thing with seats, its seats key), and the
// batcher never puts two writes of one key into one txn (joinQueue's txn
// is one of its own). So the queue's order is total, as "the oldest"
// (handOverCmps, NoneAheadCmp) needs.
func (a *Acquirer) holdTxn(queueKey string, queueRev int64, rec store.Holder, now time.Time) AcquireTxn {
	e, name := a.E, a.Req.Name
	lkey, gkey, qpfx := e.Keys.Lock(a.Seat), e.Keys.Delay(a.Seat), e.Keys.Queue(name)
	var t AcquireTxn
	t.If(a.acquireCmps(queueKey, queueRev)...)
	for _, op := range a.grantOps(queueKey, rec) {
		t.OnSuccess(op)
	}
	if a.Session != 0 && e.Cfg.MaxLocksPerSession > 0 {
		// Count the hold in the session's tally, then read the tallies
		// (ours included): checked after the commit (see
		// undoOverSessionCap), so the cap costs no round trip. Without
		// the cap no tally is kept, and a session's acquire writes no
		// key but its lock and its event (BenchmarkEngine_CycleSession
		// measures what that saves).
		t.OnSuccess(clientv3.OpPut(e.Keys.SessionTally(a.Req.Session, "acquired"), "", clientv3.WithLease(a.Session)))
		a.TallyReads(&t)
	}
	if a.Session != 0 {
		t.Won.Session = t.OnSuccess(clientv3.OpGet(e.Keys.Session(a.Req.Session)))
	}

	lost := &t.Lost
	lost.Lock = t.OnFailure(clientv3.OpGet(lkey))
	lost.Guard = t.OnFailure(clientv3.OpGet(gkey))
	lost.Queued = t.OnFailure(clientv3.OpGet(qpfx, clientv3.WithPrefix(), clientv3.WithCountOnly()))
	lost.Blocking = lost.Queued
	ahead := a.Kind.AheadPrefix()
	if ahead != qpfx {
		lost.Blocking = t.OnFailure(clientv3.OpGet(ahead, clientv3.WithPrefix(), clientv3.WithCountOnly()))
	}
	if q := a.Enqueue; queueKey == "" && q != nil {
		// Ops run in order: the read sees the entries before ours.
		lost.Ahead = t.OnFailure(clientv3.OpGet(ahead, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
			clientv3.WithLimit(1), clientv3.WithKeysOnly()))
		if q.place {
			lost.place = t.OnFailure(clientv3.OpGet(q.Key))
		}
		t.OnFailure(clientv3.OpPut(q.Key, a.EntryValue(now), clientv3.WithLease(q.Lease)))
	}
	if queueKey != "" {
		lost.Entry = t.OnFailure(clientv3.OpGet(queueKey))
		lost.Pred = t.OnFailure(clientv3.OpGet(ahead, clientv3.WithPrefix(), clientv3.WithMaxCreateRev(queueRev-1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()))
	}
	if a.Session != 0 {
		lost.Session = t.OnFailure(clientv3.OpGet(e.Keys.Session(a.Req.Session)))
	}
	a.Kind.Reads(&t)
	return t
}

// grantOps begin the hold rec, for an acquire whose queue entry is
// queueKey ("" for none): its holder record, its acquired event, its
// lease's marker (trail/derive.go), its lock-delay guard, its entry gone,
// and what its kind adds (an election's term, a thing with seats' record).
func (a *Acquirer) grantOps(queueKey string, rec store.Holder) []clientv3.Op {
	e := a.E
	gkey := e.Keys.Delay(a.Seat)
	leaseID, _ := store.ParseLeaseHex(rec.Lease)
	ops := []clientv3.Op{clientv3.OpPut(e.Keys.Lock(a.Seat), store.MustJSON(rec), clientv3.WithLease(leaseID))}
	if !rec.Derived {
		ops = append(ops, clientv3.OpPut(e.Keys.Acquired(a.Seat, a.Hold), store.MustJSON(rec.BegunEvent(a.Seat))))
	}
	if a.Session == 0 {
		ops = append(ops, e.LeaseMarkOp(leaseID))
	}
	switch {
	case rec.Guarded():
		ops = append(ops, clientv3.OpPut(gkey, store.MustJSON(hold.GuardOf(rec))))
	case a.guardRev != 0:
		ops = append(ops, clientv3.OpDelete(gkey))
	}
	if queueKey != "" {
		ops = append(ops, clientv3.OpDelete(queueKey))
	}
	return append(ops, a.Kind.GrantOps(rec)...)
}

// acquireCmps hold when the acquire may take the lock: it is free, no
// waiter is ahead of us, the lock-delay guard is as we expect, and our
// session exists.
func (a *Acquirer) acquireCmps(queueKey string, queueRev int64) []clientv3.Cmp {
	e := a.E
	lkey, gkey, qpfx := e.Keys.Lock(a.Seat), e.Keys.Delay(a.Seat), a.Kind.AheadPrefix()
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(lkey), "=", 0)}
	if queueKey == "" {
		// Nobody queued (for a reader: no writer): a direct acquire
		// never overtakes a waiter.
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(qpfx), "=", 0).WithPrefix())
	} else {
		// Our entry exists and no entry (for a reader: no writer's) is
		// older than ours.
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(queueKey), "=", queueRev), a.Kind.NoneAheadCmp(qpfx, queueRev))
	}
	if a.guardRev == 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(gkey), "=", 0))
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(gkey), "=", a.guardRev))
	}
	if a.Session != 0 {
		skey := e.Keys.Session(a.Req.Session)
		if a.SessionRev != 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(skey), "=", a.SessionRev))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(skey), ">", 0))
		}
	}
	return append(cmps, a.Kind.Cmps()...)
}

// attemptFailed is attempt's answer when its txn failed.
func (a *Acquirer) attemptFailed(ctx context.Context, queueKey string, err error) (AttemptResult, error) {
	if store.IsLeaseNotFound(err) && queueKey == "" && a.Enqueue != nil {
		// The session's lease, our own or the node's waiter lease: the
		// queued attempt that follows tells which (NoSession, or our
		// entry missing: dequeued).
		if a.Session == 0 {
			a.Lease = 0
		}
		return AttemptResult{Outcome: RetryNow}, nil
	}
	if store.IsLeaseNotFound(err) {
		if a.Session != 0 {
			return AttemptResult{Outcome: NoSession}, nil
		}
		a.Lease = 0 // our own lease vanished; grant anew next time
		return AttemptResult{Outcome: RetryNow}, nil
	}
	if store.TooLarge(err) {
		a.entry = "" // refused whole, before it applied: it put no entry
		return AttemptResult{}, a.E.Etcd.Err(context.WithoutCancel(ctx), "acquire txn", err)
	}
	if !store.NotApplied(err) {
		// A timeout or a term's end can come after the commit: the
		// lock may be ours under our own lease, and nobody will
		// learn the token. DropLease revokes the lease, which ends
		// such a hold at once.
		a.unsure = true
		a.entryUnsure = a.entryUnsure || (queueKey == "" && a.Enqueue != nil)
	}
	return AttemptResult{}, a.E.Etcd.Err(context.WithoutCancel(ctx), "acquire txn", err)
}

// won is attempt's answer when its txn granted the lock.
func (a *Acquirer) won(ctx context.Context, resp *clientv3.TxnResponse, t *AcquireTxn, rec store.Holder) (AttemptResult, error) {
	e := a.E
	a.used = true
	l := hold.ToLock(rec, a.Seat, resp.Header.Revision)
	e.Metrics.RecordedOf(a.Seat, store.EventAcquired, len(a.Kind.LockNames())) // a set's: one per lock
	if t.Won.Acquired.Ok() && heldInSession(resp, t) > int64(e.Cfg.MaxLocksPerSession) {
		return AttemptResult{}, a.undoOverSessionCap(l.Token, rec)
	}
	a.Kind.Keep(l, rec)
	if a.Session != 0 {
		if kvs := t.Won.Session.KVs(resp); len(kvs) > 0 {
			var s hold.SessionRecord
			if json.Unmarshal(kvs[0].Value, &s) == nil {
				l.TTL = time.Duration(s.TTL) * time.Second
			}
		}
		e.FillLease(ctx, l, a.Session)
	} else {
		l.ExpiresAt = a.expiresAt()
	}
	return AttemptResult{Outcome: Won, Lock: l}, nil
}

// expiresAt is when the own lease runs out at the latest: it was granted,
// or refreshed, at grantedAt.
func (a *Acquirer) expiresAt() time.Time {
	return ExpiryAt(a.grantedAt, time.Duration(a.LeaseTTL)*time.Second)
}

// SeenBefore is the revision up to which a failed attempt's else branch
// saw every change: the one before its txn's. The attempt may have gone
// to etcd in a batch (internal/txnbatch), and the reads of a batch member
// see the writes of the members before it, not of those after, which
// share its revision: a release batched after a waiter's attempt deletes,
// at the attempt's revision, the key the attempt read as held. So a wait
// that starts from an attempt hears that revision's changes too; one it
// saw already wakes it for nothing, and it looks again.
func SeenBefore(resp *clientv3.TxnResponse) int64 { return resp.Header.Revision - 1 }

// analyse reads a failed acquire transaction's else branch.
func (a *Acquirer) AnalyseHold(ctx context.Context, resp *clientv3.TxnResponse, t *AcquireTxn, queueKey string) (AttemptResult, error) {
	r, err := a.holdOutcome(ctx, resp, t, queueKey)
	if err == nil && r.Outcome == unstamped {
		r, err = a.stampLockDelay(ctx, r)
	}
	if queueKey == "" && a.Enqueue != nil {
		r.EnqueuedRev = resp.Header.Revision
		r.QueuedBefore = t.Lost.Queued.Count(resp)
		if ahead := t.Lost.Ahead.KVs(resp); len(ahead) > 0 {
			r.ahead, r.aheadRev = string(ahead[0].Key), ahead[0].CreateRevision
		}
		if kvs := t.Lost.place.KVs(resp); len(kvs) > 0 {
			r.placeRev, r.place = kvs[0].CreateRevision, kvs[0].Value
		}
	}
	return r, err
}

// holdOutcome is what a failed attempt of one hold found in its way.
func (a *Acquirer) holdOutcome(ctx context.Context, resp *clientv3.TxnResponse, t *AcquireTxn, queueKey string) (AttemptResult, error) {
	e, name, lost := a.E, a.Req.Name, &t.Lost
	if a.Session != 0 && e.SessionGone(a.Req.Session, a.SessionRev, lost.Session.KVs(resp)) {
		return AttemptResult{Outcome: NoSession}, nil
	}
	lockKVs := lost.Lock.KVs(resp)
	if len(lockKVs) > 0 {
		if l, ok := a.Granted(ctx, lockKVs[0]); ok {
			return AttemptResult{Outcome: Won, Lock: l}, nil
		}
	}
	if queueKey != "" && len(lost.Entry.KVs(resp)) == 0 {
		return a.Kind.EntryGone(ctx)
	}
	r, settled, blocker := a.Kind.InWay(resp, t, queueKey, lockKVs)
	if settled {
		return r, nil
	}
	lockKVs = blocker
	behindOf := func(holder *hold.Lock) (AttemptResult, bool) { return BehindQueued(resp, t, queueKey, holder) }
	if len(lockKVs) > 0 {
		kv := lockKVs[0]
		hr, err := store.DecodeHolder(kv)
		if err != nil {
			return AttemptResult{}, err
		}
		holder := hold.ToLock(hr, name, kv.ModRevision)
		a.LastHolder, a.LastHolderLease = holder, hr.Lease
		if a.Session != 0 && hr.Session == a.Req.Session && a.Kind.Repeatable() && string(kv.Key) == e.Keys.Lock(a.Seat) {
			e.FillLease(ctx, holder, a.Session)
			return AttemptResult{Outcome: SameHolder, Lock: holder}, nil
		}
		if r, ok := behindOf(holder); ok {
			return r, nil
		}
		return AttemptResult{Outcome: HeldBy, WatchKey: a.Kind.HeadKey(), WatchRev: SeenBefore(resp), Holder: holder}, nil
	}
	a.LastHolder = nil
	if r, ok, err := a.analyseGuard(resp, lost.Guard.KVs(resp)); ok || err != nil {
		return r, err
	}
	if r, ok := behindOf(nil); ok {
		return r, nil
	}
	if queueKey == "" && lost.Blocking.Count(resp) > 0 {
		return AttemptResult{Outcome: Behind}, nil
	}
	return AttemptResult{Outcome: RetryNow}, nil
}

// BehindQueued is the outcome of a failed queued attempt (queueKey set)
// that a waiter is ahead of, with holder the hold in the way (nil if
// none); ok is false for a direct attempt, or with none ahead.
func BehindQueued(resp *clientv3.TxnResponse, t *AcquireTxn, queueKey string, holder *hold.Lock) (r AttemptResult, ok bool) {
	if queueKey == "" {
		return AttemptResult{}, false
	}
	pred := t.Lost.Pred.KVs(resp)
	if len(pred) == 0 {
		return AttemptResult{}, false
	}
	return AttemptResult{Outcome: Behind, WatchKey: string(pred[0].Key), WatchRev: SeenBefore(resp), WatchCreated: pred[0].CreateRevision, Holder: holder}, true
}

// BehindAny is the outcome of a failed attempt that somebody waits ahead
// of: for a queued one, BehindQueued's; for a direct one, anybody queued
// (it joins the line).
func BehindAny(resp *clientv3.TxnResponse, t *AcquireTxn, queueKey string) (r AttemptResult, ok bool) {
	if queueKey == "" {
		return AttemptResult{Outcome: Behind}, t.Lost.Blocking.Count(resp) > 0
	}
	return BehindQueued(resp, t, queueKey, nil)
}

// analyseGuard reads the lock-delay guard of a free lock, from a failed
// acquire txn. ok is false when the guard is no reason not to take the
// lock.
func (a *Acquirer) analyseGuard(resp *clientv3.TxnResponse, guardKVs []*mvccpb.KeyValue) (r AttemptResult, ok bool, err error) {
	if len(guardKVs) == 0 {
		if a.guardRev != 0 {
			a.guardRev = 0
			return AttemptResult{Outcome: RetryNow}, true, nil
		}
		return AttemptResult{}, false, nil
	}
	g := guardKVs[0]
	var dr hold.DelayRecord
	if err := json.Unmarshal(g.Value, &dr); err != nil {
		return AttemptResult{}, false, fmt.Errorf("decode lock-delay guard: %w", err)
	}
	switch {
	case dr.Until == nil:
		// The hold ended without a release, and nobody stamped the
		// delay yet: the lease expired moments ago.
		return AttemptResult{Outcome: unstamped, guard: dr, guardRev: g.ModRevision}, true, nil
	case time.Now().Before(*dr.Until):
		return AttemptResult{Outcome: Delayed, RetryAt: *dr.Until, DelayCause: dr.Cause, WatchKey: a.E.Keys.Delay(a.Seat), WatchRev: SeenBefore(resp)}, true, nil
	case a.guardRev != g.ModRevision:
		a.guardRev = g.ModRevision // a spent guard: replace it next time
		return AttemptResult{Outcome: RetryNow}, true, nil
	}
	return AttemptResult{}, false, nil
}

// stampLockDelay starts the lock-delay of a hold that expired unrecorded
// (r is unstamped): from now, as the recorder would. It answers delayed,
// or RetryNow if the guard changed meanwhile.
func (a *Acquirer) stampLockDelay(ctx context.Context, r AttemptResult) (AttemptResult, error) {
	e, gkey := a.E, a.E.Keys.Delay(a.Seat)
	stamped := r.guard.Ended(time.Now(), store.EventExpired)
	octx, done := e.Etcd.Op(ctx)
	tr, err := e.Cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(gkey), "=", r.guardRev)).
		Then(clientv3.OpPut(gkey, store.MustJSON(stamped))).Commit()
	done()
	if err != nil {
		return AttemptResult{}, e.Etcd.Err(ctx, "stamp lock-delay", err)
	}
	if !tr.Succeeded {
		return AttemptResult{Outcome: RetryNow}, nil
	}
	return AttemptResult{Outcome: Delayed, RetryAt: *stamped.Until, DelayCause: store.EventExpired, WatchKey: gkey, WatchRev: tr.Header.Revision}, nil
}

// TallyReads adds to t's Then branch the reads of the session's two
// tallies, each a range over its shards (Keys.TallyShard), keys only.
func (a *Acquirer) TallyReads(t *AcquireTxn) {
	e, id := a.E, a.Req.Session
	t.Won.Acquired = t.OnSuccess(clientv3.OpGet(e.Keys.SessionTally(id, "acquired"), clientv3.WithPrefix(), clientv3.WithKeysOnly()))
	t.Won.Released = t.OnSuccess(clientv3.OpGet(e.Keys.SessionTally(id, "released"), clientv3.WithPrefix(), clientv3.WithKeysOnly()))
}

// heldInSession reads the session's tallies from an acquire's Then branch:
// the locks the session holds, the new ones included.
func heldInSession(resp *clientv3.TxnResponse, t *AcquireTxn) int64 {
	versions := func(r store.Ref) (n int64) {
		for _, kv := range r.KVs(resp) {
			n += kv.Version
		}
		return n
	}
	return versions(t.Won.Acquired) - versions(t.Won.Released)
}

// undoOverSessionCap ends a hold that took its session past
// MaxLocksPerSession, and returns the error for the caller. The check
// comes after the commit because a txn cannot compare a count: the grant
// and the read of the session's tallies (its own hold counted) are one
// txn, and every acquire that counted more than the cap ends its own hold. So
// once concurrent acquires settle the session holds at most the cap; in
// between it may hold one more per acquire in flight, and a race near the
// cap may refuse an acquire that would have fit. The token was never
// handed out; the audit trail shows the hold acquired and at once
// released, with the reason.
func (a *Acquirer) undoOverSessionCap(token int64, rec store.Holder) error {
	e, limit := a.E, a.E.Cfg.MaxLocksPerSession
	reason := fmt.Sprintf("session %s already holds the maximum of %d locks; release some first", a.Req.Session, limit)
	ctx, done := e.Etcd.CleanupCtx()
	defer done()
	err := a.endOwn(ctx, token, &rec, "acquire refused: "+reason)
	if err != nil && !errors.Is(err, hold.ErrTokenMismatch) && !errors.Is(err, hold.ErrNotHeld) {
		// The session keeps a lock whose token nobody learnt: it shows in
		// the session's locks and ends with it. Say the outcome is unknown.
		e.Log.Warn("end hold over the session's lock limit", "lock", a.Req.Name, "token", token, "session", a.Req.Session, "err", err)
		return fmt.Errorf("undo acquire over the session's lock limit: %w", err)
	}
	return &hold.LimitError{Err: hold.ErrTooManyLocks, Limit: limit, Reason: reason}
}

// MemberRefs name one member's responses in a lock set's acquire txn
// (see AcquireTxn); an op the txn does not carry has the zero Ref.
type MemberRefs struct {
	Lock, Guard store.Ref
	Queued      store.Ref // direct attempt: count of the member's queue
	Ahead       store.Ref // direct attempt with enqueue: the newest entry before ours
	Entry, Pred store.Ref // queued attempt: our entry, and the one just ahead of it
}
