package lock

import (
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// opIs fails t unless op reads (get), puts or deletes key, as kind says.
func opIs(t *testing.T, what string, ops []clientv3.Op, i int, kind, key string) clientv3.Op {
	t.Helper()
	if i < 0 || i >= len(ops) {
		t.Fatalf("%s: index %d outside the branch's %d ops", what, i, len(ops))
	}
	op := ops[i]
	ok := map[string]bool{"get": op.IsGet(), "put": op.IsPut(), "delete": op.IsDelete(), "txn": op.IsTxn()}[kind]
	if !ok || (kind != "txn" && string(op.KeyBytes()) != key) {
		t.Fatalf("%s: op %d is not a %s of %q (key %q)", what, i, kind, key, op.KeyBytes())
	}
	return op
}

// TestAcquireTxn_IndicesNameTheirOpsInEveryLayout builds the acquire txn
// in each of its layouts (direct, direct joining the queue, queued; with
// and without a session, with and without the session cap; of a lock, of
// an election and of a semaphore's permit) and checks that every named index points at the op its
// name says, and that an index the layout lacks is -1.
func TestAcquireTxn_IndicesNameTheirOpsInEveryLayout(t *testing.T) {
	for _, k := range []struct {
		kind EventKind
		mode RWMode
	}{{KindLock, ""}, {KindElection, ""}, {KindSemaphore, ""}, {KindRWLock, ModeRead}, {KindRWLock, ModeWrite}} {
		for _, session := range []bool{false, true} {
			for _, capped := range []bool{false, true} {
				for _, layout := range []string{"direct", "enqueue", "queued"} {
					acquireTxnLayout(t, k.kind, k.mode, session, capped, layout)
				}
			}
		}
	}
}

// acquireTxnLayout builds one layout of the acquire txn and checks it.
func acquireTxnLayout(t *testing.T, kind EventKind, mode RWMode, session, capped bool, layout string) {
	t.Helper()
	cfg := DefaultConfig()
	if capped {
		cfg.MaxLocksPerSession = 10
	}
	e := &Engine{cfg: cfg, keys: store.Keys{Prefix: cfg.Prefix}}
	name := store.KeyName(kind, "n")
	a := &acquirer{e: e, req: AcquireRequest{Name: name, Owner: "o", TTL: 10 * time.Second, LockDelay: time.Second}, kind: kind, term: 7, hold: "h", lease: 0x10, leaseTTL: 10, seat: name}
	if kind == KindSemaphore || kind == KindRWLock {
		a.req.LockDelay, a.req.limit, a.req.mode = 0, 3, mode
		if kind == KindRWLock {
			a.req.limit = 0
		}
		if err := a.pickSeats(); err != nil {
			t.Fatal(err)
		}
		if a.seats != nil {
			a.seat = a.seats.prefix + "1"
		}
	}
	if session {
		a.session, a.req.Session, a.req.TTL = 0x20, store.LeaseHex(0x20), 0
	}
	queueKey, queueRev := "", int64(0)
	switch layout {
	case "enqueue":
		a.enqueue = &queueEntry{key: e.keys.Queue(name) + "w-1", lease: 0x30}
	case "queued":
		queueKey, queueRev = e.keys.Queue(name)+"w-1", 42
	}
	now := store.NowUTC()
	tx := a.acquireTxn(queueKey, queueRev, a.holder(now), now)
	what := string(kind) + string(mode) + ", " + layout
	if session {
		what += ", session"
	}
	if capped {
		what += ", capped"
	}
	checkAcquireIx(t, what, e, a, tx, queueKey, queueRev)
}

func checkAcquireIx(t *testing.T, what string, e *Engine, a *acquirer, tx acquireTxn, queueKey string, queueRev int64) {
	t.Helper()
	won, lost := tx.ix.won, tx.ix.lost
	skey := e.keys.Session(a.req.Session)
	tallied := a.session != 0 && e.cfg.MaxLocksPerSession > 0
	if tallied {
		opIs(t, what+": won.acquired", tx.then, won.acquired, "get", e.keys.SessionTally(a.req.Session, "acquired"))
		opIs(t, what+": won.released", tx.then, won.released, "get", e.keys.SessionTally(a.req.Session, "released"))
	} else if won.acquired != -1 || won.released != -1 {
		t.Fatalf("%s: tally indices %d, %d without a tally", what, won.acquired, won.released)
	}
	name := a.req.Name
	opIs(t, what+": lost.lock", tx.els, lost.lock, "get", e.keys.Lock(a.seat))
	opIs(t, what+": lost.guard", tx.els, lost.guard, "get", e.keys.Delay(a.seat))
	checkSeatOps(t, what, e, a, tx)
	if q := opIs(t, what+": lost.queued", tx.els, lost.queued, "get", e.keys.Queue(name)); !q.IsCountOnly() {
		t.Fatalf("%s: lost.queued is not a count", what)
	}
	if q := opIs(t, what+": lost.blocking", tx.els, lost.blocking, "get", a.aheadPrefix()); !q.IsCountOnly() {
		t.Fatalf("%s: lost.blocking is not a count", what)
	}
	if a.session != 0 {
		opIs(t, what+": won.session", tx.then, won.session, "get", skey)
		opIs(t, what+": lost.session", tx.els, lost.session, "get", skey)
	} else if won.session != -1 || lost.session != -1 {
		t.Fatalf("%s: session indices %d, %d without a session", what, won.session, lost.session)
	}
	if a.enqueue != nil {
		if op := opIs(t, what+": lost.ahead", tx.els, lost.ahead, "get", a.aheadPrefix()); op.IsCountOnly() || !op.IsKeysOnly() {
			t.Fatalf("%s: lost.ahead is not the read of the entry ahead", what)
		}
	} else if lost.ahead != -1 {
		t.Fatalf("%s: lost.ahead %d without enqueue", what, lost.ahead)
	}
	if queueKey != "" {
		opIs(t, what+": lost.entry", tx.els, lost.entry, "get", queueKey)
		if op := opIs(t, what+": lost.pred", tx.els, lost.pred, "get", a.aheadPrefix()); op.MaxCreateRev() != queueRev-1 {
			t.Fatalf("%s: lost.pred reads entries up to %d, want %d", what, op.MaxCreateRev(), queueRev-1)
		}
	} else if lost.entry != -1 || lost.pred != -1 {
		t.Fatalf("%s: lost.entry %d, lost.pred %d for a direct attempt", what, lost.entry, lost.pred)
	}
	checkTermOps(t, what, e, a, tx)
}

// checkTermOps: an election's grant requires the term it read and puts
// the next, and its else branch reads the term; a lock's does neither.
func checkTermOps(t *testing.T, what string, e *Engine, a *acquirer, tx acquireTxn) {
	t.Helper()
	tkey := e.keys.Term(a.req.Name)
	puts, cmps := 0, 0
	for _, op := range tx.then {
		if op.IsPut() && string(op.KeyBytes()) == tkey {
			puts++
			if string(op.ValueBytes()) != "8" {
				t.Fatalf("%s: the grant puts term %q, want 8 (one more than the term read)", what, op.ValueBytes())
			}
		}
	}
	for _, c := range tx.cmps {
		if string(c.KeyBytes()) == tkey {
			cmps++
		}
	}
	if a.kind != KindElection {
		if puts != 0 || cmps != 0 || tx.ix.lost.term != -1 {
			t.Fatalf("%s: a lock's txn touches a term (%d puts, %d compares, index %d)", what, puts, cmps, tx.ix.lost.term)
		}
		return
	}
	if puts != 1 || cmps != 1 {
		t.Fatalf("%s: %d term puts and %d term compares, want one of each", what, puts, cmps)
	}
	opIs(t, what+": lost.term", tx.els, tx.ix.lost.term, "get", tkey)
}

// TestLookOps_IndicesNameTheirOps: with and without a session.
func TestLookOps_IndicesNameTheirOps(t *testing.T) {
	e := &Engine{cfg: DefaultConfig(), keys: store.Keys{Prefix: DefaultConfig().Prefix}}
	for _, session := range []bool{false, true} {
		a := &acquirer{e: e, req: AcquireRequest{Name: "n"}}
		if session {
			a.session, a.req.Session = 0x20, store.LeaseHex(0x20)
		}
		qkey := e.keys.Queue("n") + "w-1"
		ops, ix := a.lookOps(qkey, 42)
		opIs(t, "lock", ops, ix.lock, "get", e.keys.Lock("n"))
		if op := opIs(t, "pred", ops, ix.pred, "get", e.keys.Queue("n")); op.MaxCreateRev() != 41 {
			t.Fatalf("pred reads up to %d, want 41", op.MaxCreateRev())
		}
		opIs(t, "entry", ops, ix.entry, "get", qkey)
		if session {
			opIs(t, "session", ops, ix.session, "get", e.keys.Session(a.req.Session))
		} else if ix.session != -1 {
			t.Fatalf("session index %d without a session", ix.session)
		}
	}
}

// TestEndTxn_IndicesNameTheirOps: the end txn with and without a
// handover, and the hold reads at an offset (as a session's deletion
// packs them).
func TestEndTxn_IndicesNameTheirOps(t *testing.T) {
	e := &Engine{cfg: DefaultConfig(), keys: store.Keys{Prefix: DefaultConfig().Prefix}}
	hr := store.Holder{Owner: "o", Hold: "h", Lease: store.LeaseHex(0x10), LockDelay: time.Second}
	ev := Event{Time: store.NowUTC(), Type: EventReleased, Lock: "n"}
	head := &queueHead{key: e.keys.Queue("n") + "w-1", rev: 7, grant: store.Holder{Owner: "next", Hold: "h2", Lease: store.LeaseHex(0x11)}}
	for _, h := range []*queueHead{nil, head} {
		tx := e.endTxn("n", 5, hr, ev, h, 0)
		opIs(t, "end event", tx.then, 0, "put", e.keys.End("n", "h"))
		if h == nil {
			if tx.handOver != -1 {
				t.Fatalf("handOver %d without a head", tx.handOver)
			}
			opIs(t, "lock delete", tx.then, 1, "delete", e.keys.Lock("n"))
		} else {
			opIs(t, "handOver", tx.then, tx.handOver, "txn", "")
		}
	}
	for _, offset := range []int{0, 6} {
		ops, ix := e.holdReadOps("n", true)
		ix = ix.shifted(offset)
		all := append(make([]clientv3.Op, offset), ops...)
		opIs(t, "lock", all, ix.lock, "get", e.keys.Lock("n"))
		opIs(t, "head", all, ix.head, "get", e.keys.Queue("n"))
	}
	if _, ix := e.holdReadOps("n", false); ix.shifted(3).head != -1 {
		t.Fatalf("head index %d without the head", ix.shifted(3).head)
	}
}

// TestFencedPutTxn_IndicesNameTheirOps: the first write and a later one.
func TestFencedPutTxn_IndicesNameTheirOps(t *testing.T) {
	e := &Engine{cfg: DefaultConfig(), keys: store.Keys{Prefix: DefaultConfig().Prefix}}
	for _, first := range []bool{false, true} {
		tx := e.fencedPutTxn("r", 5, []byte(`1`), "n", first)
		opIs(t, "max", tx.els, tx.ix.max, "get", e.keys.FenceMax("r"))
		opIs(t, "lock", tx.els, tx.ix.lock, "get", e.keys.Lock("n"))
	}
}

// checkSeatOps: a permit's else branch reads the stored limit and the
// seats, a read hold's the readers' seats and the writer, a write hold's
// a reader; a lock's none of them.
func checkSeatOps(t *testing.T, what string, e *Engine, a *acquirer, tx acquireTxn) {
	t.Helper()
	lost, name := tx.ix.lost, a.req.Name
	if a.seats != nil && a.seats.stored {
		opIs(t, what+": lost.limit", tx.els, lost.limit, "get", e.keys.Seats(name))
	} else if lost.limit != -1 {
		t.Fatalf("%s: lost.limit %d without a stored limit", what, lost.limit)
	}
	if a.seats != nil {
		if op := opIs(t, what+": lost.seats", tx.els, lost.seats, "get", e.keys.Locks()+a.seats.prefix); !op.IsKeysOnly() {
			t.Fatalf("%s: lost.seats is not keys only", what)
		}
	} else if lost.seats != -1 {
		t.Fatalf("%s: lost.seats %d for an acquire that picks no seat", what, lost.seats)
	}
	switch a.mode {
	case ModeRead:
		opIs(t, what+": lost.blocker", tx.els, lost.blocker, "get", e.keys.Lock(store.WriterSeat(name)))
	case ModeWrite:
		opIs(t, what+": lost.blocker", tx.els, lost.blocker, "get", e.keys.Locks()+store.ReaderSeats(name))
	default:
		if lost.blocker != -1 {
			t.Fatalf("%s: lost.blocker %d for a %s", what, lost.blocker, a.kind)
		}
	}
}
