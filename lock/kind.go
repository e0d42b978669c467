package lock

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

// holdKind is what one kind of thing makes of an acquire. The acquirer
// runs the same attempts, queue, waits and leases for every kind
// (acquire.go, queue.go); it asks its kind for what differs: the
// compares, ops and reads of the acquire txn and how to read them
// (holdTxn), and where in the queue the acquire waits (holdQueue).
//
// lockKind is a plain lock's, and the base every other kind embeds,
// overriding what it changes: electionKind (election.go) counts terms,
// seatKind (seats.go) takes one of a semaphore's or a read/write lock's
// seats, setKind (lockset.go) takes several locks at once. A new kind is
// a type of its own that embeds lockKind; the acquirer needs no change.
type holdKind interface {
	holdTxn
	holdQueue
	// record fills in what the kind keeps in the holder record of a
	// grant (an election's term, a set's names).
	record(rec *store.Holder)
	// keep notes a grant of l, with holder record rec, in the engine's
	// hold cache.
	keep(l *hold.Lock, rec store.Holder)
	// endOwn releases a hold of this acquire that the caller will never
	// learn of (see acquirer.endOwn).
	endOwn(ctx context.Context, token int64, rec *store.Holder, detail string) error
	// heldError is the refusal of an acquire without wait that r found
	// held; behindReason the one of an acquire that found waiters ahead.
	heldError(r attemptResult) *hold.HeldError
	behindReason() string
	// fillHolders fills in the expiry of the holders a refusal names.
	fillHolders(ctx context.Context, he *hold.HeldError)
	// waitedOut is the refusal of a wait that ran out.
	waitedOut() error
}

// holdTxn is what a kind adds to the acquire txn, and how it reads it.
type holdTxn interface {
	// prepare readies the next attempt (an election reads its term).
	prepare(ctx context.Context) error
	// txn builds the whole acquire txn: one hold's (acquirer.holdTxn,
	// which asks the kind for cmps, grantOps and reads), or a set's.
	txn(queueKey string, queueRev int64, rec store.Holder, now time.Time) acquireTxn
	// cmps, grantOps and reads are what the kind adds to one hold's
	// txn: compares, ops that begin the hold, and reads of what is in
	// its way.
	cmps() []clientv3.Cmp
	grantOps(rec store.Holder) []clientv3.Op
	reads(t *acquireTxn)
	// analyse reads a failed attempt's else branch
	// (acquirer.analyseHold, or a set's).
	analyse(ctx context.Context, resp *clientv3.TxnResponse, t *acquireTxn, queueKey string) (attemptResult, error)
	// inWay reads what the kind's reads found in the way of a hold's
	// attempt: settled when r is the attempt's outcome; otherwise
	// blocker is the hold in the way (nil when the hold looks free),
	// given lockKVs, the read of the hold's own key.
	inWay(resp *clientv3.TxnResponse, t *acquireTxn, queueKey string, lockKVs []*mvccpb.KeyValue) (r attemptResult, settled bool, blocker []*mvccpb.KeyValue)
	// entryGone is a queued attempt's outcome when its entry is gone:
	// dequeued, unless a release granted the hold in a way the lock key
	// did not show (a seat the release chose).
	entryGone(ctx context.Context) (attemptResult, error)
	// repeatable says whether a second acquire in the session that holds
	// the thing gets that hold back (sameHolder): not where a session may
	// hold several (permits, read holds).
	repeatable() bool
}

// holdQueue is where a kind's acquire waits in the thing's queue, and
// what it waits on.
type holdQueue interface {
	// entryPrefix is where the queue entry goes; aheadPrefix where the
	// entries it waits behind are; noneAheadCmp holds when none there is
	// older than an entry created at queueRev.
	entryPrefix() string
	aheadPrefix() string
	noneAheadCmp(qpfx string, queueRev int64) clientv3.Cmp
	// headKey is what the head of the queue waits on.
	headKey() string
	// lockNames are the locks of the engine the acquire's entries wait
	// for; entryKeys its entries, given the first (qkey).
	lockNames() []string
	entryKeys(qkey string) []string
	// holderReads read what may hold a grant to the acquire.
	holderReads() []clientv3.Op
	// entry fills in what the kind keeps in its queue entry, and says
	// whether a release may grant the entry a hold (hold.WaiterRecord.Grant).
	entry(wr *hold.WaiterRecord) (grantable bool)
	// ours reports whether hold is a hold this acquire asked for; took
	// notes that the acquire was granted its hold at key.
	ours(hold string) bool
	took(key string)
	// look reads, without a txn, what a queued attempt would find
	// (queuelook.go); aheadTookLock tells with no read what a waiter
	// whose entry ahead left waits for next, when it can.
	look(ctx context.Context, qkey string, queueRev int64) (r attemptResult, ok bool, err error)
	aheadTookLock(left int64) (attemptResult, bool)
	// changedSince reads what r waits on (as the head of the queue,
	// headKey, with head), and reports whether it changed since r's read
	// (lockKind's: acquirer.keyChanged).
	changedSince(ctx context.Context, r attemptResult, head bool) (*hold.Lock, bool, error)
	// waitsAtPlace says whether an acquire in a session waits at the
	// session's place (place.go).
	waitsAtPlace() bool
}

