package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Acquire takes req.Name for the caller and returns the lock with its
// fencing token. fresh is false when req.Session already held the lock
// (acquire is idempotent within a session). When the lock is held, Acquire
// queues for up to req.Wait, first come first served across every node,
// then returns a *HeldError (errors.Is(err, ErrHeld)) naming the holder.
//
// The lock lives as long as its lease: the caller must renew it before
// ExpiresAt, and must pass the token to whatever it protects, because a
// paused caller can lose the lock without noticing. If the caller's ctx
// ends, Acquire leaves nothing behind: no queue entry, no lease, no lock.
func (e *Engine) Acquire(ctx context.Context, req AcquireRequest) (l *Lock, fresh bool, err error) {
	a, err := e.newAcquirer(req)
	if err != nil {
		return nil, false, err
	}
	a.credential = credentialOf(ctx)
	if err := a.checkSessionOwner(ctx); err != nil {
		return nil, false, fmt.Errorf("acquire %q: %w", req.Name, err)
	}
	// MaxLocks (space.go): a slot for the lock this acquire may create.
	endSlot, err := e.reserveLock(ctx, req)
	if err != nil {
		return nil, false, fmt.Errorf("acquire %q: %w", req.Name, err)
	}
	defer func() { endSlot(err == nil && fresh || mayHaveCreated(err)) }()
	defer a.dropLease()
	if req.Wait == 0 {
		l, fresh, err = a.tryNow(ctx)
	} else {
		e.metrics.waiting.Inc()
		l, fresh, err = a.wait(ctx)
		e.metrics.waiting.Dec()
	}
	if err != nil {
		var he *HeldError
		if errors.As(err, &he) && he.Holder != nil && he.Holder.ExpiresAt.IsZero() {
			if id, ok := parseLeaseHex(a.lastHolderLease); ok {
				e.fillLease(ctx, he.Holder, id)
			}
		}
		return nil, false, fmt.Errorf("acquire %q: %w", req.Name, err)
	}
	return l, fresh, nil
}

// acquirer is one acquire in progress.
type acquirer struct {
	e       *Engine
	req     AcquireRequest
	session clientv3.LeaseID // the session's lease, or 0
	// credential is recorded on the hold (see Caller); "" without one.
	credential string
	// sessionRev, when set, is the CreateRevision of the session key whose
	// record the ownership check read: the txn requires that very key, so
	// the check holds at the revision the lock is granted.
	sessionRev int64

	// The lock's own lease when it has no session; granted lazily, and
	// replaced when it may have aged too much to hand out.
	lease     clientv3.LeaseID
	leaseTTL  int64
	grantedAt time.Time
	used      bool
	// unsure is set when an acquire txn under lease failed with an
	// outcome unknown: it may have granted the lock under the lease.
	unsure bool
	// entry is the value of our queue entry as last sent; entryUnsure is
	// set when a txn that puts it failed with an outcome unknown: it may
	// still be applied after we leave the queue (see leave).
	entry       string
	entryUnsure bool

	// guardRev is the ModRevision of a finished lock-delay guard that the
	// next attempt replaces; 0 means the attempt expects no guard.
	guardRev int64
	// lastHolder is the holder seen by the latest failed attempt.
	lastHolder      *Lock
	lastHolderLease string
	hold            string
	// enqueue, when set, makes the next direct attempt put this queue
	// entry in its else branch: a waiting acquire joins the queue in the
	// same txn that found the lock taken, not in one more.
	enqueue *queueEntry
	// queuedLease is the own lease our queue entry names in its grant
	// (see waiterRecord.Grant), or 0. A release may put the lock under it
	// as long as the entry exists, so it is kept alive, never replaced or
	// given back to the pool until the entry is gone.
	queuedLease clientv3.LeaseID
}

// queueEntry is a waiter's queue key, to be put under the node's waiter
// lease.
type queueEntry struct {
	key   string
	lease clientv3.LeaseID
}

