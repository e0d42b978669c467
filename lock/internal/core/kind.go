package core

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// HoldKind is what one kind of thing makes of an acquire. The Acquirer
// runs the same attempts, queue, waits and leases for every kind
// (acquire.go, queue.go); it asks its kind for what differs: the
// compares, ops and reads of the acquire txn and how to read them
// (holdTxn), and where in the queue the acquire waits (holdQueue).
//
// LockKind is a plain lock's, and the base every other kind embeds,
// overriding what it changes: electionKind (lock/election.go) counts terms,
// seatKind (lock/seats.go) takes one of a semaphore's or a read/write lock's
// seats, setKind (lock/lockset.go) takes several locks at once. A new kind is
// a type of its own that embeds LockKind; the Acquirer needs no change.
type HoldKind interface {
	HoldTxn
	HoldQueue
	// record fills in what the kind keeps in the holder record of a
	// grant (an election's term, a set's names).
	Record(rec *store.Holder)
	// keep notes a grant of l, with holder record rec, in the engine's
	// hold cache.
	Keep(l *hold.Lock, rec store.Holder)
	// endOwn releases a hold of this acquire that the caller will never
	// learn of (see Acquirer.endOwn).
	EndOwn(ctx context.Context, token int64, rec *store.Holder, detail string) error
	// heldError is the refusal of an acquire without wait that r found
	// held; BehindReason the one of an acquire that found waiters ahead.
	HeldError(r AttemptResult) *hold.HeldError
	BehindReason() string
	// FillHolders fills in the expiry of the holders a refusal names.
	FillHolders(ctx context.Context, he *hold.HeldError)
	// WaitedOut is the refusal of a wait that ran out.
	WaitedOut() error
}

// holdTxn is what a kind adds to the acquire txn, and how it reads it.
type HoldTxn interface {
	// prepare readies the next attempt (an election reads its term).
	Prepare(ctx context.Context) error
	// txn builds the whole acquire txn: one hold's (Acquirer.holdTxn,
	// which asks the kind for cmps, grantOps and reads), or a set's.
	Txn(queueKey string, queueRev int64, rec store.Holder, now time.Time) AcquireTxn
	// cmps, grantOps and reads are what the kind adds to one hold's
	// txn: compares, ops that begin the hold, and reads of what is in
	// its way.
	Cmps() []clientv3.Cmp
	GrantOps(rec store.Holder) []clientv3.Op
	Reads(t *AcquireTxn)
	// analyse reads a failed attempt's else branch
	// (Acquirer.AnalyseHold, or a set's).
	Analyse(ctx context.Context, resp *clientv3.TxnResponse, t *AcquireTxn, queueKey string) (AttemptResult, error)
	// inWay reads what the kind's reads found in the way of a hold's
	// attempt: settled when r is the attempt's outcome; otherwise
	// blocker is the hold in the way (nil when the hold looks free),
	// given lockKVs, the read of the hold's own key.
	InWay(resp *clientv3.TxnResponse, t *AcquireTxn, queueKey string, lockKVs []*mvccpb.KeyValue) (r AttemptResult, settled bool, blocker []*mvccpb.KeyValue)
	// entryGone is a queued attempt's outcome when its entry is gone:
	// dequeued, unless a release granted the hold in a way the lock key
	// did not show (a seat the release chose).
	EntryGone(ctx context.Context) (AttemptResult, error)
	// repeatable says whether a second acquire in the session that holds
	// the thing gets that hold back (SameHolder): not where a session may
	// hold several (permits, read holds).
	Repeatable() bool
}

// holdQueue is where a kind's acquire waits in the thing's queue, and
// what it waits on.
type HoldQueue interface {
	// EntryPrefix is where the queue entry goes; AheadPrefix where the
	// entries it waits behind are; NoneAheadCmp holds when none there is
	// older than an entry created at queueRev.
	EntryPrefix() string
	AheadPrefix() string
	NoneAheadCmp(qpfx string, queueRev int64) clientv3.Cmp
	// headKey is what the head of the queue waits on.
	HeadKey() string
	// lockNames are the locks of the engine the acquire's entries wait
	// for; entryKeys its entries, given the first (qkey).
	LockNames() []string
	EntryKeys(qkey string) []string
	// holderReads read what may hold a grant to the acquire.
	HolderReads() []clientv3.Op
	// entry fills in what the kind keeps in its queue entry, and says
	// whether a release may grant the entry a hold (hold.WaiterRecord.Grant).
	Entry(wr *hold.WaiterRecord) (grantable bool)
	// ours reports whether hold is a hold this acquire asked for; took
	// notes that the acquire was granted its hold at key.
	Ours(hold string) bool
	Took(key string)
	// look reads, without a txn, what a queued attempt would find
	// (queuelook.go); aheadTookLock tells with no read what a waiter
	// whose entry ahead left waits for next, when it can.
	Look(ctx context.Context, qkey string, queueRev int64) (r AttemptResult, ok bool, err error)
	AheadTookLock(left int64) (AttemptResult, bool)
	// ChangedSince reads what r waits on (as the head of the queue,
	// headKey, with head), and reports whether it changed since r's read
	// (LockKind's: Acquirer.keyChanged).
	ChangedSince(ctx context.Context, r AttemptResult, head bool) (*hold.Lock, bool, error)
	// waitsAtPlace says whether an acquire in a session waits at the
	// session's place (place.go).
	WaitsAtPlace() bool
}

