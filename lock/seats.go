package lock

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// How an acquire of a thing with seats differs from a lock's: it takes a
// seat (internal/store/kinds.go), and the seat must be free by the thing's rules
// (seatKind.cmps). A permit takes one free below its semaphore's limit and
// requires the limit stored with the semaphore to be its own; a read
// hold takes a reader's seat while no writer holds; a write hold the
// writer's seat while nothing holds.
//
// Invariant: every seat held of a semaphore was granted under the stored
// limit, and its number is below it. An acquire compares the stored limit
// with its own and creates a seat below it; a handover puts the next
// holder into the seat the release frees, and compares the limit the
// waiter asked for (handOverCmps). The stored limit changes only while no
// seat is held, by an acquire nobody waits ahead of (analyseLimit,
// limitCmps), so at most the limit's number of permits are ever held at
// once, and a request with another limit while permits are held is
// refused (ErrLimitMismatch), never half obeyed.

// MaxSemaphoreLimit bounds a semaphore's limit.
const MaxSemaphoreLimit = 10000

func checkLimit(n int) error {
	if n < 1 || n > MaxSemaphoreLimit {
		return hold.Invalid("limit", "must be between 1 and %d", MaxSemaphoreLimit)
	}
	return nil
}

// seatView is what an acquire that picks its seat knows of the seats it
// picks from: a permit's (every seat of its semaphore), a read hold's
// (its read/write lock's reader seats).
type seatView struct {
	limit int // the seats are numbered below it
	// prefix is the key name of seat i but for i.
	prefix string
	// stored says the limit is stored with the thing and compared (a
	// semaphore's, limitCmps).
	stored bool
	// held is the seats held, as last read; guarded the free ones a
	// guard keeps (the at-least window of the hold that ended in it, or a
	// lock-delay) and until when, as the last attempt read them.
	held    map[int]bool
	guarded map[int]hold.Delay
	// replace is set when the next attempt is to store limit: no permit
	// of the semaphore was held, under another limit or none, at
	// limitRev (the stored limit's ModRevision, 0 if none).
	replace  bool
	limitRev int64
}

// seatKind is the kind of an acquire of a thing with seats: a permit of
// a semaphore, a read or a write hold of a read/write lock. Its hold is
// in one of the thing's seats, and the head of its queue waits on them
// all.
type seatKind struct {
	core.LockKind
	// limit is a semaphore permit's: the limit the acquire asks for (0
	// for a read/write lock's hold).
	limit int
	// mode is a read/write lock hold's; writersQueued whether a
	// reader's last read found writers in line (NoneAheadCmp).
	mode          RWMode
	writersQueued bool
	// view is what an acquire that picks its seat (a permit, a read
	// hold) knows of the seats; nil for a write hold, whose seat is the
	// writer's.
	view *seatView
	// othersAsOf is a read/write lock's hold's: the revision up to which
	// the last attempt saw the other mode's guards (a reader, the
	// writer's; a writer, the readers') all spent; 0 if it saw none.
	// The next attempt requires them unchanged since (othersCmp).
	othersAsOf int64
}

// newSeatKind sets up an acquire of a thing with seats: a permit of a
// semaphore of limit, or a read/write lock's hold in mode; the seat it
// takes, or the seats it picks from.
func newSeatKind(base core.LockKind, kind EventKind, limit int, mode RWMode) (*seatKind, error) {
	k := &seatKind{LockKind: base}
	req := base.A.Req
	if kind == KindSemaphore {
		if err := checkLimit(limit); err != nil {
			return nil, err
		}
		k.limit = limit
		k.view = &seatView{limit: limit, prefix: req.Name + string(store.SeatSep), stored: true}
	} else {
		switch k.mode = mode; k.mode {
		case ModeRead:
			k.view = &seatView{limit: MaxReaders, prefix: store.ReaderSeats(req.Name)}
		case ModeWrite:
			base.A.Seat = store.WriterSeat(req.Name)
			return k, nil
		default:
			return nil, hold.Invalid("mode", "must be read or write")
		}
	}
	// The first attempt takes a seat blind (none looks held yet) and
	// expects the stored limit to be ours: if it finds otherwise, its
	// else branch reads both, and the next attempt knows.
	k.pickSeat()
	return k, nil
}