func (e *Engine) newAcquirer(req AcquireRequest) (*acquirer, error) {
	if err := checkName("name", req.Name); err != nil {
		return nil, err
	}
	if err := checkOwner(req.Owner); err != nil {
		return nil, err
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return nil, err
	}
	a := &acquirer{e: e, req: req, hold: newHoldID()}
	if req.Session != "" {
		id, ok := parseLeaseHex(req.Session)
		if !ok {
			return nil, invalid("session", "must be a session ID as returned by POST /v1/sessions (hex)")
		}
		if req.TTL != 0 {
			return nil, invalid("ttl", "must be absent when session is given: the lock lives as long as the session")
		}
		a.session = id
		a.req.Session = leaseHex(id) // canonical spelling
	} else {
		if req.TTL == 0 {
			a.req.TTL = e.cfg.DefaultTTL
		}
		if err := e.checkTTL("ttl", a.req.TTL); err != nil {
			return nil, err
		}
	}
	if req.Wait < 0 || req.Wait > e.cfg.MaxWait {
		return nil, invalid("wait", "must be between 0s and %s", e.cfg.MaxWait)
	}
	if req.LockDelay < 0 || req.LockDelay > e.cfg.MaxLockDelay {
		return nil, invalid("lock_delay", "must be between 0s and %s", e.cfg.MaxLockDelay)
	}
	return a, nil
}

func (e *Engine) checkTTL(field string, d time.Duration) error {
	if d < e.cfg.MinTTL || d > e.cfg.MaxTTL {
		return invalid(field, "must be between %s and %s", e.cfg.MinTTL, e.cfg.MaxTTL)
	}
	return nil
}

// ensureLease grants the lock's own lease. A lease granted long ago may
// have run down while we waited; it is replaced once half its TTL passed,
// so a granted lock always starts with most of its TTL.
func (a *acquirer) ensureLease(ctx context.Context) error {
	if a.session != 0 {
		// A session lock's TTL is its session's: readers take it from the
		// lease (leaseExpiry), so acquire reads nothing more here.
		return nil
	}
	if a.lease != 0 && time.Since(a.grantedAt) < time.Duration(a.leaseTTL)*time.Second/2 {
		return nil
	}
	if a.lease != 0 && a.lease == a.queuedLease {
		// A release may grant the lock under this lease: refresh it.
		if err := a.keepQueuedLease(ctx); err != nil || a.lease != 0 {
			return err
		}
	}
	a.dropLease()
	// etcd raises a TTL below its floor: pooled leases carry the granted
	// TTL, so only one asked for with the same TTL is taken.
	want := ttlSeconds(a.req.TTL)
	if id, at := a.e.leases.take(ctx, a.e, want); id != 0 {
		a.lease, a.leaseTTL, a.grantedAt = id, want, at
		return nil
	}
	var (
		start time.Time
		resp  *clientv3.LeaseGrantResponse
	)
	err := a.e.retryNotApplied(ctx, func(octx context.Context) (err error) {
		start = time.Now()
		resp, err = a.e.cli.Grant(octx, want)
		return err
	})
	if err != nil {
		return a.e.etcdErr(ctx, "grant lease", err)
	}
	a.lease, a.leaseTTL, a.grantedAt = resp.ID, resp.TTL, start
	return nil
}

// keepQueuedLease refreshes the own lease that our queue entry names to
// its full TTL with a keep-alive (no raft entry). If the lease is gone,
// the entry can no longer be granted (the release falls back to a plain
// one), and the next attempt takes a new lease.
//
// A keep-alive that fails for etcd's own reasons (isUnavailable: a leader
// change, not primary, no leader) is sent again until the lease would run
// out: etcd keeps a lease whose keep-alives fail until its TTL has passed
// (and a new leader renews every lease in full as it takes over), so the
// wait goes on.
// Only once the lease may have expired unrenewed does the wait fail with
// ErrUnavailable, since no grant can then be promised under it.
func (a *acquirer) keepQueuedLease(ctx context.Context) error {
	e := a.e
	runsOut := a.grantedAt.Add(time.Duration(a.leaseTTL) * time.Second)
	// No try outlives the lease: past runsOut it may be gone.
	tctx, cancel := context.WithDeadline(ctx, runsOut)
	defer cancel()
	pause := notAppliedPause
	for {
		start := time.Now()
		octx, done := e.op(tctx)
		ka, err := e.cli.KeepAliveOnce(octx, a.lease)
		done()
		switch {
		case err == nil:
			a.leaseTTL, a.grantedAt = ka.TTL, start
			return nil
		case isLeaseNotFound(err):
			a.lease, a.queuedLease = 0, 0
			return nil
		case !isUnavailable(err) || ctx.Err() != nil || e.stop.Err() != nil:
			return e.etcdErr(ctx, "keep the queued lease alive", err)
		}
		left := time.Until(runsOut)
		if left <= 0 {
			return e.etcdErr(ctx, "keep the queued lease alive", err)
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-e.drain.Done():
		}
		t.Stop()
		if e.drain.Err() != nil {
			return ErrClosed
		}
		pause = min(2*pause, time.Second)
	}
}

