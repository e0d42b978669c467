package lock

import (
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
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
	e := &Engine{core: &core.Engine{Cfg: cfg, Keys: store.Keys{Prefix: cfg.Prefix}}}
	name := store.KeyName(kind, "n")
	a := &core.Acquirer{E: e.core, Req: AcquireRequest{Name: name, Owner: "o", TTL: 10 * time.Second, LockDelay: time.Second}, Hold: "h", Lease: 0x10, LeaseTTL: 10, Seat: name}
	base := core.LockKind{A: a}
	var k core.HoldKind = &base
	var err error
	switch kind {
	case KindElection:
		k = &electionKind{LockKind: base}
	case KindSemaphore:
		a.Req.LockDelay = 0
		k, err = newSeatKind(base, kind, 3, "")
	case KindRWLock:
		a.Req.LockDelay = 0
		k, err = newSeatKind(base, kind, 0, mode)
	}
	if err != nil {
		t.Fatal(err)
	}
	a.Kind = k
	switch k := k.(type) {
	case *electionKind:
		k.term = 7
	case *seatKind:
		if k.view != nil {
			a.Seat = k.view.prefix + "1"
		}
	}
	if session {
		a.Session, a.Req.Session, a.Req.TTL = 0x20, store.LeaseHex(0x20), 0
	}
	queueKey, queueRev := "", int64(0)
	switch layout {
	case "enqueue":
		a.Enqueue = &core.QueueEntry{Key: e.core.Keys.Queue(name) + "w-1", Lease: 0x30}
	case "queued":
		queueKey, queueRev = e.core.Keys.Queue(name)+"w-1", 42
	}
	now := store.NowUTC()
	tx := a.Kind.Txn(queueKey, queueRev, a.Holder(now), now)
	what := string(kind) + string(mode) + ", " + layout
	if session {
		what += ", session"
	}
	if capped {
		what += ", capped"
	}
	checkAcquireIx(t, what, e, a, tx, queueKey, queueRev)
}

func checkAcquireIx(t *testing.T, what string, e *Engine, a *core.Acquirer, tx core.AcquireTxn, queueKey string, queueRev int64) {
	t.Helper()
	won, lost, txn := tx.Won, tx.Lost, &tx.Txn
	skey := e.core.Keys.Session(a.Req.Session)
	tallied := a.Session != 0 && e.core.Cfg.MaxLocksPerSession > 0
	if tallied {
		opIs(t, what+": won.acquired", txn, won.Acquired, "get", e.core.Keys.SessionTally(a.Req.Session, "acquired"))
		opIs(t, what+": won.released", txn, won.Released, "get", e.core.Keys.SessionTally(a.Req.Session, "released"))
	} else if won.Acquired.Ok() || won.Released.Ok() {
		t.Fatalf("%s: tally reads without a tally", what)
	}
	name := a.Req.Name
	opIs(t, what+": lost.lock", txn, lost.Lock, "get", e.core.Keys.Lock(a.Seat))
	opIs(t, what+": lost.guard", txn, lost.Guard, "get", e.core.Keys.Delay(a.Seat))
	checkSeatOps(t, what, e, a, tx)
	if q := opIs(t, what+": lost.queued", txn, lost.Queued, "get", e.core.Keys.Queue(name)); !q.IsCountOnly() {
		t.Fatalf("%s: lost.queued is not a count", what)
	}
	if q := opIs(t, what+": lost.blocking", txn, lost.Blocking, "get", a.Kind.AheadPrefix()); !q.IsCountOnly() {
		t.Fatalf("%s: lost.blocking is not a count", what)
	}
	if a.Session != 0 {
		opIs(t, what+": won.session", txn, won.Session, "get", skey)
		opIs(t, what+": lost.session", txn, lost.Session, "get", skey)
	} else if won.Session.Ok() || lost.Session.Ok() {
		t.Fatalf("%s: session reads without a session", what)
	}
	if a.Enqueue != nil {
		if op := opIs(t, what+": lost.ahead", txn, lost.Ahead, "get", a.Kind.AheadPrefix()); op.IsCountOnly() || !op.IsKeysOnly() {
			t.Fatalf("%s: lost.ahead is not the read of the entry ahead", what)
		}
	} else if lost.Ahead.Ok() {
		t.Fatalf("%s: lost.ahead without enqueue", what)
	}
	if queueKey != "" {
		opIs(t, what+": lost.entry", txn, lost.Entry, "get", queueKey)
		if op := opIs(t, what+": lost.pred", txn, lost.Pred, "get", a.Kind.AheadPrefix()); op.MaxCreateRev() != queueRev-1 {
			t.Fatalf("%s: lost.pred reads entries up to %d, want %d", what, op.MaxCreateRev(), queueRev-1)
		}
	} else if lost.Entry.Ok() || lost.Pred.Ok() {
		t.Fatalf("%s: lost.entry or lost.pred for a direct attempt", what)
	}
	checkTermOps(t, what, e, a, tx)
}

// checkTermOps: an election's grant requires the term it read and puts
// the next, and its else branch reads the term; a lock's does neither.
func checkTermOps(t *testing.T, what string, e *Engine, a *core.Acquirer, tx core.AcquireTxn) {
	t.Helper()
	tkey := e.core.Keys.Term(a.Req.Name)
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
	if _, election := a.Kind.(*electionKind); !election {
		if puts != 0 || cmps != 0 || tx.Lost.Term.Ok() {
			t.Fatalf("%s: a lock's txn touches a term (%d puts, %d compares, read %v)", what, puts, cmps, tx.Lost.Term.Ok())
		}
		return
	}
	if puts != 1 || cmps != 1 {
		t.Fatalf("%s: %d term puts and %d term compares, want one of each", what, puts, cmps)
	}
	opIs(t, what+": lost.term", &tx.Txn, tx.Lost.Term, "get", tkey)
}