func (k *seatKind) Record(rec *store.Holder) { rec.Limit, rec.Mode = k.limit, k.mode }

func (k *seatKind) GrantOps(rec store.Holder) []clientv3.Op {
	ops := []clientv3.Op{clientv3.OpPut(k.A.E.Keys.Seats(k.A.Req.Name), core.SeatRecord(rec))}
	if k.mode == ModeWrite && k.othersAsOf != 0 {
		// The readers' guards, all spent (othersCmp): gone, so that a
		// release may hand the lock to a writer again (exclusionCmps).
		ops = append(ops, clientv3.OpDelete(k.A.E.Keys.Delay(store.ReaderSeats(k.A.Req.Name)), clientv3.WithPrefix()))
	}
	return ops
}

// analyse notes, for a reader, whether writers are in line (see
// NoneAheadCmp) first.
func (k *seatKind) Analyse(ctx context.Context, resp *clientv3.TxnResponse, t *core.AcquireTxn, queueKey string) (core.AttemptResult, error) {
	if k.mode == ModeRead {
		k.writersQueued = t.Lost.Blocking.Count(resp) > 0
	}
	return k.A.AnalyseHold(ctx, resp, t, queueKey)
}

// repeatable: a session may hold several permits, or read holds, of one
// thing; only the writer's seat is one.
func (k *seatKind) Repeatable() bool { return k.view == nil }

func (k *seatKind) BehindReason() string {
	if k.mode == ModeRead {
		return "a writer waits ahead: a reader queues behind it, first come, first served"
	}
	return k.LockKind.BehindReason()
}

// entry: a kept place of a thing with seats asks for no grant: one made
// while no acquire waits at the place would be a permit, or a read hold,
// that the session's next acquire cannot tell from those it holds
// already (it takes one of its own). The place then waits, at the head
// of the line, for that acquire to take the seat (internal/core/place.go).
func (k *seatKind) Entry(wr *hold.WaiterRecord) bool {
	wr.Mode = k.mode
	return !k.A.Req.KeepPlace
}

// took: a release grants the seat it frees, whichever that is.
func (k *seatKind) Took(key string) { k.A.Seat = strings.TrimPrefix(key, k.A.E.Keys.Locks()) }

func (k *seatKind) HolderReads() []clientv3.Op {
	return []clientv3.Op{clientv3.OpGet(store.SeatsOf(k.A.E.Keys.Locks(), k.A.Req.Name), clientv3.WithPrefix())}
}

// aheadTookLock tells nothing for a thing with seats: the grant that
// took the entry ahead may have left seats free.
func (k *seatKind) AheadTookLock(int64) (core.AttemptResult, bool) {
	return core.AttemptResult{}, false
}

// ChangedSince, at the head of the queue, reads every seat: whichever
// was handed to us, or freed.
func (k *seatKind) ChangedSince(ctx context.Context, r core.AttemptResult, head bool) (*Lock, bool, error) {
	if r.Keys != nil {
		return nil, true, nil // a wait for the seats' guards: look again
	}
	if !head {
		return k.LockKind.ChangedSince(ctx, r, head)
	}
	kvs, err := k.readSeatHolders(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, kv := range kvs {
		if l, ok := k.A.Granted(ctx, kv); ok {
			return l, true, nil
		}
	}
	return nil, true, nil // look again: the attempt tells
}

// seatsRead reads the seats the acquire picks from, keys only: from
// etcd's index, at most the limit's number of keys.
func (k *seatKind) seatsRead(opts ...clientv3.OpOption) clientv3.Op {
	return clientv3.OpGet(k.A.E.Keys.Locks()+k.view.prefix,
		append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}, opts...)...)
}

