package lock

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lock set is several ordinary locks taken all or nothing, by one
// acquirer of the engine, of its own kind (setKind): its attempt is the lock's
// once per member in one txn (setKind.txn), so every member is granted at one
// revision, and every member's token is that revision. Each member is an
// ordinary lock: its holder record, its own hold ID (made of the set's:
// memberRecord), its own acquired and end events, its queue. The members
// share one lease (or session), and their records name the whole set
// (store.Holder.Set).
//
// A set that waits joins every member's queue in the txn of its first
// attempt: its entries share that txn's revision. Single locks and sets
// are then in one total order by revision, and since a waiter holds
// nothing while it waits, no two can deadlock: the oldest waiter of all
// heads every queue it is in, and is granted once its locks are free.
// Its entries carry the set's grant, and a release hands it over only
// with every other lock of the set (handover.go, setHeadCmps), never one
// lock alone: a release that leaves another lock of the set held only
// frees its own, and the set, at the head of that queue, keeps the
// waiters behind it waiting until it is granted.

// Limits of a lock set (docs/API.md, Lock sets).
const (
	MinSetNames = 2
	MaxSetNames = 64
)

// LockSetRequest asks for every lock of Names at once; the other fields
// are AcquireRequest's. A set has no lock-delay.
type LockSetRequest struct {
	Names    []string
	Owner    string
	TTL      time.Duration
	Session  string
	Wait     time.Duration
	Metadata map[string]string
}

// LockSet is a granted lock set: every lock of Names, in that order in
// Locks, held with Token.
type LockSet struct {
	Names []string
	Token int64
	Locks []*Lock
}

// checkNames checks a lock set's names: MinSetNames to MaxSetNames
// distinct lock names.
func checkNames(names []string) error {
	if len(names) < MinSetNames || len(names) > MaxSetNames {
		return hold.Invalid("names", "must list %d to %d lock names, not %d", MinSetNames, MaxSetNames, len(names))
	}
	seen := make(map[string]int, len(names))
	for i, n := range names {
		if err := store.CheckName("names["+strconv.Itoa(i)+"]", n); err != nil {
			return hold.Invalid("names", "%v", err)
		}
		if j, ok := seen[n]; ok {
			return hold.Invalid("names", "names[%d] repeats names[%d] (%q): a set names each lock once", i, j, n)
		}
		seen[n] = i
	}
	return nil
}

// AcquireSet takes every lock of req.Names for the caller in one etcd
// transaction, all with one fencing token, or none of them. fresh is
// false when req.Session already held this very set. When a lock is held
// it queues for up to req.Wait in every member's queue at once, served in
// one order with single locks, then returns a *HeldError whose Holders
// are the locks held by others. Each member is an ordinary lock (Get,
// Renew, Release and Revoke work on it); ReleaseSet ends them together.
func (e *Engine) AcquireSet(ctx context.Context, req LockSetRequest) (*LockSet, bool, error) {
	if err := checkNames(req.Names); err != nil {
		return nil, false, err
	}
	names := slices.Clone(req.Names)
	l, fresh, err := e.acquire(ctx, AcquireRequest{
		Name: names[0], Owner: req.Owner, TTL: req.TTL, Session: req.Session, Wait: req.Wait, Metadata: req.Metadata,
	}, func(base lockKind) (holdKind, error) { return &setKind{lockKind: base, e: e, members: names}, nil }, names)
	if err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			return nil, false, err
		}
		if store.TooLarge(err) {
			// etcd refused the txn whole, before applying any of it.
			return nil, false, hold.Invalid("names", "etcd takes fewer operations in one transaction (its --max-txn-ops) than a set of %d locks needs: "+
				"name fewer locks, or run etcd with --max-txn-ops 512 or more (docs/API.md, Lock sets)", len(names))
		}
		return nil, false, fmt.Errorf("acquire lock set %s: %w", setLabel(names), err)
	}
	return setOf(names, l), fresh, nil
}

// setOf is the set whose first member's lock is l: the members differ
// only in name.
func setOf(names []string, l *Lock) *LockSet {
	s := &LockSet{Names: names, Token: l.Token, Locks: make([]*Lock, len(names))}
	for i, n := range names {
		m := *l
		m.Name = n
		s.Locks[i] = &m
	}
	return s
}

// setLabel names a set in errors and logs.
func setLabel(names []string) string { return strconv.Quote(strings.Join(names, ",")) }

// sameSet reports whether a and b name the same locks, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

// setKind is a lock set's kind: several ordinary locks taken by one
// acquire, all or none (see above).
type setKind struct {
	lockKind
	// e ends a set's holds (locksetend.go).
	e *Engine
	// members are the set's names; guardRevs the ModRevisions of spent
	// guards of members, for the next attempt to replace (guardCmp).
	// lastHolders and lastHolderLeases are the members' holders the
	// latest failed attempt saw.
	members          []string
	guardRevs        map[string]int64
	lastHolders      []*Lock
	lastHolderLeases []string
}

