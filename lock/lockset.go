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
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lock set is several ordinary locks taken all or nothing, by one
// Acquirer of the engine, of its own kind (setKind): its attempt is the lock's
// once per member in one txn (setKind.txn), so every member is granted at one
// revision, and every member's token is that revision. Each member is an
// ordinary lock: its holder record, its own hold ID (made of the set's:
// MemberRecord), its own acquired and end events, its queue. The members
// share one lease (or session), and their records name the whole set
// (store.Holder.Set).
//
// A set that waits joins every member's queue in the txn of its first
// attempt: its entries share that txn's revision. Single locks and sets
// are then in one total order by revision, and since a waiter holds
// nothing while it waits, no two can deadlock: the oldest waiter of all
// heads every queue it is in, and is granted once its locks are free.
// Its entries carry the set's grant, and a release hands it over only
// with every other lock of the set (internal/core/handover.go, setHeadCmps), never one
// lock alone: a release that leaves another lock of the set held only
// frees its own, and the set, at the head of that queue, keeps the
// waiters behind it waiting until it is granted.

// LockSetRequest asks for every lock of Names at once; the other fields
// are AcquireRequest's. A set has no lock-delay; its MinHold is each
// member's.
type LockSetRequest struct {
	Names    []string
	Owner    string
	TTL      time.Duration
	Session  string
	Wait     time.Duration
	MinHold  time.Duration
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
		Name: names[0], Owner: req.Owner, TTL: req.TTL, Session: req.Session, Wait: req.Wait, MinHold: req.MinHold, Metadata: req.Metadata,
	}, func(base core.LockKind) (core.HoldKind, error) {
		return &setKind{LockKind: base, e: e, members: names}, nil
	}, names)
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
	core.LockKind
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

func (k *setKind) Record(rec *store.Holder) { rec.Set = k.members }

// keep caches each member's hold.
func (k *setKind) Keep(l *Lock, rec store.Holder) {
	for i, m := range k.members {
		k.A.E.Holds.Put(m, l.Token, core.MemberRecord(rec, i))
	}
}

func (k *setKind) HeldError(r core.AttemptResult) *HeldError {
	held := make([]string, len(r.Holders))
	for i, h := range r.Holders {
		held[i] = fmt.Sprintf("%q by %q", h.Name, h.Owner)
	}
	return &HeldError{Holders: r.Holders, Reason: "held: " + strings.Join(held, ", ")}
}

func (k *setKind) BehindReason() string { return "acquires queued for its locks come first" }

// FillHolders fills in the members' holders; they may share leases
// (another set's members do): one read each.
func (k *setKind) FillHolders(ctx context.Context, he *HeldError) {
	k.LockKind.FillHolders(ctx, he)
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
		k.A.E.FillLease(ctx, h, id)
		filled[k.lastHolderLeases[i]] = h
	}
}

func (k *setKind) WaitedOut() error {
	if len(k.lastHolders) == 0 {
		return k.LockKind.WaitedOut()
	}
	he := k.HeldError(core.AttemptResult{Holders: k.lastHolders})
	he.Reason = fmt.Sprintf("still %s after waiting %s", he.Reason, k.A.Req.Wait)
	return he
}

// headKey: a set has no head to wait as. It waits on every key in its
// way (AttemptResult.keys), and a put of any may be its grant.
func (k *setKind) HeadKey() string { return "" }

func (k *setKind) LockNames() []string { return k.members }

func (k *setKind) Entry(wr *hold.WaiterRecord) bool {
	wr.Set = k.members
	return true
}

// look tells nothing: a set's attempt reads each member itself.
func (k *setKind) Look(context.Context, string, int64) (core.AttemptResult, bool, error) {
	return core.AttemptResult{}, false, nil
}

func (k *setKind) AheadTookLock(int64) (core.AttemptResult, bool) { return core.AttemptResult{}, false }

// ChangedSince: a set looks again at every key it waits on; its attempt
// tells.
func (k *setKind) ChangedSince(context.Context, core.AttemptResult, bool) (*Lock, bool, error) {
	return nil, true, nil
}

// waitsAtPlace: a set waits in every member's queue, under the node's
// waiter lease; a session keeps no place for it.
func (k *setKind) WaitsAtPlace() bool { return false }