// dropLease gives the own lease back to the pool, or revokes it, if no
// lock was granted with it.
func (a *acquirer) dropLease() {
	if a.lease == 0 || a.used {
		return
	}
	id := a.lease
	a.lease = 0
	// A lease in the pool must hold no key, now or later, or the pool's
	// keep-alives would keep the key for good.
	if a.unsure {
		// An acquire txn of unknown outcome may have put the lock under
		// it. The revoke is not in the answer's way: with etcd in
		// trouble it may take its whole bound, and if it fails the
		// lease, kept alive by nobody, ends by itself.
		go a.e.revokeLease(leaseHex(id))
		return
	}
	if id == a.queuedLease {
		// Our queue entry may still name it (leaving the queue failed).
		a.e.revokeLease(leaseHex(id))
		return
	}
	if a.e.leases.put(id, a.leaseTTL) {
		return
	}
	ctx, done := a.e.cleanupCtx()
	defer done()
	err := a.e.retryCleanup(ctx, func(ctx context.Context) error {
		_, err := a.e.cli.Revoke(ctx, id)
		return err
	})
	if err != nil && !isLeaseNotFound(err) {
		a.e.log.Warn("revoke unused lease", "lease", leaseHex(id), "err", err)
	}
}

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

// holder is the record of a hold of ours that begins at now.
func (a *acquirer) holder(now time.Time) holderRecord {
	leaseID, ttl := a.lease, a.leaseTTL
	if a.session != 0 {
		leaseID = a.session
	}
	return holderRecord{
		Owner: a.req.Owner, Hold: a.hold, Lease: leaseHex(leaseID), Session: a.req.Session,
		TTL: ttl, AcquiredAt: now, LockDelay: a.req.LockDelay, Metadata: a.req.Metadata, Credential: a.credential,
		NoTally: a.session != 0 && a.e.cfg.MaxLocksPerSession == 0,
	}
}

