package lock

import (
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// opIs fails t unless r names an op of tx that reads (get), puts or
// deletes key, as kind says (or is a nested txn).
func opIs(t *testing.T, what string, tx *store.Txn, r store.Ref, kind, key string) clientv3.Op {
	t.Helper()
	if !r.Ok() {
		t.Fatalf("%s: names no op", what)
	}
	return opAt(t, what, []clientv3.Op{tx.OpOf(r)}, 0, kind, key)
}

// opAt fails t unless ops[i] reads (get), puts or deletes key, as kind
// says (or is a nested txn).
func opAt(t *testing.T, what string, ops []clientv3.Op, i int, kind, key string) clientv3.Op {
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
// name says, and that a Ref the layout lacks names no op.
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
	e := &Engine{Core: &Core{cfg: cfg, keys: store.Keys{Prefix: cfg.Prefix}}}
	name := store.KeyName(kind, "n")
	a := &acquirer{e: e.Core, req: AcquireRequest{Name: name, Owner: "o", TTL: 10 * time.Second, LockDelay: time.Second}, hold: "h", lease: 0x10, leaseTTL: 10, seat: name}
	base := lockKind{a: a}
	var k holdKind = &base
	var err error
	switch kind {
	case KindElection:
		k = &electionKind{lockKind: base}
	case KindSemaphore:
		a.req.LockDelay = 0
		k, err = newSeatKind(base, kind, 3, "")
	case KindRWLock:
		a.req.LockDelay = 0
		k, err = newSeatKind(base, kind, 0, mode)
	}
	if err != nil {
		t.Fatal(err)
	}
	a.kind = k
	switch k := k.(type) {
	case *electionKind:
		k.term = 7
	case *seatKind:
		if k.view != nil {
			a.seat = k.view.prefix + "1"
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
	tx := a.kind.txn(queueKey, queueRev, a.holder(now), now)
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
	won, lost, txn := tx.won, tx.lost, &tx.Txn
	skey := e.keys.Session(a.req.Session)
	tallied := a.session != 0 && e.cfg.MaxLocksPerSession > 0
	if tallied {
		opIs(t, what+": won.acquired", txn, won.acquired, "get", e.keys.SessionTally(a.req.Session, "acquired"))
		opIs(t, what+": won.released", txn, won.released, "get", e.keys.SessionTally(a.req.Session, "released"))
	} else if won.acquired.Ok() || won.released.Ok() {
		t.Fatalf("%s: tally reads without a tally", what)
	}
	name := a.req.Name
	opIs(t, what+": lost.lock", txn, lost.lock, "get", e.keys.Lock(a.seat))
	opIs(t, what+": lost.guard", txn, lost.guard, "get", e.keys.Delay(a.seat))
	checkSeatOps(t, what, e, a, tx)
	if q := opIs(t, what+": lost.queued", txn, lost.queued, "get", e.keys.Queue(name)); !q.IsCountOnly() {
		t.Fatalf("%s: lost.queued is not a count", what)
	}
	if q := opIs(t, what+": lost.blocking", txn, lost.blocking, "get", a.kind.aheadPrefix()); !q.IsCountOnly() {
		t.Fatalf("%s: lost.blocking is not a count", what)
	}
	if a.session != 0 {
		opIs(t, what+": won.session", txn, won.session, "get", skey)
		opIs(t, what+": lost.session", txn, lost.session, "get", skey)
	} else if won.session.Ok() || lost.session.Ok() {
		t.Fatalf("%s: session reads without a session", what)
	}
	if a.enqueue != nil {
		if op := opIs(t, what+": lost.ahead", txn, lost.ahead, "get", a.kind.aheadPrefix()); op.IsCountOnly() || !op.IsKeysOnly() {
			t.Fatalf("%s: lost.ahead is not the read of the entry ahead", what)
		}
	} else if lost.ahead.Ok() {
		t.Fatalf("%s: lost.ahead without enqueue", what)
	}
	if queueKey != "" {
		opIs(t, what+": lost.entry", txn, lost.entry, "get", queueKey)
		if op := opIs(t, what+": lost.pred", txn, lost.pred, "get", a.kind.aheadPrefix()); op.MaxCreateRev() != queueRev-1 {
			t.Fatalf("%s: lost.pred reads entries up to %d, want %d", what, op.MaxCreateRev(), queueRev-1)
		}
	} else if lost.entry.Ok() || lost.pred.Ok() {
		t.Fatalf("%s: lost.entry or lost.pred for a direct attempt", what)
	}
	checkTermOps(t, what, e, a, tx)
}

// checkTermOps: an election's grant requires the term it read and puts
// the next, and its else branch reads the term; a lock's does neither.
func checkTermOps(t *testing.T, what string, e *Engine, a *acquirer, tx acquireTxn) {
	t.Helper()
	tkey := e.keys.Term(a.req.Name)
	puts, cmps := 0, 0
	for _, op := range tx.Then {
		if op.IsPut() && string(op.KeyBytes()) == tkey {
			puts++
			if string(op.ValueBytes()) != "8" {
				t.Fatalf("%s: the grant puts term %q, want 8 (one more than the term read)", what, op.ValueBytes())
			}
		}
	}
	for _, c := range tx.Cmps {
		if string(c.KeyBytes()) == tkey {
			cmps++
		}
	}
	if _, election := a.kind.(*electionKind); !election {
		if puts != 0 || cmps != 0 || tx.lost.term.Ok() {
			t.Fatalf("%s: a lock's txn touches a term (%d puts, %d compares, read %v)", what, puts, cmps, tx.lost.term.Ok())
		}
		return
	}
	if puts != 1 || cmps != 1 {
		t.Fatalf("%s: %d term puts and %d term compares, want one of each", what, puts, cmps)
	}
	opIs(t, what+": lost.term", &tx.Txn, tx.lost.term, "get", tkey)
}

// TestLookOps_IndicesNameTheirOps: with and without a session.
func TestLookOps_IndicesNameTheirOps(t *testing.T) {
	e := &Engine{Core: &Core{cfg: DefaultConfig(), keys: store.Keys{Prefix: DefaultConfig().Prefix}}}
	for _, session := range []bool{false, true} {
		a := &acquirer{e: e.Core, req: AcquireRequest{Name: "n"}}
		a.kind = &lockKind{a: a}
		if session {
			a.session, a.req.Session = 0x20, store.LeaseHex(0x20)
		}
		qkey := e.keys.Queue("n") + "w-1"
		lt := a.lookOps(qkey, 42, a.lockRead)
		opIs(t, "lock", &lt.Txn, lt.lock, "get", e.keys.Lock("n"))
		if op := opIs(t, "pred", &lt.Txn, lt.pred, "get", e.keys.Queue("n")); op.MaxCreateRev() != 41 {
			t.Fatalf("pred reads up to %d, want 41", op.MaxCreateRev())
		}
		opIs(t, "entry", &lt.Txn, lt.entry, "get", qkey)
		if session {
			opIs(t, "session", &lt.Txn, lt.session, "get", e.keys.Session(a.req.Session))
		} else if lt.session.Ok() {
			t.Fatal("a session read without a session")
		}
	}
}

// TestEndTxn_IndicesNameTheirOps: the end txn with and without a
// handover, and the hold reads after other ops (as a session's deletion
// packs them).
func TestEndTxn_IndicesNameTheirOps(t *testing.T) {
	e := &Engine{Core: &Core{cfg: DefaultConfig(), keys: store.Keys{Prefix: DefaultConfig().Prefix}}}
	hr := store.Holder{Owner: "o", Hold: "h", Lease: store.LeaseHex(0x10), LockDelay: time.Second}
	ev := Event{Time: store.NowUTC(), Type: EventReleased, Lock: "n"}
	head := &queueHead{key: e.keys.Queue("n") + "w-1", rev: 7, grant: store.Holder{Owner: "next", Hold: "h2", Lease: store.LeaseHex(0x11)}}
	for _, h := range []*queueHead{nil, head} {
		var tx store.Txn
		end := e.endTxn(&tx, "n", 5, hr, ev, h, 0)
		opAt(t, "end event", tx.Then, 0, "put", e.keys.End("n", "h"))
		if h == nil {
			if end.handOver.Ok() {
				t.Fatal("a handover without a head")
			}
			opAt(t, "lock delete", tx.Then, 1, "delete", e.keys.Lock("n"))
		} else {
			opIs(t, "handOver", &tx, end.handOver, "txn", "")
		}
	}
	for _, before := range []int{0, 6} {
		var tx store.Txn
		for range before {
			tx.OnSuccess(clientv3.OpGet("other"))
		}
		r := e.holdReads(&tx, "n", true)
		opIs(t, "lock", &tx, r.lock, "get", e.keys.Lock("n"))
		opIs(t, "head", &tx, r.head, "get", e.keys.Queue("n"))
	}
	var tx store.Txn
	tx.OnSuccess(clientv3.OpGet("other"))
	if r := e.holdReads(&tx, "n", false); r.head.Ok() {
		t.Fatal("a head read without the head")
	}
}

// checkSeatOps: a permit's else branch reads the stored limit and the
// seats, a read hold's the readers' seats and the writer, a write hold's
// a reader; a lock's none of them.
func checkSeatOps(t *testing.T, what string, e *Engine, a *acquirer, tx acquireTxn) {
	t.Helper()
	lost, name, txn := tx.lost, a.req.Name, &tx.Txn
	var view *seatView
	var mode RWMode
	if k, ok := a.kind.(*seatKind); ok {
		view, mode = k.view, k.mode
	}
	if view != nil && view.stored {
		opIs(t, what+": lost.limit", txn, lost.limit, "get", e.keys.Seats(name))
	} else if lost.limit.Ok() {
		t.Fatalf("%s: lost.limit without a stored limit", what)
	}
	if view != nil {
		if op := opIs(t, what+": lost.seats", txn, lost.seats, "get", e.keys.Locks()+view.prefix); !op.IsKeysOnly() {
			t.Fatalf("%s: lost.seats is not keys only", what)
		}
	} else if lost.seats.Ok() {
		t.Fatalf("%s: lost.seats for an acquire that picks no seat", what)
	}
	switch mode {
	case ModeRead:
		opIs(t, what+": lost.blocker", txn, lost.blocker, "get", e.keys.Lock(store.WriterSeat(name)))
	case ModeWrite:
		opIs(t, what+": lost.blocker", txn, lost.blocker, "get", e.keys.Locks()+store.ReaderSeats(name))
	default:
		if lost.blocker.Ok() {
			t.Fatalf("%s: lost.blocker for a %T", what, a.kind)
		}
	}
}