// headKey is what the head of the queue waits on: every seat of the
// thing (a hub registration for them all); a reader, only the writer's
// seat.
func (k *seatKind) HeadKey() string {
	if k.mode == ModeRead {
		return k.A.E.Keys.Lock(store.WriterSeat(k.A.Req.Name))
	}
	return store.SeatsOf(k.A.E.Keys.Locks(), k.A.Req.Name)
}

// A read/write lock keeps its waiters under two prefixes of its queue,
// by mode: a writer waits for every entry older than its own (and for no
// hold at all), a reader only for the writers' (and for no write hold),
// so the readers between two writers in line are granted at once, each
// in a txn of its own, when the writer before them releases. Order is
// still by CreateRevision across both: a reader never passes an older
// writer, and a writer never passes anyone.

// EntryPrefix is where our queue entry goes: the queue, or a read/write
// lock's waiters' of our mode.
func (k *seatKind) EntryPrefix() string {
	if k.mode != "" {
		return k.A.E.Keys.Queue(k.A.Req.Name) + string(k.mode[0]) + "/"
	}
	return k.LockKind.EntryPrefix()
}

// NoneAheadCmp holds when no entry under qpfx, where the entries we wait
// behind are (AheadPrefix), is older than ours, created at queueRev. A
// compare over a range holds for every key in it, and an empty range is
// compared as one key created at 0: so over the whole queue, which holds
// our own entry, one compare says it; over a reader's writers, which may
// be none, it takes the compare that matches what the reader last read
// (writersQueued): none at all, or none older than ours. Either implies
// that no writer is ahead of us; when what it read changed, the attempt
// fails, its else branch reads again, and the next one takes the other.
func (k *seatKind) NoneAheadCmp(qpfx string, queueRev int64) clientv3.Cmp {
	if k.mode == ModeRead && !k.writersQueued {
		return clientv3.Compare(clientv3.CreateRevision(qpfx), "=", 0).WithPrefix()
	}
	return k.LockKind.NoneAheadCmp(qpfx, queueRev)
}

// AheadPrefix is where the entries we wait behind are: the whole queue,
// or for a reader its writers'.
func (k *seatKind) AheadPrefix() string {
	if k.mode == ModeRead {
		return k.A.E.Keys.Queue(k.A.Req.Name) + string(ModeWrite[0]) + "/"
	}
	return k.LockKind.AheadPrefix()
}

// storedLimit decodes a read of a semaphore's seats key (SeatRecord): the
// limit and the key's ModRevision, zeros when there is none.
func storedLimit(kvs []*mvccpb.KeyValue) (limit int, rev int64) {
	if len(kvs) == 0 {
		return 0, 0
	}
	n, _ := strconv.Atoi(string(kvs[0].Value))
	return n, kvs[0].ModRevision
}

// noteSeats keeps which seats a read of them found held.
func (k *seatKind) noteSeats(kvs []*mvccpb.KeyValue) {
	held := make(map[int]bool, len(kvs))
	from := k.A.E.Keys.Locks() + k.view.prefix
	for _, kv := range kvs {
		if n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), from)); err == nil {
			held[n] = true
		}
	}
	k.view.held = held
}

// pickSeat makes a free seat below the limit the next attempt's, and
// reports whether one was free as last read. Each acquire looks from a
// seat of its own (its hold ID's hash), so acquires that see the same
// seats free at once (readers let in together, waiters woken by one
// release) try different seats rather than all the first, which all but
// one would lose. With none free it picks seat 0, held as last read: the
// attempt then takes it only if it was freed since, and otherwise fails,
// and its else branch joins the queue.
func (k *seatKind) pickSeat() bool {
	// Among the seats held and a few more: a read/write lock's readers
	// then reuse a few keys, not MaxReaders of them.
	now := time.Now()
	n := min(k.view.limit, len(k.view.held)+len(k.view.guarded)+pickSpread)
	from := int(crc32.ChecksumIEEE([]byte(k.A.Hold)) % uint32(n))
	for i := range n {
		if seat := (from + i) % n; !k.view.taken(seat, now) {
			k.A.SeatMoved(k.view.prefix + strconv.Itoa(seat))
			return true
		}
	}
	for i := n; i < k.view.limit; i++ { // the seats beyond the spread, in order
		if !k.view.taken(i, now) {
			k.A.SeatMoved(k.view.prefix + strconv.Itoa(i))
			return true
		}
	}
	k.A.SeatMoved(k.view.prefix + "0")
	return false
}