func (k *setKind) record(rec *store.Holder) { rec.Set = k.members }

// keep caches each member's hold.
func (k *setKind) keep(l *Lock, rec store.Holder) {
	for i, m := range k.members {
		k.a.e.holds.put(m, l.Token, memberRecord(rec, i))
	}
}

func (k *setKind) endOwn(ctx context.Context, token int64, _ *store.Holder, detail string) error {
	return k.e.endSet(ctx, k.members, token, detail)
}

func (k *setKind) heldError(r attemptResult) *HeldError {
	held := make([]string, len(r.holders))
	for i, h := range r.holders {
		held[i] = fmt.Sprintf("%q by %q", h.Name, h.Owner)
	}
	return &HeldError{Holders: r.holders, Reason: "held: " + strings.Join(held, ", ")}
}

func (k *setKind) behindReason() string { return "acquires queued for its locks come first" }

// fillHolders fills in the members' holders; they may share leases
// (another set's members do): one read each.
func (k *setKind) fillHolders(ctx context.Context, he *HeldError) {
	k.lockKind.fillHolders(ctx, he)
	filled := map[string]*Lock{}
	for i, h := range he.Holders {
		id, ok := store.ParseLeaseHex(k.lastHolderLeases[i])
		if !ok || !h.ExpiresAt.IsZero() {
			continue
		}
		if f, ok := filled[k.lastHolderLeases[i]]; ok {
			h.TTL, h.ExpiresAt = f.TTL, f.ExpiresAt
			continue
		}
		k.a.e.fillLease(ctx, h, id)
		filled[k.lastHolderLeases[i]] = h
	}
}

func (k *setKind) waitedOut() error {
	if len(k.lastHolders) == 0 {
		return k.lockKind.waitedOut()
	}
	he := k.heldError(attemptResult{holders: k.lastHolders})
	he.Reason = fmt.Sprintf("still %s after waiting %s", he.Reason, k.a.req.Wait)
	return he
}

// headKey: a set has no head to wait as. It waits on every key in its
// way (attemptResult.keys), and a put of any may be its grant.
func (k *setKind) headKey() string { return "" }

func (k *setKind) lockNames() []string { return k.members }

func (k *setKind) entry(wr *hold.WaiterRecord) bool {
	wr.Set = k.members
	return true
}

// look tells nothing: a set's attempt reads each member itself.
func (k *setKind) look(context.Context, string, int64) (attemptResult, bool, error) {
	return attemptResult{}, false, nil
}

func (k *setKind) aheadTookLock(int64) (attemptResult, bool) { return attemptResult{}, false }

// changedSince: a set looks again at every key it waits on; its attempt
// tells.
func (k *setKind) changedSince(context.Context, attemptResult, bool) (*Lock, bool, error) {
	return nil, true, nil
}

// waitsAtPlace: a set waits in every member's queue, under the node's
// waiter lease; a session keeps no place for it.
func (k *setKind) waitsAtPlace() bool { return false }

// txn is the acquire txn of a lock set: for each member, the compares and
// ops of a lock's acquire (lock free, nobody queued or nobody ahead, the
// lock-delay guard as last read; the holder record and acquired event;
// the entry's put or delete), in one txn, so that every member is granted
// at one revision or none is. queueKey is our entry in the first
// member's queue; the others share its key's last element.
func (k *setKind) txn(queueKey string, queueRev int64, rec store.Holder, now time.Time) acquireTxn {
	e := k.a.e
	var t acquireTxn
	t.members = make([]memberRefs, len(k.members))
	leaseID, _ := store.ParseLeaseHex(rec.Lease)
	entries, value := k.entryKeys(queueKey), ""
	if q := k.a.enqueue; queueKey == "" && q != nil {
		entries, value = k.entryKeys(q.key), k.a.entryValue(now)
	}
	if k.a.session == 0 {
		t.OnSuccess(e.leaseMarkOp(leaseID))
	}
	for i, m := range k.members {
		lkey, gkey, qpfx := e.keys.Lock(m), e.keys.Delay(m), e.keys.Queue(m)
		mrec := memberRecord(rec, i)
		t.If(clientv3.Compare(clientv3.CreateRevision(lkey), "=", 0), k.guardCmp(m))
		t.OnSuccess(clientv3.OpPut(lkey, store.MustJSON(mrec), clientv3.WithLease(leaseID)))
		if !mrec.Derived {
			t.OnSuccess(clientv3.OpPut(e.keys.Acquired(m, mrec.Hold), store.MustJSON(mrec.BegunEvent(m))))
		}
		if k.guardRevs[m] != 0 {
			t.OnSuccess(clientv3.OpDelete(gkey)) // a spent guard
		}
		mr := &t.members[i]
		mr.lock, mr.guard = t.OnFailure(clientv3.OpGet(lkey)), t.OnFailure(clientv3.OpGet(gkey))
		if queueKey == "" {
			t.If(clientv3.Compare(clientv3.CreateRevision(qpfx), "=", 0).WithPrefix())
			mr.queued = t.OnFailure(clientv3.OpGet(qpfx, clientv3.WithPrefix(), clientv3.WithCountOnly()))
			if k.a.enqueue != nil {
				mr.ahead = t.OnFailure(newestEntry(qpfx))
				t.OnFailure(clientv3.OpPut(entries[i], value, clientv3.WithLease(k.a.enqueue.lease)))
			}
			continue
		}
		t.If(clientv3.Compare(clientv3.CreateRevision(entries[i]), "=", queueRev),
			clientv3.Compare(clientv3.CreateRevision(qpfx), ">", queueRev-1).WithPrefix())
		t.OnSuccess(clientv3.OpDelete(entries[i]))
		mr.entry = t.OnFailure(clientv3.OpGet(entries[i], clientv3.WithKeysOnly()))
		mr.pred = t.OnFailure(newestEntry(qpfx, clientv3.WithMaxCreateRev(queueRev-1)))
	}
	k.setSessionOps(&t)
	return t
}