// txn is the acquire txn of a lock set: for each member, the compares and
// ops of a lock's acquire (lock free, nobody queued or nobody ahead, the
// lock-delay guard as last read; the holder record and acquired event;
// the entry's put or delete), in one txn, so that every member is granted
// at one revision or none is. queueKey is our entry in the first
// member's queue; the others share its key's last element.
func (k *setKind) Txn(queueKey string, queueRev int64, rec store.Holder, now time.Time) core.AcquireTxn {
	e := k.A.E
	var t core.AcquireTxn
	t.Members = make([]core.MemberRefs, len(k.members))
	leaseID, _ := store.ParseLeaseHex(rec.Lease)
	entries, value := k.EntryKeys(queueKey), ""
	if q := k.A.Enqueue; queueKey == "" && q != nil {
		entries, value = k.EntryKeys(q.Key), k.A.EntryValue(now)
	}
	if k.A.Session == 0 {
		t.OnSuccess(e.LeaseMarkOp(leaseID))
	}
	for i, m := range k.members {
		lkey, gkey, qpfx := e.Keys.Lock(m), e.Keys.Delay(m), e.Keys.Queue(m)
		mrec := core.MemberRecord(rec, i)
		t.If(clientv3.Compare(clientv3.CreateRevision(lkey), "=", 0), k.guardCmp(m))
		t.OnSuccess(clientv3.OpPut(lkey, store.MustJSON(mrec), clientv3.WithLease(leaseID)))
		if !mrec.Derived {
			t.OnSuccess(clientv3.OpPut(e.Keys.Acquired(m, mrec.Hold), store.MustJSON(mrec.BegunEvent(m))))
		}
		switch {
		case mrec.Guarded(): // its at-least window's
			t.OnSuccess(clientv3.OpPut(gkey, store.MustJSON(hold.GuardOf(mrec))))
		case k.guardRevs[m] != 0:
			t.OnSuccess(clientv3.OpDelete(gkey)) // a spent guard
		}
		mr := &t.Members[i]
		mr.Lock, mr.Guard = t.OnFailure(clientv3.OpGet(lkey)), t.OnFailure(clientv3.OpGet(gkey))
		if queueKey == "" {
			t.If(clientv3.Compare(clientv3.CreateRevision(qpfx), "=", 0).WithPrefix())
			mr.Queued = t.OnFailure(clientv3.OpGet(qpfx, clientv3.WithPrefix(), clientv3.WithCountOnly()))
			if k.A.Enqueue != nil {
				mr.Ahead = t.OnFailure(newestEntry(qpfx))
				t.OnFailure(clientv3.OpPut(entries[i], value, clientv3.WithLease(k.A.Enqueue.Lease)))
			}
			continue
		}
		t.If(clientv3.Compare(clientv3.CreateRevision(entries[i]), "=", queueRev),
			clientv3.Compare(clientv3.CreateRevision(qpfx), ">", queueRev-1).WithPrefix())
		t.OnSuccess(clientv3.OpDelete(entries[i]))
		mr.Entry = t.OnFailure(clientv3.OpGet(entries[i], clientv3.WithKeysOnly()))
		mr.Pred = t.OnFailure(newestEntry(qpfx, clientv3.WithMaxCreateRev(queueRev-1)))
	}
	k.setSessionOps(&t)
	return t
}