// taken reports whether seat i looked held, or kept by its guard at now.
func (v *seatView) taken(i int, now time.Time) bool {
	g, kept := v.guarded[i]
	return v.held[i] || kept && now.Before(g.Until)
}

// firstKept is the first guard of a free seat to end, as last read; its
// Until is zero if no free seat is kept.
func (v *seatView) firstKept() (first hold.Delay) {
	for i, g := range v.guarded {
		if !v.held[i] && (first.Until.IsZero() || g.Until.Before(first.Until)) {
			first = g
		}
	}
	return first
}

// pickSpread is how many seats beyond those held pickSeat spreads its
// acquires over.
const pickSpread = 64

// reads adds to a failed attempt's else branch what it reads of the
// seats: a semaphore's stored limit, the seats it picks from, and a
// read/write lock's hold in the way.
func (k *seatKind) Reads(t *core.AcquireTxn) {
	e, thing := k.A.E, k.A.Req.Name
	if k.view != nil && k.view.stored {
		t.Lost.Limit = t.OnFailure(clientv3.OpGet(e.Keys.Seats(thing)))
	}
	if k.view != nil {
		t.Lost.Seats = t.OnFailure(k.seatsRead())
	}
	switch k.mode {
	case ModeRead:
		t.Lost.Blocker = t.OnFailure(clientv3.OpGet(e.Keys.Lock(store.WriterSeat(thing))))
	case ModeWrite:
		t.Lost.Blocker = t.OnFailure(clientv3.OpGet(e.Keys.Locks()+store.ReaderSeats(thing), clientv3.WithPrefix(), clientv3.WithLimit(1)))
	}
	// The guards of every seat: of those the acquire picks from, and of
	// a read/write lock's other mode (seatGuards). There are none but
	// of holds with an at-least window, at most one per seat.
	t.Lost.Guards = t.OnFailure(clientv3.OpGet(k.guardsPrefix(), clientv3.WithPrefix()))
}

// guardsPrefix is where the guards of the thing's seats are.
func (k *seatKind) guardsPrefix() string { return store.SeatsOf(k.A.E.Keys.Delay(""), k.A.Req.Name) }

// cmps hold when the acquire may take its seat, beyond the seat's
// being free: a semaphore's limit is its own (limitCmps); a read hold's
// lock has no writer; a write hold's has no hold at all.
func (k *seatKind) Cmps() []clientv3.Cmp {
	e, thing := k.A.E, k.A.Req.Name
	switch k.mode {
	case ModeRead:
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.Keys.Lock(store.WriterSeat(thing))), "=", 0),
			k.othersCmp(e.Keys.Delay(store.WriterSeat(thing)))}
	case ModeWrite:
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(store.SeatsOf(e.Keys.Locks(), thing)), "=", 0).WithPrefix(),
			k.othersCmp(e.Keys.Delay(store.ReaderSeats(thing))).WithPrefix()}
	}
	return k.limitCmps()
}

// othersCmp holds when the other mode's guards at key (a range, with
// WithPrefix) keep a read/write lock's hold out no more than the last
// attempt saw: none changed since it saw them all spent (othersAsOf),
// or there are none. A guard is put or stamped only with the hold it
// guards, or at its end, and time only runs on, so one spent stays
// spent: any that keeps the hold out was written after.
func (k *seatKind) othersCmp(key string) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(key), "<", k.othersAsOf+1)
}

