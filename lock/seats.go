package lock

import (
	"context"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/baton-dev/baton/internal/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// How an acquire of a thing with seats differs from a lock's: it takes a
// seat (internal/store/kinds.go), and the seat must be free by the thing's rules
// (seatCmps). A permit takes one free below its semaphore's limit and
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
		return invalid("limit", "must be between 1 and %d", MaxSemaphoreLimit)
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
	// held is the seats held, as last read.
	held map[int]bool
	// replace is set when the next attempt is to store limit: no permit
	// of the semaphore was held, under another limit or none, at
	// limitRev (the stored limit's ModRevision, 0 if none).
	replace  bool
	limitRev int64
}

// pickSeats sets up an acquire of a thing with seats: the seat it takes,
// or the seats it picks from.
func (a *acquirer) pickSeats() error {
	switch a.kind {
	case KindSemaphore:
		if err := checkLimit(a.req.limit); err != nil {
			return err
		}
		a.seats = &seatView{limit: a.req.limit, prefix: a.req.Name + string(store.SeatSep), stored: true}
	case KindRWLock:
		switch a.mode = a.req.mode; a.mode {
		case ModeRead:
			a.seats = &seatView{limit: MaxReaders, prefix: store.ReaderSeats(a.req.Name)}
		case ModeWrite:
			a.seat = store.WriterSeat(a.req.Name)
			return nil
		default:
			return invalid("mode", "must be read or write")
		}
	default:
		return nil
	}
	// The first attempt takes a seat blind (none looks held yet) and
	// expects the stored limit to be ours: if it finds otherwise, its
	// else branch reads both, and the next attempt knows.
	a.pickSeat()
	return nil
}

// grouped reports whether the acquire's thing has seats: its holds may
// be in any of them, and the head of its queue waits on them all.
func (a *acquirer) grouped() bool { return a.kind == KindSemaphore || a.kind == KindRWLock }

// seatsRead reads the seats the acquire picks from, keys only: from
// etcd's index, at most the limit's number of keys.
func (a *acquirer) seatsRead(opts ...clientv3.OpOption) clientv3.Op {
	return clientv3.OpGet(a.e.keys.Locks()+a.seats.prefix,
		append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}, opts...)...)
}

// headKey is what the head of the queue waits on: the lock's key, or
// every seat of a thing with seats (a hub registration for them all); a
// reader, only the writer's seat.
func (a *acquirer) headKey() string {
	switch {
	case a.mode == ModeRead:
		return a.e.keys.Lock(store.WriterSeat(a.req.Name))
	case a.grouped():
		return store.SeatsOf(a.e.keys.Locks(), a.req.Name)
	}
	return a.e.keys.Lock(a.req.Name)
}

// A read/write lock keeps its waiters under two prefixes of its queue,
// by mode: a writer waits for every entry older than its own (and for no
// hold at all), a reader only for the writers' (and for no write hold),
// so the readers between two writers in line are granted at once, each
// in a txn of its own, when the writer before them releases. Order is
// still by CreateRevision across both: a reader never passes an older
// writer, and a writer never passes anyone.

// entryPrefix is where our queue entry goes: the queue, or a read/write
// lock's waiters' of our mode.
func (a *acquirer) entryPrefix() string {
	if a.mode != "" {
		return a.e.keys.Queue(a.req.Name) + string(a.mode[0]) + "/"
	}
	return a.e.keys.Queue(a.req.Name)
}

// noneAheadCmp holds when no entry under qpfx, where the entries we wait
// behind are (aheadPrefix), is older than ours, created at queueRev. A
// compare over a range holds for every key in it, and an empty range is
// compared as one key created at 0: so over the whole queue, which holds
// our own entry, one compare says it; over a reader's writers, which may
// be none, it takes the compare that matches what the reader last read
// (writersQueued): none at all, or none older than ours. Either implies
// that no writer is ahead of us; when what it read changed, the attempt
// fails, its else branch reads again, and the next one takes the other.
func (a *acquirer) noneAheadCmp(qpfx string, queueRev int64) clientv3.Cmp {
	if a.mode == ModeRead && !a.writersQueued {
		return clientv3.Compare(clientv3.CreateRevision(qpfx), "=", 0).WithPrefix()
	}
	return clientv3.Compare(clientv3.CreateRevision(qpfx), ">", queueRev-1).WithPrefix()
}