// lockKind is a plain lock's kind: one key, one hold, one queue.
type lockKind struct{ a *acquirer }

func (k *lockKind) prepare(context.Context) error { return nil }

func (k *lockKind) record(*store.Holder) {}

func (k *lockKind) txn(queueKey string, queueRev int64, rec store.Holder, now time.Time) acquireTxn {
	return k.a.holdTxn(queueKey, queueRev, rec, now)
}

func (k *lockKind) cmps() []clientv3.Cmp { return nil }

func (k *lockKind) grantOps(store.Holder) []clientv3.Op { return nil }

func (k *lockKind) reads(*acquireTxn) {}

func (k *lockKind) analyse(ctx context.Context, resp *clientv3.TxnResponse, t *acquireTxn, queueKey string) (attemptResult, error) {
	return k.a.analyseHold(ctx, resp, t, queueKey)
}

func (k *lockKind) inWay(_ *clientv3.TxnResponse, _ *acquireTxn, _ string, lockKVs []*mvccpb.KeyValue) (attemptResult, bool, []*mvccpb.KeyValue) {
	return attemptResult{}, false, lockKVs
}

func (k *lockKind) entryGone(context.Context) (attemptResult, error) {
	return attemptResult{outcome: dequeued}, nil
}

func (k *lockKind) repeatable() bool { return true }

func (k *lockKind) keep(l *hold.Lock, rec store.Holder) { k.a.e.holds.put(k.a.seat, l.Token, rec) }

func (k *lockKind) endOwn(ctx context.Context, token int64, rec *store.Holder, detail string) error {
	a := k.a
	if rec != nil {
		return a.e.commitEnd(ctx, a.seat, token, *rec, nil, hold.EventReleased, detail)
	}
	return a.e.endHold(ctx, a.seat, token, hold.EventReleased, detail)
}

func (k *lockKind) heldError(r attemptResult) *hold.HeldError {
	return &hold.HeldError{Holder: r.holder, Reason: "held by " + strconv.Quote(r.holder.Owner)}
}

func (k *lockKind) behindReason() string { return "being handed to a queued waiter" }

func (k *lockKind) fillHolders(ctx context.Context, he *hold.HeldError) {
	if he.Holder != nil && he.Holder.ExpiresAt.IsZero() && len(he.Holders) == 0 {
		if id, ok := store.ParseLeaseHex(k.a.lastHolderLease); ok {
			k.a.e.fillLease(ctx, he.Holder, id)
		}
	}
}

func (k *lockKind) waitedOut() error {
	a := k.a
	if a.lastHolder != nil {
		return &hold.HeldError{Holder: a.lastHolder, Reason: fmt.Sprintf("still held by %q after waiting %s", a.lastHolder.Owner, a.req.Wait)}
	}
	return &hold.HeldError{Reason: fmt.Sprintf("not granted within %s", a.req.Wait)}
}

func (k *lockKind) entryPrefix() string { return k.a.e.keys.Queue(k.a.req.Name) }

func (k *lockKind) aheadPrefix() string { return k.a.e.keys.Queue(k.a.req.Name) }

// noneAheadCmp: a compare over a range holds for every key in it, so
// over the whole queue, which holds our own entry, one compare says that
// no entry is older than ours.
func (k *lockKind) noneAheadCmp(qpfx string, queueRev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(qpfx), ">", queueRev-1).WithPrefix()
}

func (k *lockKind) headKey() string { return k.a.e.keys.Lock(k.a.req.Name) }

func (k *lockKind) lockNames() []string { return []string{k.a.req.Name} }

func (k *lockKind) entryKeys(qkey string) []string {
	if qkey == "" {
		return nil
	}
	return []string{qkey}
}

func (k *lockKind) holderReads() []clientv3.Op {
	return []clientv3.Op{clientv3.OpGet(k.a.e.keys.Lock(k.a.req.Name))}
}

func (k *lockKind) entry(*hold.WaiterRecord) bool { return true }

func (k *lockKind) ours(hold string) bool { return hold == k.a.hold }

func (k *lockKind) took(string) {}

func (k *lockKind) look(ctx context.Context, qkey string, queueRev int64) (attemptResult, bool, error) {
	return k.a.lookHold(ctx, qkey, queueRev)
}

func (k *lockKind) changedSince(ctx context.Context, r attemptResult, head bool) (*hold.Lock, bool, error) {
	return k.a.keyChanged(ctx, r, head)
}

func (k *lockKind) waitsAtPlace() bool { return true }
