package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// outcome is what an acquire transaction's else branch tells.
type outcome int

const (
	won        outcome = iota
	retryNow           // something changed under us; try again at once
	heldBy             // someone holds it: wait for the key to go
	behind             // an earlier waiter is queued: wait for it to go
	delayed            // lock-delay: wait until retryAt
	sameHolder         // our session holds it already
	noSession          // the session is gone
	dequeued           // our queue entry vanished (waiter lease lost)
)

type attemptResult struct {
	outcome  outcome
	lock     *Lock
	watchKey string // with heldBy/behind/delayed
	watchRev int64  // watch from here on
	// watchCreated is the CreateRevision of the queue entry at watchKey,
	// with behind: queue keys are reused (waiterLease.slot), and a key
	// created anew is another waiter's entry, not the one we wait for.
	watchCreated int64
	retryAt      time.Time
	delayCause   EventType // with delayed: how the hold ended
	holder       *Lock
	queueHead    bool
	// enqueuedRev is the revision at which a failed direct attempt made
	// with a.enqueue put our queue entry (its CreateRevision); ahead is
	// the newest entry queued before it, "" if none.
	enqueuedRev int64
	ahead       string
	aheadRev    int64 // ahead's CreateRevision
	// queuedBefore is how many entries were queued before ours, by the
	// same txn that put ours.
	queuedBefore int64
}

// attempt runs one acquire transaction. queueKey/queueRev identify our
// queue entry when waiting; "" means a direct attempt, which must not jump
// ahead of queued waiters.
func (a *acquirer) attempt(ctx context.Context, queueKey string, queueRev int64) (attemptResult, error) {
	e, name := a.e, a.req.Name
	if err := a.ensureLease(ctx); err != nil {
		return attemptResult{}, err
	}
	lkey, gkey, qpfx := e.lockKey(name), e.delayKey(name), e.queuePrefix(name)
	leaseID := a.lease
	if a.session != 0 {
		leaseID = a.session
	}
	now := nowUTC()
	rec := a.holder(now)

	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(lkey), "=", 0)}
	if queueKey == "" {
		// Nobody queued: a direct acquire never overtakes a waiter.
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(qpfx), "=", 0).WithPrefix())
	} else {
		// Our entry exists and no entry is older than ours.
		cmps = append(cmps,
			clientv3.Compare(clientv3.CreateRevision(queueKey), "=", queueRev),
			clientv3.Compare(clientv3.CreateRevision(qpfx), ">", queueRev-1).WithPrefix())
	}
	if a.guardRev == 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(gkey), "=", 0))
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(gkey), "=", a.guardRev))
	}
	var sessionOps []clientv3.Op
	if a.session != 0 {
		skey := e.sessionKey(a.req.Session)
		if a.sessionRev != 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(skey), "=", a.sessionRev))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(skey), ">", 0))
		}
		sessionOps = []clientv3.Op{clientv3.OpGet(skey)}
	}

	var resp *clientv3.TxnResponse
	tallyAt := -1 // where the Then branch reads the session's tallies
	err := e.withBucket(ctx, func(bucket clientv3.LeaseID) error {
		then := []clientv3.Op{
			clientv3.OpPut(lkey, mustJSON(rec), clientv3.WithLease(leaseID)),
			clientv3.OpPut(e.acquiredKey(name, a.hold), mustJSON(Event{
				Time: now, Type: EventAcquired, Lock: name, Owner: rec.Owner, Session: rec.Session, Credential: rec.Credential,
			}), clientv3.WithLease(bucket)),
		}
		switch {
		case a.req.LockDelay > 0:
			then = append(then, clientv3.OpPut(gkey, mustJSON(delayRecord{Hold: a.hold, LockDelay: a.req.LockDelay})))
		case a.guardRev != 0:
			then = append(then, clientv3.OpDelete(gkey))
		}
		if queueKey != "" {
			then = append(then, clientv3.OpDelete(queueKey))
		}
		tallyAt = -1
		if a.session != 0 && e.cfg.MaxLocksPerSession > 0 {
			// Count the hold in the session's tally, then read the tallies
			// (ours included): checked after the commit (see
			// undoOverSessionCap), so the cap costs no round trip. Without
			// the cap no tally is kept: its put is a third of a session
			// cycle's cost (BenchmarkEngine_CycleSession).
			acquired := e.sessionTallyKey(a.req.Session, "acquired")
			tallyAt = len(then) + 1
			then = append(then,
				clientv3.OpPut(acquired, "", clientv3.WithLease(a.session)),
				clientv3.OpGet(acquired, clientv3.WithKeysOnly()),
				clientv3.OpGet(e.sessionTallyKey(a.req.Session, "released"), clientv3.WithKeysOnly()))
		}
		then = append(then, sessionOps...)
		els := []clientv3.Op{
			clientv3.OpGet(lkey),
			clientv3.OpGet(gkey),
			clientv3.OpGet(qpfx, clientv3.WithPrefix(), clientv3.WithCountOnly()),
		}
		if q := a.enqueue; queueKey == "" && q != nil {
			// Ops run in order: the read sees the entries before ours.
			els = append(els,
				clientv3.OpGet(qpfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
					clientv3.WithLimit(1), clientv3.WithKeysOnly()),
				clientv3.OpPut(q.key, a.entryValue(now), clientv3.WithLease(q.lease)))
		}
		if queueKey != "" {
			els = append(els,
				clientv3.OpGet(queueKey),
				clientv3.OpGet(qpfx, clientv3.WithPrefix(), clientv3.WithMaxCreateRev(queueRev-1),
					clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()))
		}
		els = append(els, sessionOps...)
		// The txn is not bound to the caller's context: if the caller
		// leaves mid-flight we still learn the outcome, and undo a grant.
		return e.retryNotApplied(context.WithoutCancel(ctx), func(octx context.Context) (err error) {
			resp, err = e.txn(octx, cmps, then, els)
			return err
		})
	})
	if err != nil {
		if isLeaseNotFound(err) && queueKey == "" && a.enqueue != nil {
			// The session's lease, our own or the node's waiter lease: the
			// queued attempt that follows tells which (noSession, or our
			// entry missing: dequeued).
			if a.session == 0 {
				a.lease = 0
			}
			return attemptResult{outcome: retryNow}, nil
		}
		if isLeaseNotFound(err) {
			if a.session != 0 {
				return attemptResult{outcome: noSession}, nil
			}
			a.lease = 0 // our own lease vanished; grant anew next time
			return attemptResult{outcome: retryNow}, nil
		}
		if !notApplied(err) {
			// A timeout or a term's end can come after the commit: the
			// lock may be ours under our own lease, and nobody will
			// learn the token. dropLease revokes the lease, which ends
			// such a hold at once.
			a.unsure = true
			a.entryUnsure = a.entryUnsure || (queueKey == "" && a.enqueue != nil)
		}
		return attemptResult{}, e.etcdErr(context.WithoutCancel(ctx), "acquire txn", err)
	}

	if resp.Succeeded {
		a.used = true
		e.recorded(EventAcquired, 1)
		l := rec.toLock(name, resp.Header.Revision)
		if tallyAt >= 0 && heldInSession(resp, tallyAt) > int64(e.cfg.MaxLocksPerSession) {
			return attemptResult{}, a.undoOverSessionCap(l.Token, rec)
		}
		if a.session != 0 {
			sr := resp.Responses[len(resp.Responses)-1].GetResponseRange()
			if len(sr.Kvs) > 0 {
				var s sessionRecord
				if json.Unmarshal(sr.Kvs[0].Value, &s) == nil {
					l.TTL = time.Duration(s.TTL) * time.Second
				}
			}
			e.fillLease(ctx, l, a.session)
		} else {
			l.ExpiresAt = a.grantedAt.Add(time.Duration(a.leaseTTL) * time.Second).UTC().Truncate(time.Millisecond)
		}
		return attemptResult{outcome: won, lock: l}, nil
	}
	r, err := a.analyse(ctx, resp, queueKey)
	if queueKey == "" && a.enqueue != nil {
		r.enqueuedRev = resp.Header.Revision
		r.queuedBefore = resp.Responses[2].GetResponseRange().Count
		if ahead := resp.Responses[3].GetResponseRange().Kvs; len(ahead) > 0 {
			r.ahead, r.aheadRev = string(ahead[0].Key), ahead[0].CreateRevision
		}
	}
	return r, err
}