// aheadPrefix is where the entries we wait behind are: the whole queue,
// or for a reader its writers'.
func (a *acquirer) aheadPrefix() string {
	if a.mode == ModeRead {
		return a.e.keys.Queue(a.req.Name) + string(ModeWrite[0]) + "/"
	}
	return a.e.keys.Queue(a.req.Name)
}

// storedLimit decodes a read of a semaphore's seats key (seatRecord): the
// limit and the key's ModRevision, zeros when there is none.
func storedLimit(kvs []*mvccpb.KeyValue) (limit int, rev int64) {
	if len(kvs) == 0 {
		return 0, 0
	}
	n, _ := strconv.Atoi(string(kvs[0].Value))
	return n, kvs[0].ModRevision
}

// noteSeats keeps which seats a read of them found held.
func (a *acquirer) noteSeats(kvs []*mvccpb.KeyValue) {
	held := make(map[int]bool, len(kvs))
	from := a.e.keys.Locks() + a.seats.prefix
	for _, kv := range kvs {
		if n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), from)); err == nil {
			held[n] = true
		}
	}
	a.seats.held = held
}

// pickSeat makes a free seat below the limit the next attempt's, and
// reports whether one was free as last read. Each acquire looks from a
// seat of its own (its hold ID's hash), so acquires that see the same
// seats free at once (readers let in together, waiters woken by one
// release) try different seats rather than all the first, which all but
// one would lose. With none free it picks seat 0, held as last read: the
// attempt then takes it only if it was freed since, and otherwise fails,
// and its else branch joins the queue.
func (a *acquirer) pickSeat() bool {
	// Among the seats held and a few more: a read/write lock's readers
	// then reuse a few keys, not MaxReaders of them.
	n := min(a.seats.limit, len(a.seats.held)+pickSpread)
	from := int(crc32.ChecksumIEEE([]byte(a.hold)) % uint32(n))
	for i := range n {
		if seat := (from + i) % n; !a.seats.held[seat] {
			a.seat = a.seats.prefix + strconv.Itoa(seat)
			return true
		}
	}
	for i := n; i < a.seats.limit; i++ { // the seats beyond the spread, in order
		if !a.seats.held[i] {
			a.seat = a.seats.prefix + strconv.Itoa(i)
			return true
		}
	}
	a.seat = a.seats.prefix + "0"
	return false
}

// pickSpread is how many seats beyond those held pickSeat spreads its
// acquires over.
const pickSpread = 64

// seatOps adds to a failed attempt's else branch what it reads of the
// seats: a semaphore's stored limit, the seats it picks from, and a
// read/write lock's hold in the way.
func (a *acquirer) seatOps(t *acquireTxn) {
	e, thing := a.e, a.req.Name
	if a.seats != nil && a.seats.stored {
		t.lost.limit = t.OnFailure(clientv3.OpGet(e.keys.Seats(thing)))
	}
	if a.seats != nil {
		t.lost.seats = t.OnFailure(a.seatsRead())
	}
	switch a.mode {
	case ModeRead:
		t.lost.blocker = t.OnFailure(clientv3.OpGet(e.keys.Lock(store.WriterSeat(thing))))
	case ModeWrite:
		t.lost.blocker = t.OnFailure(clientv3.OpGet(e.keys.Locks()+store.ReaderSeats(thing), clientv3.WithPrefix(), clientv3.WithLimit(1)))
	}
}

// seatCmps hold when the acquire may take its seat, beyond the seat's
// being free: a semaphore's limit is its own (limitCmps); a read hold's
// lock has no writer; a write hold's has no hold at all.
func (a *acquirer) seatCmps() []clientv3.Cmp {
	e, thing := a.e, a.req.Name
	switch a.mode {
	case ModeRead:
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.keys.Lock(store.WriterSeat(thing))), "=", 0)}
	case ModeWrite:
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(store.SeatsOf(e.keys.Locks(), thing)), "=", 0).WithPrefix()}
	}
	return a.limitCmps()
}