// limitCmps hold when the semaphore's stored limit is ours, or, when the
// attempt replaces it, when it is still as read and no seat is held (a
// direct attempt also requires the queue empty: acquireCmps).
func (k *seatKind) limitCmps() []clientv3.Cmp {
	key := k.A.E.Keys.Seats(k.A.Req.Name)
	if !k.view.replace {
		return []clientv3.Cmp{clientv3.Compare(clientv3.Value(key), "=", strconv.Itoa(k.view.limit))}
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(key), "=", k.view.limitRev),
		clientv3.Compare(clientv3.CreateRevision(store.SeatsOf(k.A.E.Keys.Locks(), k.A.Req.Name)), "=", 0).WithPrefix(),
	}
}

// inWay reads a failed attempt's view of its thing's seats.
// settled is set when r is the attempt's outcome; otherwise blocker is
// the hold in the way (nil when the seat the next attempt takes, picked
// anew if ours was taken, looked free), and analyse goes on as for a
// lock held by it. lockKVs is the read of our seat.
func (k *seatKind) InWay(resp *clientv3.TxnResponse, t *core.AcquireTxn, queueKey string, lockKVs []*mvccpb.KeyValue) (r core.AttemptResult, settled bool, blocker []*mvccpb.KeyValue) {
	if k.view != nil {
		k.noteSeats(t.Lost.Seats.KVs(resp))
	}
	others := k.seatGuards(resp, t)
	if k.view != nil && k.view.stored {
		if r, settled := k.analyseLimit(resp, t, queueKey); settled {
			return r, true, nil
		}
	}
	if t.Lost.Blocker.Ok() {
		kvs := t.Lost.Blocker.KVs(resp)
		switch {
		case len(kvs) > 0 && k.mode == ModeRead:
			return core.AttemptResult{}, false, kvs // a writer holds the lock
		case len(kvs) > 0 && len(lockKVs) == 0:
			return core.AttemptResult{}, false, kvs // a writer's acquire: readers hold it
		}
	}
	if others.Outcome == core.Delayed && len(lockKVs) == 0 {
		if r, ok := core.BehindAny(resp, t, queueKey); ok {
			return r, true, nil
		}
		return others, true, nil
	}
	if k.view == nil {
		return core.AttemptResult{}, false, lockKVs // the one seat it takes
	}
	now, ours := time.Now(), k.seatIndex()
	if !k.view.taken(ours, now) {
		return core.AttemptResult{}, false, nil // the seat looked free: its own guard tells (analyseGuard)
	}
	kept := !k.view.held[ours]
	if k.pickSeat() {
		if kept {
			// The seat tried is kept by its guard, and another looks
			// free: take that one, not the guard's wait.
			return core.AttemptResult{Outcome: core.RetryNow}, true, nil
		}
		return core.AttemptResult{}, false, nil // the seat picked looked free
	}
	if first := k.view.firstKept(); !first.Until.IsZero() {
		// No seat is free; some are kept by their guards: wait for the
		// first to end, or for a seat to change.
		if r, ok := core.BehindAny(resp, t, queueKey); ok {
			return r, true, nil
		}
		return k.keptSeats(first, core.SeenBefore(resp)), true, nil
	}
	return core.AttemptResult{}, false, lockKVs
}

// keptSeats is the wait of an acquire that finds no seat free and some
// kept by their guards, first the first to end, as read at rev: until
// it ends, or until a seat or a guard changes.
func (k *seatKind) keptSeats(first hold.Delay, rev int64) core.AttemptResult {
	return core.AttemptResult{Outcome: core.Delayed, RetryAt: first.Until, DelayCause: first.Cause,
		Keys: []string{k.HeadKey(), k.guardsPrefix()}, WatchRev: rev}
}