// waiterRecord is our queue entry. It asks to be granted the lock on
// release (see handoff) unless the grant would need more than the puts
// a release can make for us: counting the hold against
// MaxLocksPerSession is checked after the acquire txn, by this node.
// It names the lease the lock is to live under; while the entry exists,
// that lease is kept (see queuedLease).
func (a *acquirer) waiterRecord(now time.Time) waiterRecord {
	wr := waiterRecord{Owner: a.req.Owner, Session: a.req.Session, Since: now}
	if a.session != 0 && a.e.cfg.MaxLocksPerSession > 0 {
		return wr
	}
	if a.session == 0 && a.lease == 0 {
		return wr
	}
	g := a.holder(time.Time{})
	wr.Grant = &g
	if a.session == 0 {
		a.queuedLease = a.lease
	}
	return wr
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

// leaseExpiry asks etcd when lease runs out, and the TTL it was granted
// with. etcd answers in whole seconds, rounded down, so the expiry is
// never later than the truth.
func (e *Engine) leaseExpiry(ctx context.Context, id clientv3.LeaseID) (time.Time, time.Duration) {
	now := time.Now()
	octx, done := e.op(ctx)
	defer done()
	resp, err := e.cli.TimeToLive(octx, id)
	if err != nil || resp.TTL < 0 {
		return now.UTC().Truncate(time.Millisecond), 0
	}
	return now.Add(time.Duration(resp.TTL) * time.Second).UTC().Truncate(time.Millisecond), time.Duration(resp.GrantedTTL) * time.Second
}

// fillLease sets l's expiry, and its TTL when the holder record has none
// (a session lock's TTL is its session's).
func (e *Engine) fillLease(ctx context.Context, l *Lock, id clientv3.LeaseID) {
	var granted time.Duration
	l.ExpiresAt, granted = e.leaseExpiry(ctx, id)
	if l.TTL == 0 {
		l.TTL = granted
	}
}

const maxImmediateRetries = 16

// settle ends an acquire on the outcomes that need no waiting: won, held
// by our own session already, or session gone. ok is false otherwise.
func (a *acquirer) settle(ctx context.Context, r attemptResult) (l *Lock, fresh bool, err error, ok bool) {
	switch r.outcome {
	case won:
		l, fresh, err = a.handBack(ctx, r.lock)
		return l, fresh, err, true
	case sameHolder:
		return r.lock, false, nil, true
	case noSession:
		return nil, false, ErrSessionNotFound, true
	}
	return nil, false, nil, false
}

// tryNow is an acquire without wait.
func (a *acquirer) tryNow(ctx context.Context) (*Lock, bool, error) {
	for range maxImmediateRetries {
		r, err := a.attempt(ctx, "", 0)
		if err != nil {
			return nil, false, err
		}
		if l, fresh, err, ok := a.settle(ctx, r); ok {
			return l, fresh, err
		}
		switch r.outcome {
		case heldBy:
			return nil, false, &HeldError{Holder: r.holder, Reason: "held by " + strconv.Quote(r.holder.Owner)}
		case delayed:
			return nil, false, &HeldError{RetryAfter: time.Until(r.retryAt), Reason: fmt.Sprintf("under lock-delay until %s: the last hold %s, and did not end by a release",
				r.retryAt.UTC().Format(time.RFC3339Nano), causeText(r.delayCause))}
		case behind:
			return nil, false, &HeldError{Reason: "being handed to a queued waiter"}
		}
	}
	return nil, false, &HeldError{Holder: a.lastHolder, Reason: "contended; try again"}
}

// handBack returns a won lock, unless the caller left while the txn was in
// flight: then nobody will ever learn the token, so release it at once.
func (a *acquirer) handBack(ctx context.Context, l *Lock) (*Lock, bool, error) {
	if err := ctx.Err(); err != nil {
		cctx, done := a.e.cleanupCtx()
		defer done()
		if rerr := a.e.Release(cctx, l.Name, l.Token); rerr != nil && !errors.Is(rerr, ErrNotHeld) {
			a.e.log.Warn("release lock of departed caller", "lock", l.Name, "token", l.Token, "err", rerr)
		}
		return nil, false, err
	}
	return l, true, nil
}

// wait queues for the lock. The queue is a set of keys under the lock's
// queue prefix, ordered by CreateRevision; each waiter watches only the
// key just ahead of it (or the lock, once it is first), so a handoff wakes
// one waiter, not all of them. The release of the hold before us usually
// grants us the lock itself (see handoff): we then learn it from the
// lock's key, with no txn of our own.
func (a *acquirer) wait(ctx context.Context) (l *Lock, fresh bool, err error) {
	e := a.e
	if e.drain.Err() != nil {
		// Shutting down: a free lock is still granted, nobody queues.
		r, err := a.attempt(ctx, "", 0)
		if err != nil {
			return nil, false, err
		}
		if l, fresh, err, ok := a.settle(ctx, r); ok {
			return l, fresh, err
		}
		return nil, false, ErrClosed
	}
	wlease, lost, err := e.waiters.get(ctx, e)
	if err != nil {
		return nil, false, err
	}
	slot := e.waiters.slot()
	qkey := e.queuePrefix(a.req.Name) + leaseHex(wlease) + "-" + strconv.FormatUint(slot, 10)
	granted := false
	defer func() {
		if granted {
			e.waiters.putSlot(slot) // the txn that granted the lock deleted our entry
			return
		}
		got, lerr := a.leave(qkey)
		if lerr == nil {
			e.waiters.putSlot(slot)
		}
		if got == nil {
			if lerr == nil {
				a.queuedLease = 0 // the entry is gone: nobody can grant under the lease now
			}
			return
		}
		// A release granted us the lock as we gave up: hand it back
		// unless the caller is gone (handBack then releases it). Failing
		// the acquire instead would leave a hold that nobody knows the
		// token of until its lease ends.
		a.queuedLease = 0
		l, fresh, err = a.handBack(ctx, got)
	}()

	// One txn takes a free lock with nobody queued, or else joins the
	// queue: a waiting acquire costs no extra round trip to enqueue.
	a.enqueue = &queueEntry{key: qkey, lease: wlease}
	first, err := a.attempt(ctx, "", 0)
	a.enqueue = nil
	if err != nil {
		return nil, false, err
	}
	if l, fresh, err, ok := a.settle(ctx, first); ok {
		granted = first.outcome == won // the Then branch put no entry
		return l, fresh, err
	}
	queueRev, queued := first.enqueuedRev, first.queuedBefore+1
	if queueRev == 0 {
		// The txn failed on a lease before it ran: join the queue on
		// our own, and let the queued attempts tell which lease is gone.
		if queueRev, queued, err = a.joinQueue(ctx, qkey, wlease); err != nil {
			return nil, false, err
		}
		first = attemptResult{outcome: retryNow}
	}
	if limit := e.cfg.MaxWaitersPerLock; limit > 0 && queued > int64(limit) {
		// Over the cap: leave (the deferred dequeue removes our entry).
		// Counted by the txn that queued us, so it costs no round trip;
		// and since every waiter that counted more than the cap leaves,
		// the queue holds at most the cap once joiners settle. Waiters
		// queued before us are not disturbed.
		return nil, false, &LimitError{
			Err: ErrTooManyWaiters, Limit: limit, RetryAfter: time.Second,
			Reason: fmt.Sprintf("the queue of %q is full: %d acquires already wait for it", a.req.Name, limit),
		}
	}
	deadline, cancel := context.WithTimeout(ctx, a.req.Wait)
	defer cancel()
	// A session that ends while we wait ends the wait: the next attempt
	// then reports it. The txn that queued us found the session.
	var sessionGone *keyWatch
	if a.session != 0 {
		var missed bool
		sessionGone, missed = e.waits.watchKey(e.sessionKey(a.req.Session), queueRev)
		defer sessionGone.close()
		if missed {
			sessionGone.overflow() // wake once to look: it may have ended since
		}
	}

	// The first attempt already told what to wait for: the entry queued
	// just ahead of ours, or the lock itself if there was none.
	if first.ahead != "" && (first.outcome == heldBy || first.outcome == behind) {
		first = attemptResult{outcome: behind, watchKey: first.ahead, watchRev: queueRev, watchCreated: first.aheadRev}
	}
	if (first.outcome == heldBy || first.outcome == behind) && first.watchKey != "" {
		got, err := a.sleep(ctx, deadline, first, lost, sessionGone)
		if err != nil {
			return nil, false, err
		}
		if got != nil {
			granted = true // the release deleted our entry
			return a.handBack(ctx, got)
		}
	}
	for {
		r, looked, err := a.look(ctx, qkey, queueRev)
		if err != nil {
			return nil, false, err
		}
		if !looked {
			if r, err = a.attempt(ctx, qkey, queueRev); err != nil {
				return nil, false, err
			}
		}
		if r.outcome == won {
			granted = true // the txn deleted our entry
		}
		if l, fresh, err, ok := a.settle(ctx, r); ok {
			return l, fresh, err
		}
		switch r.outcome {
		case dequeued:
			return nil, false, fmt.Errorf("queue entry lost with the node's waiter lease: %w", ErrUnavailable)
		case retryNow:
			continue
		}
		got, err := a.sleep(ctx, deadline, r, lost, sessionGone)
		if err != nil {
			return nil, false, err
		}
		if got != nil {
			granted = true
			return a.handBack(ctx, got)
		}
	}
}

// look reads what a queued attempt would find, without a txn, so that a
// waiter woken while the lock changes hands goes back to waiting at no raft
// entry: the waiter behind the head wakes when a release hands the lock
// to the head, and finds it held. ok is false when an attempt must tell:
// the lock looks free, our entry looks gone, or the lock is held in our
// own session. On our own member the read is local (the watch event that
// woke us came from it, so it has applied that far); otherwise it is
// linearizable. Either way it only picks what to wait for, and sleep
// checks that against etcd as its watch starts.
func (a *acquirer) look(ctx context.Context, qkey string, queueRev int64) (r attemptResult, ok bool, err error) {
	e, name := a.e, a.req.Name
	var opts []clientv3.OpOption
	if e.ownMember() {
		opts = append(opts, clientv3.WithSerializable())
	}
	lkey := e.lockKey(name)
	countOnly := append([]clientv3.OpOption{clientv3.WithCountOnly()}, opts...)
	ops := []clientv3.Op{
		clientv3.OpGet(lkey, opts...),
		clientv3.OpGet(e.queuePrefix(name), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithMaxCreateRev(queueRev - 1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()}, opts...)...),
		clientv3.OpGet(qkey, countOnly...),
	}
	if a.session != 0 {
		// A session that ended is what may have woken us (sessionGone).
		ops = append(ops, clientv3.OpGet(e.sessionKey(a.req.Session), countOnly...))
	}
	octx, done := e.op(ctx)
	resp, err := e.cli.Txn(octx).Then(ops...).Commit()
	done()
	if err != nil {
		return attemptResult{}, false, e.etcdErr(ctx, "look at the lock", err)
	}
	lockKVs := resp.Responses[0].GetResponseRange().Kvs
	if len(lockKVs) == 0 {
		return attemptResult{}, false, nil
	}
	kv := lockKVs[0]
	if l, ok := a.granted(ctx, kv); ok {
		// Before the look at our entry: the release that granted us
		// the lock deleted it.
		return attemptResult{outcome: won, lock: l}, true, nil
	}
	for _, r := range resp.Responses[2:] {
		if r.GetResponseRange().Count == 0 {
			return attemptResult{}, false, nil // our entry, or our session, is gone
		}
	}
	hr, err := decodeHolder(kv)
	if err != nil || (a.session != 0 && hr.Session == a.req.Session) {
		return attemptResult{}, false, nil
	}
	holder := hr.toLock(name, kv.ModRevision)
	a.lastHolder, a.lastHolderLease = holder, hr.Lease
	rev := resp.Header.Revision
	if ahead := resp.Responses[1].GetResponseRange().Kvs; len(ahead) > 0 {
		return attemptResult{outcome: behind, watchKey: string(ahead[0].Key), watchRev: rev, watchCreated: ahead[0].CreateRevision, holder: holder}, true, nil
	}
	return attemptResult{outcome: heldBy, watchKey: lkey, watchRev: rev, holder: holder}, true, nil
}