// limitCmps hold when the semaphore's stored limit is ours, or, when the
// attempt replaces it, when it is still as read and no seat is held (a
// direct attempt also requires the queue empty: acquireCmps).
func (a *acquirer) limitCmps() []clientv3.Cmp {
	key := a.e.keys.Seats(a.req.Name)
	if !a.seats.replace {
		return []clientv3.Cmp{clientv3.Compare(clientv3.Value(key), "=", strconv.Itoa(a.seats.limit))}
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(key), "=", a.seats.limitRev),
		clientv3.Compare(clientv3.CreateRevision(store.SeatsOf(a.e.keys.Locks(), a.req.Name)), "=", 0).WithPrefix(),
	}
}

// analyseSeats reads a failed attempt's view of its thing's seats.
// settled is set when r is the attempt's outcome; otherwise blocker is
// the hold in the way (nil when the seat the next attempt takes, picked
// anew if ours was taken, looked free), and analyse goes on as for a
// lock held by it. lockKVs is the read of our seat.
func (a *acquirer) analyseSeats(resp *clientv3.TxnResponse, t *acquireTxn, queueKey string, lockKVs []*mvccpb.KeyValue) (r attemptResult, settled bool, blocker []*mvccpb.KeyValue) {
	if a.seats != nil {
		a.noteSeats(t.lost.seats.KVs(resp))
	}
	if a.seats != nil && a.seats.stored {
		if r, settled := a.analyseLimit(resp, t, queueKey); settled {
			return r, true, nil
		}
	}
	if t.lost.blocker.Ok() {
		kvs := t.lost.blocker.KVs(resp)
		switch {
		case len(kvs) > 0 && a.mode == ModeRead:
			return attemptResult{}, false, kvs // a writer holds the lock
		case len(kvs) > 0 && len(lockKVs) == 0:
			return attemptResult{}, false, kvs // a writer's acquire: readers hold it
		}
	}
	if a.seats == nil {
		return attemptResult{}, false, lockKVs // the one seat it takes
	}
	if !a.seats.held[a.seatIndex()] || a.pickSeat() {
		return attemptResult{}, false, nil // the seat picked looked free
	}
	return attemptResult{}, false, lockKVs
}

// analyseLimit reads a failed permit attempt's view of the stored limit:
// settled when it ends the attempt (another limit, and permits held
// under it), or makes the next attempt replace it. The limit is replaced
// only while no seat is held, by an attempt that nobody waits ahead of:
// a direct one with the queue empty, or the queue's head (a queued
// attempt's own compares make it the head). A direct attempt with others
// in line goes to the back of it, and replaces the limit when its turn
// comes, if no seat is held then.
func (a *acquirer) analyseLimit(resp *clientv3.TxnResponse, t *acquireTxn, queueKey string) (attemptResult, bool) {
	s := a.seats
	stored, rev := storedLimit(t.lost.limit.KVs(resp))
	if stored == s.limit {
		s.replace = false
		return attemptResult{}, false
	}
	if len(s.held) > 0 {
		return attemptResult{outcome: mismatched, limit: stored}, true
	}
	s.replace, s.limitRev = true, rev
	if queueKey == "" && t.lost.queued.Count(resp) > 0 {
		return attemptResult{}, false // behind the queue (analyse says so)
	}
	a.pickSeat()
	return attemptResult{outcome: retryNow}, true
}

// seatIndex is the number of the seat the next attempt takes.
func (a *acquirer) seatIndex() int {
	n, _ := strconv.Atoi(strings.TrimPrefix(a.seat, a.seats.prefix))
	return n
}

// seatGranted is a queued permit attempt's outcome when its queue entry
// is gone: a release deleted it as it granted us the seat it freed
// (whichever that was), or the entry went with the node's waiter lease.
// It reads the seats, at most the limit's number, to tell.
func (a *acquirer) seatGranted(ctx context.Context) (attemptResult, error) {
	kvs, err := a.readSeatHolders(ctx)
	if err != nil {
		return attemptResult{}, err
	}
	for _, kv := range kvs {
		if l, ok := a.granted(ctx, kv); ok {
			return attemptResult{outcome: won, lock: l}, nil
		}
	}
	return attemptResult{outcome: dequeued}, nil
}