// ours reports whether hold is a hold of this acquire's: one of its
// members'.
func (k *setKind) ours(hold string) bool {
	rest, ok := strings.CutPrefix(hold, k.a.hold+".")
	return ok && rest != ""
}

// newestEntry reads the key of the newest entry under a queue prefix that
// opts leave in.
func newestEntry(qpfx string, opts ...clientv3.OpOption) clientv3.Op {
	return clientv3.OpGet(qpfx, append([]clientv3.OpOption{clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()}, opts...)...)
}

// setSessionOps adds to a set's acquire txn what a session asks: its key
// compared (see acquireCmps) and read in both branches, and with
// MaxLocksPerSession each member counted in a tally shard of its own.
func (k *setKind) setSessionOps(t *acquireTxn) {
	e := k.a.e
	if k.a.session == 0 {
		return
	}
	skey := e.keys.Session(k.a.req.Session)
	if k.a.sessionRev != 0 {
		t.If(clientv3.Compare(clientv3.CreateRevision(skey), "=", k.a.sessionRev))
	} else {
		t.If(clientv3.Compare(clientv3.CreateRevision(skey), ">", 0))
	}
	if e.cfg.MaxLocksPerSession > 0 {
		for i := range k.members {
			t.OnSuccess(clientv3.OpPut(e.keys.TallyShard(k.a.req.Session, "acquired", i), "", clientv3.WithLease(k.a.session)))
		}
		k.a.tallyReads(t)
	}
	t.won.session = t.OnSuccess(clientv3.OpGet(skey))
	t.lost.session = t.OnFailure(clientv3.OpGet(skey))
}

// guardCmp is a member's lock-delay compare: no guard, or the spent one
// the last attempt read (guardRevs), which the grant deletes.
func (k *setKind) guardCmp(m string) clientv3.Cmp {
	gkey := k.a.e.keys.Delay(m)
	if rev := k.guardRevs[m]; rev != 0 {
		return clientv3.Compare(clientv3.ModRevision(gkey), "=", rev)
	}
	return clientv3.Compare(clientv3.CreateRevision(gkey), "=", 0)
}

// entryKeys are our queue entries, given the first member's (qkey): one
// per member, all with qkey's last element. "" gives none.
func (k *setKind) entryKeys(qkey string) []string {
	if qkey == "" {
		return nil
	}
	id := strings.TrimPrefix(qkey, k.a.e.keys.Queue(k.members[0]))
	keys := make([]string, len(k.members))
	for i, m := range k.members {
		keys[i] = k.a.e.keys.Queue(m) + id
	}
	return keys
}

// holderReads read what may hold our grant: every member.
func (k *setKind) holderReads() []clientv3.Op {
	ops := make([]clientv3.Op, len(k.members))
	for i, m := range k.members {
		ops[i] = clientv3.OpGet(k.a.e.keys.Lock(m))
	}
	return ops
}