// analyse reads a failed acquire transaction's else branch.
func (a *acquirer) analyse(ctx context.Context, resp *clientv3.TxnResponse, queueKey string) (attemptResult, error) {
	e, name := a.e, a.req.Name
	rs := resp.Responses
	rev := resp.Header.Revision
	lockKVs := rs[0].GetResponseRange().Kvs
	guardKVs := rs[1].GetResponseRange().Kvs
	queued := rs[2].GetResponseRange().Count
	if a.session != 0 {
		if len(rs[len(rs)-1].GetResponseRange().Kvs) == 0 {
			return attemptResult{outcome: noSession}, nil
		}
	}
	if len(lockKVs) > 0 {
		if l, ok := a.granted(ctx, lockKVs[0]); ok {
			return attemptResult{outcome: won, lock: l}, nil
		}
	}
	if queueKey != "" && len(rs[3].GetResponseRange().Kvs) == 0 {
		return attemptResult{outcome: dequeued}, nil
	}
	if len(lockKVs) > 0 {
		kv := lockKVs[0]
		hr, err := decodeHolder(kv)
		if err != nil {
			return attemptResult{}, err
		}
		holder := hr.toLock(name, kv.ModRevision)
		a.lastHolder, a.lastHolderLease = holder, hr.Lease
		if a.session != 0 && hr.Session == a.req.Session {
			e.fillLease(ctx, holder, a.session)
			return attemptResult{outcome: sameHolder, lock: holder}, nil
		}
		if queueKey != "" {
			if pred := rs[4].GetResponseRange().Kvs; len(pred) > 0 {
				return attemptResult{outcome: behind, watchKey: string(pred[0].Key), watchRev: rev, watchCreated: pred[0].CreateRevision, holder: holder}, nil
			}
		}
		return attemptResult{outcome: heldBy, watchKey: e.lockKey(name), watchRev: rev, holder: holder}, nil
	}
	a.lastHolder = nil
	if len(guardKVs) > 0 {
		g := guardKVs[0]
		var dr delayRecord
		if err := json.Unmarshal(g.Value, &dr); err != nil {
			return attemptResult{}, fmt.Errorf("decode lock-delay guard: %w", err)
		}
		now := time.Now()
		if dr.Until == nil {
			// The hold ended without a release, and nobody stamped the
			// delay yet: the lease expired moments ago. Stamp it now.
			until := now.Add(dr.LockDelay).UTC()
			stamped := dr
			stamped.Until, stamped.Cause = &until, EventExpired
			octx, done := e.op(ctx)
			tr, err := e.cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(e.delayKey(name)), "=", g.ModRevision)).
				Then(clientv3.OpPut(e.delayKey(name), mustJSON(stamped))).Commit()
			done()
			if err != nil {
				return attemptResult{}, e.etcdErr(ctx, "stamp lock-delay", err)
			}
			if !tr.Succeeded {
				return attemptResult{outcome: retryNow}, nil
			}
			return attemptResult{outcome: delayed, retryAt: until, delayCause: EventExpired, watchKey: e.delayKey(name), watchRev: tr.Header.Revision}, nil
		}
		if now.Before(*dr.Until) {
			return attemptResult{outcome: delayed, retryAt: *dr.Until, delayCause: dr.Cause, watchKey: e.delayKey(name), watchRev: rev}, nil
		}
		if a.guardRev != g.ModRevision {
			a.guardRev = g.ModRevision // a spent guard: replace it next time
			return attemptResult{outcome: retryNow}, nil
		}
	} else if a.guardRev != 0 {
		a.guardRev = 0
		return attemptResult{outcome: retryNow}, nil
	}
	if queueKey != "" {
		if pred := rs[4].GetResponseRange().Kvs; len(pred) > 0 {
			return attemptResult{outcome: behind, watchKey: string(pred[0].Key), watchRev: rev, watchCreated: pred[0].CreateRevision}, nil
		}
	} else if queued > 0 {
		return attemptResult{outcome: behind, queueHead: true}, nil
	}
	return attemptResult{outcome: retryNow}, nil
}