// joinQueue puts a queue entry on its own and returns its CreateRevision
// and the length of the queue with it.
func (a *acquirer) joinQueue(ctx context.Context, qkey string, wlease clientv3.LeaseID) (rev, queued int64, err error) {
	e := a.e
	var resp *clientv3.TxnResponse
	err = e.retryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = e.cli.Txn(octx).Then(
			clientv3.OpPut(qkey, a.entryValue(nowUTC()), clientv3.WithLease(wlease)),
			clientv3.OpGet(e.queuePrefix(a.req.Name), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		).Commit()
		return err
	})
	if err != nil {
		if isLeaseNotFound(err) {
			return 0, 0, fmt.Errorf("enqueue: the node's waiter lease is gone: %w", ErrUnavailable)
		}
		if !notApplied(err) {
			a.entryUnsure = true
		}
		return 0, 0, e.etcdErr(ctx, "enqueue", err)
	}
	return resp.Header.Revision, resp.Responses[1].GetResponseRange().Count, nil
}

// sleep blocks until what r says we wait for changes: the key ahead of us
// is deleted, the lock is released or handed to us, or lock-delay runs
// out. It returns the lock if a release granted it to us, and an error
// when the wait must end instead. It learns of changes from the engine's
// waiter hub, never from a watch of its own.
func (a *acquirer) sleep(ctx, deadline context.Context, r attemptResult, lost <-chan struct{}, sessionGone *keyWatch) (*Lock, error) {
	e := a.e
	// The head of the queue waits on the lock itself, puts included: a
	// release grants it to us by putting our record over its own.
	head := r.outcome != delayed && r.watchKey == e.lockKey(a.req.Name)
	kw, missed := e.waits.watchKey(r.watchKey, r.watchRev)
	defer kw.close()
	var timer <-chan time.Time
	if r.outcome == delayed {
		t := time.NewTimer(time.Until(r.retryAt))
		defer t.Stop()
		timer = t.C
	}
	if missed {
		// The hub no longer holds what it dispatched between our read and
		// the registration: read what changed meanwhile.
		if l, changed, err := a.changedSince(ctx, r, head); err != nil || changed {
			return l, err
		}
	}
	var sessionC <-chan struct{}
	if sessionGone != nil {
		sessionC = sessionGone.c
	}
	// A long wait keeps the lease our grant names alive.
	refresh := time.NewTimer(time.Hour)
	defer refresh.Stop()
	keepAlive := func() {
		refresh.Stop()
		if a.lease != 0 && a.lease == a.queuedLease {
			refresh.Reset(time.Until(a.grantedAt.Add(time.Duration(a.leaseTTL) * time.Second / 3)))
		}
	}
	keepAlive()
	for {
		select {
		case <-kw.c:
			evs, dropped := kw.take()
			if dropped {
				return nil, nil // look again
			}
			for _, ev := range evs {
				switch {
				case head && ev.Type == mvccpb.PUT:
					if l, ok := a.granted(ctx, ev.Kv); ok {
						return l, nil
					}
					return nil, nil // taken by another: look again
				case head, r.outcome == delayed:
					return nil, nil // released, or the delay's guard changed
				case ev.Type == mvccpb.DELETE:
					return nil, nil // the entry ahead left
				}
				// A put of the entry ahead: a reused key's new entry
				// after its delete, which woke us already.
			}
		case <-refresh.C:
			if err := a.keepQueuedLease(ctx); err != nil {
				return nil, err
			}
			keepAlive()
		case <-timer:
			return nil, nil
		case <-sessionC:
			evs, dropped := sessionGone.take()
			if dropped {
				return nil, nil
			}
			for _, ev := range evs {
				if ev.Type == mvccpb.DELETE {
					return nil, nil
				}
			}
		case <-lost:
			return nil, fmt.Errorf("node's waiter lease lost: %w", ErrUnavailable)
		case <-e.drain.Done():
			return nil, ErrClosed
		case <-deadline.Done():
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, a.waitedOut()
		}
	}
}