// seatGuards reads the guards of the thing's seats from a failed
// attempt: for an acquire that picks its seat, which seats they keep
// (seatView.guarded); for a read/write lock's hold, whether the other
// mode's keep it out, and then a Delayed outcome until the last of them
// ends (a reader waits for the writer's window; a writer for every
// reader's). A guard not stamped yet is of a hold that expired moments
// ago: it keeps the seat as if stamped now, until the expiry recorder
// stamps it.
func (k *seatKind) seatGuards(resp *clientv3.TxnResponse, t *core.AcquireTxn) (others core.AttemptResult) {
	now, from := time.Now(), k.A.E.Keys.Delay(k.A.Req.Name)
	if k.view != nil {
		k.view.guarded = map[int]hold.Delay{}
	}
	spent := false
	for _, kv := range t.Lost.Guards.KVs(resp) {
		var dr hold.DelayRecord
		if json.Unmarshal(kv.Value, &dr) != nil {
			continue
		}
		if dr.Until == nil {
			dr = dr.Ended(now, EventExpired)
		}
		seat := k.A.Req.Name + strings.TrimPrefix(string(kv.Key), from) // as the seat's key name
		switch {
		case k.view != nil && strings.HasPrefix(seat, k.view.prefix):
			if n, err := strconv.Atoi(strings.TrimPrefix(seat, k.view.prefix)); err == nil && now.Before(*dr.Until) {
				k.view.guarded[n] = hold.Delay{Until: *dr.Until, Cause: dr.Cause}
			}
		case k.mode == ModeRead && seat == store.WriterSeat(k.A.Req.Name),
			k.mode == ModeWrite && strings.HasPrefix(seat, store.ReaderSeats(k.A.Req.Name)):
			if !now.Before(*dr.Until) {
				spent = true
				continue
			}
			if dr.Until.After(others.RetryAt) {
				others = core.AttemptResult{Outcome: core.Delayed, RetryAt: *dr.Until, DelayCause: dr.Cause,
					Keys: []string{k.guardsPrefix()}, WatchRev: core.SeenBefore(resp)}
			}
		}
	}
	k.othersAsOf = 0
	if spent {
		k.othersAsOf = core.SeenBefore(resp)
	}
	return others
}

// analyseLimit reads a failed permit attempt's view of the stored limit:
// settled when it ends the attempt (another limit, and permits held
// under it), or makes the next attempt replace it. The limit is replaced
// only while no seat is held, by an attempt that nobody waits ahead of:
// a direct one with the queue empty, or the queue's head (a queued
// attempt's own compares make it the head). A direct attempt with others
// in line goes to the back of it, and replaces the limit when its turn
// comes, if no seat is held then.
func (k *seatKind) analyseLimit(resp *clientv3.TxnResponse, t *core.AcquireTxn, queueKey string) (core.AttemptResult, bool) {
	s := k.view
	stored, rev := storedLimit(t.Lost.Limit.KVs(resp))
	if stored == s.limit {
		s.replace = false
		return core.AttemptResult{}, false
	}
	if len(s.held) > 0 {
		return core.AttemptResult{Outcome: core.Mismatched, Limit: stored, Asked: k.limit}, true
	}
	s.replace, s.limitRev = true, rev
	if queueKey == "" && t.Lost.Queued.Count(resp) > 0 {
		return core.AttemptResult{}, false // behind the queue (analyse says so)
	}
	k.pickSeat()
	return core.AttemptResult{Outcome: core.RetryNow}, true
}

// seatIndex is the number of the seat the next attempt takes.
func (k *seatKind) seatIndex() int {
	n, _ := strconv.Atoi(strings.TrimPrefix(k.A.Seat, k.view.prefix))
	return n
}