// granted returns the lock if kv, the lock's key, shows the hold that our
// queue entry asked for: a release granted it to us (see handoff).
func (a *acquirer) granted(ctx context.Context, kv *mvccpb.KeyValue) (*Lock, bool) {
	hr, err := decodeHolder(kv)
	if err != nil || hr.Hold != a.hold {
		return nil, false
	}
	a.used = true
	l := hr.toLock(a.req.Name, kv.ModRevision)
	if a.session != 0 {
		a.e.fillLease(ctx, l, a.session)
	} else {
		// The lease was refreshed at grantedAt at the latest (see
		// keepQueuedLease), so it lives at least this long.
		l.ExpiresAt = a.grantedAt.Add(time.Duration(a.leaseTTL) * time.Second).UTC().Truncate(time.Millisecond)
	}
	return l, true
}

// heldInSession reads the session's tallies from an acquire's Then branch:
// the locks the session holds, the new one included.
func heldInSession(resp *clientv3.TxnResponse, at int) int64 {
	version := func(r *etcdserverpb.ResponseOp) int64 {
		if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
			return kvs[0].Version
		}
		return 0
	}
	return version(resp.Responses[at]) - version(resp.Responses[at+1])
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
func (a *acquirer) undoOverSessionCap(token int64, rec holderRecord) error {
	e, limit := a.e, a.e.cfg.MaxLocksPerSession
	reason := fmt.Sprintf("session %s already holds the maximum of %d locks; release some first", a.req.Session, limit)
	ctx, done := e.cleanupCtx()
	defer done()
	err := e.endHold(ctx, a.req.Name, token, rec, nil, EventReleased, "acquire refused: "+reason)
	if err != nil && !errors.Is(err, ErrTokenMismatch) && !errors.Is(err, ErrNotHeld) {
		// The session keeps a lock whose token nobody learnt: it shows in
		// the session's locks and ends with it. Say the outcome is unknown.
		e.log.Warn("end hold over the session's lock limit", "lock", a.req.Name, "token", token, "session", a.req.Session, "err", err)
		return fmt.Errorf("undo acquire over the session's lock limit: %w", err)
	}
	return &LimitError{Err: ErrTooManyLocks, Limit: limit, Reason: reason}
}