// analyse reads a lock set's failed acquire txn: what stands in the
// way of each member. A wait then watches every key in the way (r.keys):
// the lock's key of a member held by another, the entry just ahead of
// ours in a member's queue, a member's lock-delay guard; any change of
// one wakes it to attempt again.
func (k *setKind) analyse(ctx context.Context, resp *clientv3.TxnResponse, t *acquireTxn, queueKey string) (attemptResult, error) {
	if k.a.session != 0 && len(t.lost.session.KVs(resp)) == 0 {
		return attemptResult{outcome: noSession}, nil
	}
	r := attemptResult{outcome: retryNow, watchRev: seenBefore(resp)}
	if queueKey == "" && k.a.enqueue != nil {
		r.enqueuedRev = resp.Header.Revision
	}
	k.a.lastHolder, k.lastHolders, k.lastHolderLeases = nil, nil, nil
	var own, nDelayed, nBehind int
	for i, m := range k.members {
		mr := t.members[i]
		if mr.entry.Ok() && len(mr.entry.KVs(resp)) == 0 {
			return attemptResult{outcome: dequeued}, nil
		}
		queued := mr.queued.Count(resp)
		r.queuedBefore = max(r.queuedBefore, queued)
		pred := ""
		for _, at := range []store.Ref{mr.ahead, mr.pred} {
			if kvs := at.KVs(resp); len(kvs) > 0 {
				pred = string(kvs[0].Key)
			}
		}
		if kvs := mr.lock.KVs(resp); len(kvs) > 0 {
			kv := kvs[0]
			hr, err := store.DecodeHolder(kv)
			if err != nil {
				return attemptResult{}, err
			}
			if k.ours(hr.Hold) {
				if l, ok := k.a.granted(ctx, kv); ok { // a txn of ours of unknown outcome
					return attemptResult{outcome: won, lock: l}, nil
				}
			}
			holder := hold.ToLock(hr, m, kv.ModRevision)
			if k.a.session != 0 && hr.Session == k.a.req.Session && sameSet(hr.Set, k.members) {
				own++
				r.lock = holder
			}
			k.lastHolders, k.lastHolderLeases = append(k.lastHolders, holder), append(k.lastHolderLeases, hr.Lease)
			r.keys = append(r.keys, cmp.Or(pred, k.a.e.keys.Lock(m)))
			continue
		}
		if until, cause, ok, err := k.memberGuard(mr.guard.KVs(resp), m); err != nil {
			return attemptResult{}, err
		} else if ok {
			nDelayed++
			if r.retryAt.IsZero() || until.Before(r.retryAt) {
				r.retryAt, r.delayCause = until, cause
			}
			r.keys = append(r.keys, k.a.e.keys.Delay(m))
			continue
		}
		if pred != "" || queued > 0 {
			nBehind++
			if pred != "" {
				r.keys = append(r.keys, pred)
			}
		}
	}
	return k.setOutcome(ctx, r, own, nDelayed, nBehind), nil
}

// setOutcome is what a set's failed attempt found, given how many members
// its session holds as this very set (own), and how many are under
// lock-delay or have entries ahead of ours.
func (k *setKind) setOutcome(ctx context.Context, r attemptResult, own, nDelayed, nBehind int) attemptResult {
	switch {
	case own == len(k.members):
		k.a.e.fillLease(ctx, r.lock, k.a.session)
		r.outcome = sameHolder
		r.lock = setOf(k.members, r.lock).Locks[0]
	case len(k.lastHolders) > 0:
		r.outcome, r.holder, r.holders = heldBy, k.lastHolders[0], k.lastHolders
		k.a.lastHolder = r.holder
	case nDelayed > 0:
		r.outcome = delayed
	case nBehind > 0:
		r.outcome = behind
	}
	if len(r.keys) > 0 {
		r.watchKey = r.keys[0]
	}
	return r
}

// memberGuard reads a set member's lock-delay guard (kvs) from a failed
// attempt. ok is set while the delay forbids the grant, until when it
// ends: for a guard the expiry recorder has not stamped yet, from now
// (the wait also watches the guard, so the stamp wakes it). A spent guard
// is noted for the next attempt to replace (guardCmp).
func (k *setKind) memberGuard(kvs []*mvccpb.KeyValue, m string) (until time.Time, cause EventType, ok bool, err error) {
	if len(kvs) == 0 {
		delete(k.guardRevs, m)
		return time.Time{}, "", false, nil
	}
	var dr hold.DelayRecord
	if err := json.Unmarshal(kvs[0].Value, &dr); err != nil {
		return time.Time{}, "", false, fmt.Errorf("decode lock-delay guard: %w", err)
	}
	switch {
	case dr.Until == nil:
		return time.Now().Add(dr.LockDelay), EventExpired, true, nil
	case time.Now().Before(*dr.Until):
		return *dr.Until, dr.Cause, true, nil
	}
	if k.guardRevs == nil {
		k.guardRevs = map[string]int64{}
	}
	k.guardRevs[m] = kvs[0].ModRevision
	return time.Time{}, "", false, nil
}