// entryGone is a queued permit attempt's outcome when its queue entry
// is gone: a release deleted it as it granted us the seat it freed
// (whichever that was), or the entry went with the node's waiter lease.
// It reads the seats, at most the limit's number, to tell.
func (k *seatKind) EntryGone(ctx context.Context) (core.AttemptResult, error) {
	kvs, err := k.readSeatHolders(ctx)
	if err != nil {
		return core.AttemptResult{}, err
	}
	for _, kv := range kvs {
		if l, ok := k.A.Granted(ctx, kv); ok {
			return core.AttemptResult{Outcome: core.Won, Lock: l}, nil
		}
	}
	return core.AttemptResult{Outcome: core.Dequeued}, nil
}

// readSeatHolders reads the holder records of the semaphore's seats,
// linearizably.
func (k *seatKind) readSeatHolders(ctx context.Context) ([]*mvccpb.KeyValue, error) {
	e := k.A.E
	octx, done := e.Etcd.Op(ctx)
	defer done()
	resp, err := e.Cli.Get(octx, store.SeatsOf(e.Keys.Locks(), k.A.Req.Name), clientv3.WithPrefix())
	if err != nil {
		return nil, e.Etcd.Err(ctx, "read semaphore", err)
	}
	return resp.Kvs, nil
}

// lookSeatsRead is what look reads of a thing with seats where a lock's
// look reads its key: the seats the acquire picks from, a reader's
// writer, or a count of a writer's holders.
func (k *seatKind) lookSeatsRead(opts ...clientv3.OpOption) clientv3.Op {
	switch k.mode {
	case ModeRead:
		return clientv3.OpGet(k.A.E.Keys.Lock(store.WriterSeat(k.A.Req.Name)), opts...)
	case ModeWrite:
		return clientv3.OpGet(store.SeatsOf(k.A.E.Keys.Locks(), k.A.Req.Name), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}, opts...)...)
	}
	return k.seatsRead(opts...)
}

// lookSeats is look for a thing with seats. Our entry's going is left
// to an attempt (entryGone finds the seat a release granted us); so
// is a seat that looks free.
func (k *seatKind) lookSeats(resp *clientv3.TxnResponse, t *core.LookTxn) (core.AttemptResult, bool, error) {
	if t.Gone(resp) {
		return core.AttemptResult{}, false, nil
	}
	rev := resp.Header.Revision
	if ahead := t.Pred.KVs(resp); len(ahead) > 0 {
		return core.AttemptResult{Outcome: core.Behind, WatchKey: string(ahead[0].Key), WatchRev: rev, WatchCreated: ahead[0].CreateRevision}, true, nil
	}
	held := t.Lock.Range(resp)
	switch k.mode {
	case ModeRead:
		if len(held.Kvs) == 0 {
			return core.AttemptResult{}, false, nil
		}
		if hr, err := store.DecodeHolder(held.Kvs[0]); err == nil {
			k.A.LastHolder, k.A.LastHolderLease = hold.ToLock(hr, k.A.Req.Name, held.Kvs[0].ModRevision), hr.Lease
		}
	case ModeWrite:
		if held.Count == 0 {
			return core.AttemptResult{}, false, nil
		}
	default:
		k.noteSeats(held.Kvs)
		if k.pickSeat() {
			return core.AttemptResult{}, false, nil
		}
		if first := k.view.firstKept(); !first.Until.IsZero() {
			return k.keptSeats(first, rev), true, nil
		}
	}
	return core.AttemptResult{Outcome: core.HeldBy, WatchKey: k.HeadKey(), WatchRev: rev, Holder: k.A.LastHolder}, true, nil
}

// look is the Acquirer's look for a thing with seats (lookSeats).
func (k *seatKind) Look(ctx context.Context, qkey string, queueRev int64) (core.AttemptResult, bool, error) {
	t, resp, err := k.A.ReadLook(ctx, qkey, queueRev, k.lookSeatsRead)
	if err != nil {
		return core.AttemptResult{}, false, err
	}
	return k.lookSeats(resp, t)
}

// MaxReaders bounds the read holds of one read/write lock at once: a
// read acquire reads its lock's readers' seats, keys only, to pick one.
const MaxReaders = 10000