// changedSince reads the key r waits on, and reports whether it changed
// since r's read: the entry ahead gone (or gone and its key taken by a
// later entry), the lock changed hands or granted to us (then the lock is
// returned), or the delay's guard rewritten. The read is linearizable: a
// member's local read can lag what its watches already sent.
func (a *acquirer) changedSince(ctx context.Context, r attemptResult, head bool) (*Lock, bool, error) {
	e := a.e
	var opts []clientv3.OpOption
	if !head {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	octx, done := e.op(ctx)
	resp, err := e.cli.Get(octx, r.watchKey, opts...)
	done()
	if err != nil {
		return nil, false, e.etcdErr(ctx, "check the key waited for", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, true, nil
	}
	kv := resp.Kvs[0]
	switch {
	case r.outcome == delayed:
		return nil, kv.ModRevision > r.watchRev, nil
	case head:
		if l, ok := a.granted(ctx, kv); ok {
			return l, true, nil
		}
		return nil, r.holder == nil || kv.ModRevision != r.holder.Token, nil
	default:
		return nil, r.watchCreated != 0 && kv.CreateRevision != r.watchCreated, nil
	}
}

func (a *acquirer) waitedOut() error {
	if a.lastHolder != nil {
		return &HeldError{Holder: a.lastHolder, Reason: fmt.Sprintf("still held by %q after waiting %s", a.lastHolder.Owner, a.req.Wait)}
	}
	return &HeldError{Reason: fmt.Sprintf("not granted within %s", a.req.Wait)}
}

// leave removes our queue entry, even though the caller has gone, and
// reads the lock in the same txn: once the entry is gone no release can
// grant us the lock, so the read tells for good whether one did before.
// It returns the lock if so.
func (a *acquirer) leave(qkey string) (*Lock, error) {
	ctx, done := a.e.cleanupCtx()
	defer done()
	var resp *clientv3.TxnResponse
	err := a.e.retryCleanup(ctx, func(ctx context.Context) (err error) {
		resp, err = a.e.cli.Txn(ctx).Then(clientv3.OpDelete(qkey), clientv3.OpGet(a.e.lockKey(a.req.Name))).Commit()
		return err
	})
	if err != nil || a.entryUnsure {
		// A txn of unknown outcome may put our entry after this delete
		// (a proposal forwarded by a member that just stopped leading
		// can reach the new leader after our later ones), or the delete
		// failed: sweep the entry later, if it is still ours, so that it
		// does not block the waiters behind it while the node runs (its
		// waiter lease would remove it only then). Its key is not reused
		// meanwhile.
		if a.entry != "" {
			go a.e.sweepEntry(qkey, a.entry)
		}
		if err == nil {
			err = errEntryMayReturn
		}
	}
	if err != nil && !errors.Is(err, errEntryMayReturn) {
		a.e.log.Warn("remove queue entry", "key", qkey, "err", err)
		return nil, err
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		if l, ok := a.granted(ctx, kvs[0]); ok {
			return l, err
		}
	}
	return nil, err
}

// errEntryMayReturn is leave's answer when the queue entry is gone but a
// txn of unknown outcome may put it again: its key must not be reused.
var errEntryMayReturn = errors.New("the queue entry may be put again by a txn of unknown outcome")

// entryValue is our queue entry's value for a txn that puts it at now.
func (a *acquirer) entryValue(now time.Time) string {
	a.entry = mustJSON(a.waiterRecord(now))
	return a.entry
}

// sweepEntry deletes the queue entry at key if it still holds value, once
// any txn of unknown outcome that puts it has been applied or lost: such
// a txn is in etcd's log within an op timeout, or never will be.
func (e *Engine) sweepEntry(key, value string) {
	t := time.NewTimer(e.cfg.OpTimeout)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.stop.Done():
		return
	}
	ctx, done := e.cleanupCtx()
	defer done()
	err := e.retryCleanup(ctx, func(ctx context.Context) error {
		_, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", value)).Then(clientv3.OpDelete(key)).Commit()
		return err
	})
	if err != nil {
		e.log.Warn("sweep queue entry", "key", key, "err", err)
	}
}

// leaseTimes caches one lease's answer across a listing.
type leaseTimes struct {
	at      time.Time
	granted time.Duration
}

// decodeLock renders a lock key with its expiry looked up in etcd.
func (e *Engine) decodeLock(ctx context.Context, kv *mvccpb.KeyValue, expiry map[string]leaseTimes) (*Lock, error) {
	hr, err := decodeHolder(kv)
	if err != nil {
		return nil, err
	}
	name := string(kv.Key[len(e.locksPrefix()):])
	l := hr.toLock(name, kv.ModRevision)
	if t, ok := expiry[hr.Lease]; ok {
		l.ExpiresAt = t.at
		if l.TTL == 0 {
			l.TTL = t.granted
		}
	} else if id, ok := parseLeaseHex(hr.Lease); ok {
		e.fillLease(ctx, l, id)
		if expiry != nil {
			expiry[hr.Lease] = leaseTimes{at: l.ExpiresAt, granted: l.TTL}
		}
	}
	return l, nil
}

// checkSessionOwner refuses an acquire into a session that another
// credential created (see Caller). It costs a read only when there is
// something to check: a session, and a caller that is not an admin. The
// read is local when the member has the session; the txn then requires
// the very key that was read (sessionRev), so a session deleted and made
// anew meanwhile cannot slip through.
func (a *acquirer) checkSessionOwner(ctx context.Context) error {
	c, ok := CallerFrom(ctx)
	if a.session == 0 || !ok || c.Admin {
		return nil
	}
	rec, rev, err := a.e.readSession(ctx, a.req.Session)
	if err != nil {
		return err
	}
	if !mayActOn(ctx, rec.Credential) {
		return fmt.Errorf("session %s was created by another credential: %w", a.req.Session, ErrNotOwner)
	}
	a.sessionRev = rev
	return nil
}