// TestLookOps_IndicesNameTheirOps: with and without a session.
func TestLookOps_IndicesNameTheirOps(t *testing.T) {
	e := &Engine{core: &core.Engine{Cfg: DefaultConfig(), Keys: store.Keys{Prefix: DefaultConfig().Prefix}}}
	for _, session := range []bool{false, true} {
		a := &core.Acquirer{E: e.core, Req: AcquireRequest{Name: "n"}}
		a.Kind = &core.LockKind{A: a}
		if session {
			a.Session, a.Req.Session = 0x20, store.LeaseHex(0x20)
		}
		qkey := e.core.Keys.Queue("n") + "w-1"
		lt := a.LookOps(qkey, 42, a.LockRead)
		opIs(t, "lock", &lt.Txn, lt.Lock, "get", e.core.Keys.Lock("n"))
		if op := opIs(t, "pred", &lt.Txn, lt.Pred, "get", e.core.Keys.Queue("n")); op.MaxCreateRev() != 41 {
			t.Fatalf("pred reads up to %d, want 41", op.MaxCreateRev())
		}
		opIs(t, "entry", &lt.Txn, lt.Entry, "get", qkey)
		if session {
			opIs(t, "session", &lt.Txn, lt.Session, "get", e.core.Keys.Session(a.Req.Session))
		} else if lt.Session.Ok() {
			t.Fatal("a session read without a session")
		}
	}
}

// TestEndTxn_IndicesNameTheirOps: the end txn with and without a
// handover, and the hold reads after other ops (as a session's deletion
// packs them).
func TestEndTxn_IndicesNameTheirOps(t *testing.T) {
	e := &Engine{core: &core.Engine{Cfg: DefaultConfig(), Keys: store.Keys{Prefix: DefaultConfig().Prefix}}}
	hr := store.Holder{Owner: "o", Hold: "h", Lease: store.LeaseHex(0x10), LockDelay: time.Second}
	ev := Event{Time: store.NowUTC(), Type: EventReleased, Lock: "n"}
	head := &core.QueueHead{Key: e.core.Keys.Queue("n") + "w-1", Rev: 7, Grant: store.Holder{Owner: "next", Hold: "h2", Lease: store.LeaseHex(0x11)}}
	for _, h := range []*core.QueueHead{nil, head} {
		var tx store.Txn
		end := e.core.EndTxn(&tx, "n", 5, hr, ev, h, 0)
		opAt(t, "end event", tx.Then, 0, "put", e.core.Keys.End("n", "h"))
		if h == nil {
			if end.HandOver.Ok() {
				t.Fatal("a handover without a head")
			}
			opAt(t, "lock delete", tx.Then, 1, "delete", e.core.Keys.Lock("n"))
		} else {
			opIs(t, "handOver", &tx, end.HandOver, "txn", "")
		}
	}
	for _, before := range []int{0, 6} {
		var tx store.Txn
		for range before {
			tx.OnSuccess(clientv3.OpGet("other"))
		}
		r := e.core.HoldReads(&tx, "n", true)
		opIs(t, "lock", &tx, r.Lock, "get", e.core.Keys.Lock("n"))
		opIs(t, "head", &tx, r.Head, "get", e.core.Keys.Queue("n"))
	}
	var tx store.Txn
	tx.OnSuccess(clientv3.OpGet("other"))
	if r := e.core.HoldReads(&tx, "n", false); r.Head.Ok() {
		t.Fatal("a head read without the head")
	}
}

// checkSeatOps: a permit's else branch reads the stored limit and the
// seats, a read hold's the readers' seats and the writer, a write hold's
// a reader; a lock's none of them.
func checkSeatOps(t *testing.T, what string, e *Engine, a *core.Acquirer, tx core.AcquireTxn) {
	t.Helper()
	lost, name, txn := tx.Lost, a.Req.Name, &tx.Txn
	var view *seatView
	var mode RWMode
	if k, ok := a.Kind.(*seatKind); ok {
		view, mode = k.view, k.mode
	}
	if view != nil && view.stored {
		opIs(t, what+": lost.limit", txn, lost.Limit, "get", e.core.Keys.Seats(name))
	} else if lost.Limit.Ok() {
		t.Fatalf("%s: lost.limit without a stored limit", what)
	}
	if view != nil {
		if op := opIs(t, what+": lost.seats", txn, lost.Seats, "get", e.core.Keys.Locks()+view.prefix); !op.IsKeysOnly() {
			t.Fatalf("%s: lost.seats is not keys only", what)
		}
	} else if lost.Seats.Ok() {
		t.Fatalf("%s: lost.seats for an acquire that picks no seat", what)
	}
	switch mode {
	case ModeRead:
		opIs(t, what+": lost.blocker", txn, lost.Blocker, "get", e.core.Keys.Lock(store.WriterSeat(name)))
	case ModeWrite:
		opIs(t, what+": lost.blocker", txn, lost.Blocker, "get", e.core.Keys.Locks()+store.ReaderSeats(name))
	default:
		if lost.Blocker.Ok() {
			t.Fatalf("%s: lost.blocker for a %T", what, a.Kind)
		}
	}
}