// ours reports whether hold is a hold of this acquire's: one of its
// members'.
func (k *setKind) Ours(hold string) bool {
	rest, ok := strings.CutPrefix(hold, k.A.Hold+".")
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
func (k *setKind) setSessionOps(t *core.AcquireTxn) {
	e := k.A.E
	if k.A.Session == 0 {
		return
	}
	skey := e.Keys.Session(k.A.Req.Session)
	if k.A.SessionRev != 0 {
		t.If(clientv3.Compare(clientv3.CreateRevision(skey), "=", k.A.SessionRev))
	} else {
		t.If(clientv3.Compare(clientv3.CreateRevision(skey), ">", 0))
	}
	if e.Cfg.MaxLocksPerSession > 0 {
		for i := range k.members {
			t.OnSuccess(clientv3.OpPut(e.Keys.TallyShard(k.A.Req.Session, "acquired", i), "", clientv3.WithLease(k.A.Session)))
		}
		k.A.TallyReads(t)
	}
	t.Won.Session = t.OnSuccess(clientv3.OpGet(skey))
	t.Lost.Session = t.OnFailure(clientv3.OpGet(skey))
}

// guardCmp is a member's lock-delay compare: no guard, or the spent one
// the last attempt read (guardRevs), which the grant deletes.
func (k *setKind) guardCmp(m string) clientv3.Cmp {
	gkey := k.A.E.Keys.Delay(m)
	if rev := k.guardRevs[m]; rev != 0 {
		return clientv3.Compare(clientv3.ModRevision(gkey), "=", rev)
	}
	return clientv3.Compare(clientv3.CreateRevision(gkey), "=", 0)
}

// entryKeys are our queue entries, given the first member's (qkey): one
// per member, all with qkey's last element. "" gives none.
func (k *setKind) EntryKeys(qkey string) []string {
	if qkey == "" {
		return nil
	}
	id := strings.TrimPrefix(qkey, k.A.E.Keys.Queue(k.members[0]))
	keys := make([]string, len(k.members))
	for i, m := range k.members {
		keys[i] = k.A.E.Keys.Queue(m) + id
	}
	return keys
}

// holderReads read what may hold our grant: every member.
func (k *setKind) HolderReads() []clientv3.Op {
	ops := make([]clientv3.Op, len(k.members))
	for i, m := range k.members {
		ops[i] = clientv3.OpGet(k.A.E.Keys.Lock(m))
	}
	return ops
}

// analyse reads a lock set's failed acquire txn: what stands in the
// way of each member. A wait then watches every key in the way (r.keys):
// the lock's key of a member held by another, the entry just ahead of
// ours in a member's queue, a member's lock-delay guard; any change of
// one wakes it to attempt again.
func (k *setKind) Analyse(ctx context.Context, resp *clientv3.TxnResponse, t *core.AcquireTxn, queueKey string) (core.AttemptResult, error) {
	if k.A.Session != 0 && k.A.E.SessionGone(k.A.Req.Session, k.A.SessionRev, t.Lost.Session.KVs(resp)) {
		return core.AttemptResult{Outcome: core.NoSession}, nil
	}
	r := core.AttemptResult{Outcome: core.RetryNow, WatchRev: core.SeenBefore(resp)}
	if queueKey == "" && k.A.Enqueue != nil {
		r.EnqueuedRev = resp.Header.Revision
	}
	k.A.LastHolder, k.lastHolders, k.lastHolderLeases = nil, nil, nil
	var own, nDelayed, nBehind int
	for i, m := range k.members {
		mr := t.Members[i]
		if mr.Entry.Ok() && len(mr.Entry.KVs(resp)) == 0 {
			return core.AttemptResult{Outcome: core.Dequeued}, nil
		}
		queued := mr.Queued.Count(resp)
		r.QueuedBefore = max(r.QueuedBefore, queued)
		pred := ""
		for _, at := range []store.Ref{mr.Ahead, mr.Pred} {
			if kvs := at.KVs(resp); len(kvs) > 0 {
				pred = string(kvs[0].Key)
			}
		}
		if kvs := mr.Lock.KVs(resp); len(kvs) > 0 {
			kv := kvs[0]
			hr, err := store.DecodeHolder(kv)
			if err != nil {
				return core.AttemptResult{}, err
			}
			if k.Ours(hr.Hold) {
				if l, ok := k.A.Granted(ctx, kv); ok { // a txn of ours of unknown outcome
					return core.AttemptResult{Outcome: core.Won, Lock: l}, nil
				}
			}
			holder := hold.ToLock(hr, m, kv.ModRevision)
			if k.A.Session != 0 && hr.Session == k.A.Req.Session && sameSet(hr.Set, k.members) {
				own++
				r.Lock = holder
			}
			k.lastHolders, k.lastHolderLeases = append(k.lastHolders, holder), append(k.lastHolderLeases, hr.Lease)
			r.Keys = append(r.Keys, cmp.Or(pred, k.A.E.Keys.Lock(m)))
			continue
		}
		if until, cause, ok, err := k.memberGuard(mr.Guard.KVs(resp), m); err != nil {
			return core.AttemptResult{}, err
		} else if ok {
			nDelayed++
			if r.RetryAt.IsZero() || until.Before(r.RetryAt) {
				r.RetryAt, r.DelayCause = until, cause
			}
			r.Keys = append(r.Keys, k.A.E.Keys.Delay(m))
			continue
		}
		if pred != "" || queued > 0 {
			nBehind++
			if pred != "" {
				r.Keys = append(r.Keys, pred)
			}
		}
	}
	return k.setOutcome(ctx, r, own, nDelayed, nBehind), nil
}

// setOutcome is what a set's failed attempt found, given how many members
// its session holds as this very set (own), and how many are under
// lock-delay or have entries ahead of ours.
func (k *setKind) setOutcome(ctx context.Context, r core.AttemptResult, own, nDelayed, nBehind int) core.AttemptResult {
	switch {
	case own == len(k.members):
		k.A.E.FillLease(ctx, r.Lock, k.A.Session)
		r.Outcome = core.SameHolder
		r.Lock = setOf(k.members, r.Lock).Locks[0]
	case len(k.lastHolders) > 0:
		r.Outcome, r.Holder, r.Holders = core.HeldBy, k.lastHolders[0], k.lastHolders
		k.A.LastHolder = r.Holder
	case nDelayed > 0:
		r.Outcome = core.Delayed
	case nBehind > 0:
		r.Outcome = core.Behind
	}
	if len(r.Keys) > 0 {
		r.WatchKey = r.Keys[0]
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
		return *dr.Ended(time.Now(), EventExpired).Until, EventExpired, true, nil
	case time.Now().Before(*dr.Until):
		return *dr.Until, dr.Cause, true, nil
	}
	if k.guardRevs == nil {
		k.guardRevs = map[string]int64{}
	}
	k.guardRevs[m] = kvs[0].ModRevision
	return time.Time{}, "", false, nil
}