// readSeatHolders reads the holder records of the semaphore's seats,
// linearizably.
func (a *acquirer) readSeatHolders(ctx context.Context) ([]*mvccpb.KeyValue, error) {
	e := a.e
	octx, done := e.etcd.Op(ctx)
	defer done()
	resp, err := e.cli.Get(octx, store.SeatsOf(e.keys.Locks(), a.req.Name), clientv3.WithPrefix())
	if err != nil {
		return nil, e.etcd.Err(ctx, "read semaphore", err)
	}
	return resp.Kvs, nil
}

// lookSeatsRead is what look reads of a thing with seats where a lock's
// look reads its key: the seats the acquire picks from, a reader's
// writer, or a count of a writer's holders.
func (a *acquirer) lookSeatsRead(opts ...clientv3.OpOption) clientv3.Op {
	switch a.mode {
	case ModeRead:
		return clientv3.OpGet(a.e.keys.Lock(store.WriterSeat(a.req.Name)), opts...)
	case ModeWrite:
		return clientv3.OpGet(store.SeatsOf(a.e.keys.Locks(), a.req.Name), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}, opts...)...)
	}
	return a.seatsRead(opts...)
}

// lookSeats is look for a thing with seats. Our entry's going is left
// to an attempt (seatGranted finds the seat a release granted us); so
// is a seat that looks free.
func (a *acquirer) lookSeats(resp *clientv3.TxnResponse, t *lookTxn) (attemptResult, bool, error) {
	if t.gone(resp) {
		return attemptResult{}, false, nil
	}
	rev := resp.Header.Revision
	if ahead := t.pred.KVs(resp); len(ahead) > 0 {
		return attemptResult{outcome: behind, watchKey: string(ahead[0].Key), watchRev: rev, watchCreated: ahead[0].CreateRevision}, true, nil
	}
	held := t.lock.Range(resp)
	switch a.mode {
	case ModeRead:
		if len(held.Kvs) == 0 {
			return attemptResult{}, false, nil
		}
		if hr, err := store.DecodeHolder(held.Kvs[0]); err == nil {
			a.lastHolder, a.lastHolderLease = toLock(hr, a.req.Name, held.Kvs[0].ModRevision), hr.Lease
		}
	case ModeWrite:
		if held.Count == 0 {
			return attemptResult{}, false, nil
		}
	default:
		a.noteSeats(held.Kvs)
		if a.pickSeat() {
			return attemptResult{}, false, nil
		}
	}
	return attemptResult{outcome: heldBy, watchKey: a.headKey(), watchRev: rev, holder: a.lastHolder}, true, nil
}

// seatOf is the key name the hold token of name is kept under: name
// itself, but for a thing with seats the seat whose ModRevision is
// token. The seats are read keys only (at most a semaphore's limit, or a
// read/write lock's MaxReaders and its writer, from etcd's index), locally first: a hold's seat never changes while it lasts,
// and the end txn compares ModRevision == token anyway. Only when the
// local read finds no such seat is it read again linearizably.
// ErrNotHeld when no seat has token.
func (e *Engine) seatOf(ctx context.Context, name string, token int64) (string, error) {
	if !store.HasSeats(name) || strings.IndexByte(name, store.SeatSep) >= 0 {
		return name, nil
	}
	if token <= 0 {
		return "", invalid("token", "must be a positive fencing token")
	}
	read := func(opts ...clientv3.OpOption) (string, error) {
		octx, done := e.etcd.Op(ctx)
		defer done()
		resp, err := e.cli.Get(octx, store.SeatsOf(e.keys.Locks(), name), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithMinModRev(token), clientv3.WithMaxModRev(token)}, opts...)...)
		if err != nil {
			return "", e.etcd.Err(ctx, "read semaphore", err)
		}
		if len(resp.Kvs) == 0 {
			return "", ErrNotHeld
		}
		return strings.TrimPrefix(string(resp.Kvs[0].Key), e.keys.Locks()), nil
	}
	if !e.etcd.MemberStopped() {
		if seat, err := read(clientv3.WithSerializable()); err == nil {
			return seat, nil
		}
	}
	return read()
}