// LockKind is a plain lock's kind: one key, one hold, one queue.
type LockKind struct{ A *Acquirer }

func (k *LockKind) Prepare(context.Context) error { return nil }

func (k *LockKind) Record(*store.Holder) {}

func (k *LockKind) Txn(queueKey string, queueRev int64, rec store.Holder, now time.Time) AcquireTxn {
	return k.A.holdTxn(queueKey, queueRev, rec, now)
}

func (k *LockKind) Cmps() []clientv3.Cmp { return nil }

func (k *LockKind) GrantOps(store.Holder) []clientv3.Op { return nil }

func (k *LockKind) Reads(*AcquireTxn) {}

func (k *LockKind) Analyse(ctx context.Context, resp *clientv3.TxnResponse, t *AcquireTxn, queueKey string) (AttemptResult, error) {
	return k.A.AnalyseHold(ctx, resp, t, queueKey)
}

func (k *LockKind) InWay(_ *clientv3.TxnResponse, _ *AcquireTxn, _ string, lockKVs []*mvccpb.KeyValue) (AttemptResult, bool, []*mvccpb.KeyValue) {
	return AttemptResult{}, false, lockKVs
}

func (k *LockKind) EntryGone(context.Context) (AttemptResult, error) {
	return AttemptResult{Outcome: Dequeued}, nil
}

func (k *LockKind) Repeatable() bool { return true }

func (k *LockKind) Keep(l *hold.Lock, rec store.Holder) { k.A.E.Holds.Put(k.A.Seat, l.Token, rec) }

func (k *LockKind) EndOwn(ctx context.Context, token int64, rec *store.Holder, detail string) error {
	a := k.A
	if rec != nil {
		return a.E.commitEnd(ctx, a.Seat, token, *rec, nil, store.EventReleased, detail)
	}
	return a.E.EndHold(ctx, a.Seat, token, store.EventReleased, detail)
}

func (k *LockKind) HeldError(r AttemptResult) *hold.HeldError {
	return &hold.HeldError{Holder: r.Holder, Reason: "held by " + strconv.Quote(r.Holder.Owner)}
}

func (k *LockKind) BehindReason() string { return "being handed to a queued waiter" }

func (k *LockKind) FillHolders(ctx context.Context, he *hold.HeldError) {
	if he.Holder != nil && he.Holder.ExpiresAt.IsZero() && len(he.Holders) == 0 {
		if id, ok := store.ParseLeaseHex(k.A.LastHolderLease); ok {
			k.A.E.FillLease(ctx, he.Holder, id)
		}
	}
}

func (k *LockKind) WaitedOut() error {
	a := k.A
	if a.LastHolder != nil {
		return &hold.HeldError{Holder: a.LastHolder, Reason: fmt.Sprintf("still held by %q after waiting %s", a.LastHolder.Owner, a.Req.Wait)}
	}
	return &hold.HeldError{Reason: fmt.Sprintf("not granted within %s", a.Req.Wait)}
}

func (k *LockKind) EntryPrefix() string { return k.A.E.Keys.Queue(k.A.Req.Name) }

func (k *LockKind) AheadPrefix() string { return k.A.E.Keys.Queue(k.A.Req.Name) }

// NoneAheadCmp: a compare over a range holds for every key in it, so
// over the whole queue, which holds our own entry, one compare says that
// no entry is older than ours.
func (k *LockKind) NoneAheadCmp(qpfx string, queueRev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(qpfx), ">", queueRev-1).WithPrefix()
}

func (k *LockKind) HeadKey() string { return k.A.E.Keys.Lock(k.A.Req.Name) }

func (k *LockKind) LockNames() []string { return []string{k.A.Req.Name} }

func (k *LockKind) EntryKeys(qkey string) []string {
	if qkey == "" {
		return nil
	}
	return []string{qkey}
}

func (k *LockKind) HolderReads() []clientv3.Op {
	return []clientv3.Op{clientv3.OpGet(k.A.E.Keys.Lock(k.A.Req.Name))}
}

func (k *LockKind) Entry(*hold.WaiterRecord) bool { return true }

func (k *LockKind) Ours(hold string) bool { return hold == k.A.Hold }

func (k *LockKind) Took(string) {}

func (k *LockKind) Look(ctx context.Context, qkey string, queueRev int64) (AttemptResult, bool, error) {
	return k.A.lookHold(ctx, qkey, queueRev)
}

func (k *LockKind) ChangedSince(ctx context.Context, r AttemptResult, head bool) (*hold.Lock, bool, error) {
	return k.A.keyChanged(ctx, r, head)
}

func (k *LockKind) WaitsAtPlace() bool { return true }
