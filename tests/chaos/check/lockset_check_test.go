package check

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Builders of synthetic lock set ops, as check_test.go's for locks: every
// op is in pool "p"; the owner of client n is "lsn" for a set, "cn" for a
// single lock.

func mkSetAcquire(client int, names []string, call, ret int64, res Result, token int64) Op {
	op := Op{Client: client, Kind: SetAcquire, Set: names, Pool: "p", Owner: fmt.Sprintf("ls%d", client),
		Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken = token
	}
	if res == Rejected {
		op.Code = "lock_held"
	}
	return op
}

func mkSetRenew(client int, names []string, token, call, ret int64, res Result) Op {
	op := Op{Client: client, Kind: SetRenew, Set: names, Pool: "p", Token: token, Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken = token
	}
	return op
}

func mkSetRelease(client int, names []string, token, call, ret int64, res Result) Op {
	return Op{Client: client, Kind: SetRelease, Set: names, Pool: "p", Token: token, Call: call, Return: ret, Result: res}
}

// inPool puts a lock op in pool "p".
func inPool(op Op) Op {
	op.Pool = "p"
	return op
}

func set(names ...string) []string { return names }

func TestLockSetModel_LegalHistories(t *testing.T) {
	tests := []historyCase{
		{"a set is granted, renewed, written, read and released, then its locks are taken alone", mkHistory(
			mkSetAcquire(0, set("b", "a"), 0, 10, OK, 5),
			mkSetRenew(0, set("b", "a"), 5, 20, 30, OK),
			inPool(mkFPut(0, "a", 5, `"x"`, 31, 32, OK)),
			inPool(mkFPut(0, "b", 5, `"x"`, 31, 32, OK)),
			inPool(mkGet(1, "a", 35, 40, OK, 5)),
			inPool(mkGet(1, "b", 35, 40, OK, 5)),
			mkSetRelease(0, set("b", "a"), 5, 50, 60, OK),
			inPool(mkGet(1, "b", 70, 80, Rejected, 0)),
			inPool(mkAcquire(1, "a", 90, 100, OK, 9)),
			inPool(mkAcquire(2, "b", 90, 100, OK, 10)),
			inPool(mkFPut(1, "a", 9, `"y"`, 110, 120, OK)),
			inPool(mkFGet(2, "a", 130, 140, OK, 9, `"y"`)),
		)},
		{"sets of disjoint locks are held at once; one over both waits for them", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			mkSetAcquire(1, set("d", "c"), 0, 10, OK, 6),
			mkSetAcquire(2, set("c", "b", "a"), 5, 100, OK, 12),
			mkSetRelease(0, set("a", "b"), 5, 20, 30, OK),
			mkSetRelease(1, set("d", "c"), 6, 40, 50, OK),
			inPool(mkGet(3, "d", 110, 120, Rejected, 0)),
			mkSetRenew(2, set("c", "b", "a"), 12, 110, 120, OK),
		)},
		{"a single hold expires and a set takes its lock; the single holder is refused", mkHistory(
			inPool(mkAcquire(0, "a", 0, 10, OK, 5)),
			mkSetAcquire(1, set("a", "b"), 20, 30, OK, 9),
			inPool(mkFPut(1, "a", 9, `"s"`, 32, 35, OK)),
			inPool(mkRenew(0, "a", 5, 40, 50, Rejected)),
			inPool(mkFPut(0, "a", 5, `"late"`, 40, 50, Rejected)),
			inPool(mkGet(2, "a", 60, 70, OK, 9)),
		)},
		{"a set expires whole: its renew is refused, then its locks are free", mkHistory(
			mkSetAcquire(0, set("a", "b", "c"), 0, 10, OK, 5),
			mkSetRenew(0, set("a", "b", "c"), 5, 5000, 5010, Rejected),
			inPool(mkGet(1, "b", 5020, 5030, Rejected, 0)),
			inPool(mkAcquire(1, "c", 5040, 5050, OK, 9)),
			mkSetRelease(0, set("a", "b", "c"), 5, 5060, 5070, Rejected),
		)},
		{"a set and a single acquire of one of its locks, concurrent: either order", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 50, OK, 9),
			inPool(mkAcquire(1, "b", 10, 20, OK, 7)),
			inPool(mkGet(2, "a", 60, 70, OK, 9)),
			inPool(mkGet(2, "b", 60, 70, OK, 9)),
		)},
		{"an Unknown set acquire took effect: a read of one member shows its token, the release ends them all", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, Unknown, 0),
			inPool(mkGet(1, "b", 20, 30, OK, 7)),
			mkSetRenew(0, set("a", "b"), 7, 40, 50, OK),
			mkSetRelease(0, set("a", "b"), 7, 60, 70, OK),
			inPool(mkGet(1, "a", 80, 90, Rejected, 0)),
		)},
		{"an Unknown set acquire that never took effect", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, Unknown, 0),
			inPool(mkAcquire(1, "a", 20, 30, OK, 5)),
			inPool(mkGet(2, "b", 40, 50, Rejected, 0)),
			inPool(mkRenew(1, "a", 5, 60, 70, OK)),
		)},
		{"an Unknown set release took effect", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			mkSetRelease(0, set("a", "b"), 5, 20, 30, Unknown),
			inPool(mkGet(1, "a", 40, 50, Rejected, 0)),
			mkSetRelease(0, set("a", "b"), 5, 60, 70, Rejected),
		)},
		{"a set refused while a member is held changes nothing", mkHistory(
			inPool(mkAcquire(0, "a", 0, 10, OK, 5)),
			mkSetAcquire(1, set("b", "a"), 20, 30, Rejected, 0),
			inPool(mkGet(2, "b", 40, 50, Rejected, 0)),
			inPool(mkRelease(0, "a", 5, 60, 70, OK)),
		)},
		{"grants batched into one txn share a token: a set and a single lock of 9, the set ends alone", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 9),
			inPool(mkAcquire(1, "c", 0, 10, OK, 9)),
			mkSetRenew(0, set("a", "b"), 9, 20, 30, Rejected),
			inPool(mkGet(2, "c", 40, 50, OK, 9)),
			inPool(mkGet(2, "a", 40, 50, Rejected, 0)),
		)},
		{"failed ops never happened", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			mkSetAcquire(1, set("b", "c"), 20, 30, Failed, 0),
			mkSetRelease(1, set("a", "b"), 5, 20, 30, Failed),
			mkSetRenew(0, set("a", "b"), 5, 40, 50, OK),
		)},
	}
	checkHistories(t, CheckLockSets, true, tests)
}

func TestLockSetModel_IllegalHistories(t *testing.T) {
	tests := []historyCase{
		{"a set is held in part: one member is free, another still held with its token", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			inPool(mkGet(1, "b", 20, 30, Rejected, 0)),
			inPool(mkGet(1, "a", 40, 50, OK, 5)),
		)},
		{"a set is held in part: a member is granted alone, and the set is renewed", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			inPool(mkAcquire(1, "b", 20, 30, OK, 9)),
			mkSetRenew(0, set("a", "b"), 5, 40, 50, OK),
		)},
		{"a set is held in part: a member is granted alone, and another member still writes as the set", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			inPool(mkAcquire(1, "b", 20, 30, OK, 9)),
			inPool(mkGet(2, "a", 40, 50, OK, 5)),
		)},
		{"two holders of a name: a single hold renewed after a set took its lock", mkHistory(
			inPool(mkAcquire(0, "a", 0, 10, OK, 5)),
			mkSetAcquire(1, set("b", "a"), 20, 30, OK, 9),
			inPool(mkRenew(0, "a", 5, 40, 50, OK)),
		)},
		{"two holders of a name: two sets sharing a lock, both renewed after both were granted", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			mkSetAcquire(1, set("c", "b"), 0, 10, OK, 6),
			mkSetRenew(0, set("a", "b"), 5, 20, 30, OK),
			mkSetRenew(1, set("c", "b"), 6, 20, 30, OK),
		)},
		{"a set's grant below a token its lock already saw", mkHistory(
			inPool(mkAcquire(0, "b", 0, 10, OK, 9)),
			inPool(mkRelease(0, "b", 9, 20, 30, OK)),
			mkSetAcquire(1, set("a", "b"), 40, 50, OK, 7),
		)},
		{"a set is released twice", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			mkSetRelease(0, set("a", "b"), 5, 20, 30, OK),
			mkSetRelease(0, set("a", "b"), 5, 40, 50, OK),
		)},
		{"a released set is renewed", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			mkSetRelease(0, set("a", "b"), 5, 20, 30, OK),
			mkSetRenew(0, set("a", "b"), 5, 40, 50, OK),
		)},
		{"a set is renewed after a renew of it was refused", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			mkSetRenew(0, set("a", "b"), 5, 20, 30, Rejected),
			inPool(mkGet(1, "b", 40, 50, OK, 5)),
		)},
		{"a released set's member is still read held", mkHistory(
			mkSetAcquire(0, set("a", "b", "c"), 0, 10, OK, 5),
			mkSetRelease(0, set("a", "b", "c"), 5, 20, 30, OK),
			inPool(mkGet(1, "c", 40, 50, OK, 5)),
		)},
		{"an Unknown set's token shows on one member while another member is held by someone else", mkHistory(
			inPool(mkAcquire(1, "b", 0, 10, OK, 3)),
			mkSetAcquire(0, set("a", "b"), 20, 30, Unknown, 0),
			inPool(mkGet(2, "a", 40, 50, OK, 7)),
			inPool(mkRenew(1, "b", 3, 60, 70, OK)),
		)},
		{"a set renewed whose members are held by two grants batched at its token", mkHistory(
			mkSetAcquire(0, set("a", "c"), 0, 10, OK, 9),
			inPool(mkAcquire(1, "b", 0, 10, OK, 9)),
			mkSetRenew(0, set("a", "b"), 9, 20, 30, OK),
		)},
		{"a stale fenced write of a set holder is accepted after a higher token wrote", mkHistory(
			mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
			inPool(mkAcquire(1, "a", 20, 30, OK, 9)),
			inPool(mkFPut(1, "a", 9, `"y"`, 40, 50, OK)),
			inPool(mkFPut(0, "a", 5, `"x"`, 60, 70, OK)),
		)},
	}
	checkHistories(t, CheckLockSets, false, tests)
}

func TestCheckLockSets_WritesVisualisationWhenIllegal(t *testing.T) {
	html := filepath.Join(t.TempDir(), "locksets.html")
	ok, err := CheckLockSets(mkHistory(
		mkSetAcquire(0, set("b", "a"), 0, 10, OK, 5),
		inPool(mkGet(1, "b", 20, 30, Rejected, 0)),
		inPool(mkGet(1, "a", 40, 50, OK, 5)),
	), 10*time.Second, html)
	if err != nil || ok {
		t.Fatalf("CheckLockSets = %v, %v; want false, nil", ok, err)
	}
	assertFileHas(t, html, "<html", "set-acquire ls0 b,a → 5", "a: holder 5 last 5 fenced none; b: holder 5 last 5 fenced none")
}

func TestCheckLockSets_RefusesPoolsOverTheModels(t *testing.T) {
	var names []string
	for i := range MaxPoolLocks + 1 {
		names = append(names, fmt.Sprintf("l%d", i))
	}
	if _, err := CheckLockSets(mkHistory(mkSetAcquire(0, names, 0, 10, OK, 5)), 10*time.Second, ""); err == nil {
		t.Errorf("CheckLockSets of a pool of %d locks: no error", len(names))
	}
}

// The lock model leaves a pool's ops alone, the pool's model the lock
// ops outside it; the lock audit leaves set members' events alone.
func TestCheckers_LeaveLockSetsAlone(t *testing.T) {
	ops := mkHistory(
		mkSetAcquire(0, set("a", "b"), 0, 10, OK, 5),
		inPool(mkAcquire(1, "a", 20, 30, OK, 3)), // below the set's token: the pool model's business
		mkAcquire(2, "a", 0, 10, OK, 5),          // a lock "a" outside the pool
		mkRelease(2, "a", 5, 20, 30, OK),
	)
	if ok, err := CheckLinearizable(ops, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckLinearizable = %v, %v; want true, nil", ok, err)
	}
	if ok, err := CheckLockSets(ops, 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckLockSets = %v, %v; want false, nil", ok, err)
	}
	if ok, err := CheckLockSets(ops[2:], 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckLockSets of the lock ops outside the pool = %v, %v; want true, nil", ok, err)
	}
	events := []AuditEvent{
		setEvent(5, "acquired", "a", "ls0", 5, "a", "b"),
		setEvent(5, "acquired", "b", "ls0", 5, "a", "b"),
	}
	assertProblems(t, CheckAudit(ops[2:3], events), []string{"acquire op 2: lock \"a\" token 5 has no acquired event"})
}

func TestCheckTokenOrder_SpansLockSets(t *testing.T) {
	assertProblems(t, CheckTokenOrder(mkHistory(
		mkSetAcquire(0, set("a", "b"), 0, 10, OK, 9),
		inPool(mkAcquire(1, "c", 20, 30, OK, 7)),
	)), []string{
		"set-acquire op 0 (lock set \"a,b\") returned token 9 at 10ns, but acquire op 1 (lock \"c\") called later at 20ns got token 7",
	})
}

// setEvent is an event of lock set member lock at revision rev; without
// names, of a single lock.
func setEvent(rev int64, typ, lock, owner string, token int64, names ...string) AuditEvent {
	return AuditEvent{Revision: rev, Type: typ, Kind: "lock", Name: lock, Lock: lock, Owner: owner, Token: token, Set: names}
}

func TestCheckLockSetAudit(t *testing.T) {
	ops := mkHistory(
		mkSetAcquire(0, set("a", "b"), 0, 10, OK, 9),
		mkSetRelease(0, set("a", "b"), 9, 20, 30, OK),
		mkSetAcquire(1, set("c", "b"), 40, 50, OK, 14), // expires
		inPool(mkAcquire(3, "a", 40, 50, OK, 11)),      // expires
		mkSetAcquire(2, set("a", "c"), 60, 70, Unknown, 0),
		mkSetAcquire(4, set("a", "b"), 60, 70, Rejected, 0),
		mkSetAcquire(5, set("a", "b", "c"), 60, 70, Unknown, 0), // never took effect
	)
	ab, cb, ac := set("a", "b"), set("c", "b"), set("a", "c")
	trail := []AuditEvent{
		setEvent(9, "acquired", "a", "ls0", 9, ab...),
		setEvent(9, "acquired", "b", "ls0", 9, ab...),
		setEvent(10, "released", "a", "ls0", 9, ab...),
		setEvent(10, "released", "b", "ls0", 9, ab...),
		setEvent(11, "acquired", "a", "c3", 11),
		setEvent(14, "acquired", "c", "ls1", 14, cb...),
		setEvent(14, "acquired", "b", "ls1", 14, cb...),
		deletedAt(setEvent(15, "expired", "a", "c3", 11), 13),
		deletedAt(setEvent(17, "expired", "c", "ls1", 14, cb...), 16),
		deletedAt(setEvent(18, "expired", "b", "ls1", 14, cb...), 16),
		setEvent(20, "acquired", "a", "ls2", 20, ac...), // the Unknown acquire took effect
		setEvent(20, "acquired", "c", "ls2", 20, ac...),
		deletedAt(setEvent(24, "expired", "a", "ls2", 20, ac...), 23),
		deletedAt(setEvent(25, "expired", "c", "ls2", 20, ac...), 23),
	}
	without, with, replaced := trailEdits(trail)
	grantOf := func(rev int64, owner string, token int64, names ...string) []AuditEvent {
		var evs []AuditEvent
		for _, n := range names {
			evs = append(evs, setEvent(rev, "acquired", n, owner, token, names...))
		}
		for _, n := range names {
			evs = append(evs, setEvent(rev+1, "released", n, owner, token, names...))
		}
		return evs
	}

	tests := []auditCase{
		{"the trail matches the ops", trail, nil},
		{"a set's revision is split", replaced(1, setEvent(8, "acquired", "b", "ls0", 9, ab...)), []string{
			"lock set [a b] token 9: acquired at revisions a at 9, b at 8; want every member at revision 9, its token",
		}},
		{"a member's acquired event is missing", without(1), []string{
			"lock set [a b] token 9: no acquired event of \"b\"",
			"set member \"b\" token 9: released without an acquired event",
		}},
		{"an acknowledged grant is missing", slices.Delete(slices.Clone(trail), 0, 2), []string{
			"set-acquire op 0: lock set [a b] token 9 has no acquired event",
			"set member \"a\" token 9: released without an acquired event",
			"set member \"b\" token 9: released without an acquired event",
		}},
		{"a member is acquired twice", with(setEvent(9, "acquired", "b", "ls0", 9, ab...)), []string{
			"set member \"b\" token 9: 2 acquired events",
		}},
		{"a member ends twice", with(deletedAt(setEvent(12, "expired", "b", "ls0", 9, ab...), 12)), []string{
			"set member \"b\" token 9: 2 end events (released, expired)",
		}},
		{"a member never ends", without(9), []string{
			"set member \"b\" token 14: acquired but never ended",
		}},
		{"a released set's members end at two revisions", replaced(3, setEvent(12, "released", "b", "ls0", 9, ab...)), []string{
			"lock set [a b] token 9: its members end apart: a released at 10, b released at 12",
		}},
		{"an expired set's members are deleted at two revisions", replaced(9, deletedAt(setEvent(18, "expired", "b", "ls1", 14, cb...), 18)), []string{
			"lock set [c b] token 14: its members end apart: c expired at 16, b expired at 18",
		}},
		{"a released set's member is recorded as expired", replaced(2, deletedAt(setEvent(10, "expired", "a", "ls0", 9, ab...), 10)), []string{
			"set-release op 1: lock \"a\" token 9 has no released event (ends: expired)",
			"lock set [a b] token 9: its members end apart: a expired at 10, b released at 10",
		}},
		{"the trail names the set in another order", func() []AuditEvent {
			out := replaced(0, setEvent(9, "acquired", "a", "ls0", 9, "b", "a"))
			out[1] = setEvent(9, "acquired", "b", "ls0", 9, "b", "a")
			return out
		}(), []string{
			"set-acquire op 0: lock set [a b] token 9 is the set [b a] in the trail",
		}},
		{"a member's event names another set", replaced(1, setEvent(9, "acquired", "b", "ls0", 9, "a", "b", "c")), []string{
			"lock set [a b] token 9: no acquired event of \"b\"",
			"lock set [a b c] token 9: no acquired event of \"a\"",
			"lock set [a b c] token 9: no acquired event of \"c\"",
			"1 lock set grants (tokens [9]) match no set-acquire OK",
		}},
		{"a lock outside the set is acquired with it", with(setEvent(9, "acquired", "c", "ls0", 9, ab...), setEvent(10, "released", "c", "ls0", 9, ab...)), []string{
			"lock set [a b] token 9: \"c\" is acquired with it, but is not in its set",
		}},
		{"a single hold overlaps a set's", with(setEvent(15, "acquired", "b", "c9", 15), setEvent(19, "released", "b", "c9", 15)), []string{
			"lock \"b\": the hold of token 15 (revisions 15 to 19) began while the hold of token 14 (set [c b], revisions 14 to 16) was held",
		}},
		{"a refused set acquire is granted", with(grantOf(30, "ls4", 30, "a", "b")...), []string{
			"set-acquire op 5 (client 4, node 0) was refused (rejected 0 lock_held after 0s, wait \"\"), but the trail shows its owner \"ls4\" granted lock set [a b] with token 30",
		}},
		{"a grant no acquire explains", with(grantOf(30, "ls9", 30, "b", "c")...), []string{
			"1 lock set grants (tokens [30]) match no set-acquire OK, but only 0 set acquires were Unknown with an owner used twice",
		}},
		{"sets the run never touched are not its business", with(grantOf(40, "ops", 40, "x", "y")...), nil},
	}
	checkAudits(t, CheckLockSetAudit, ops, tests)
}

// Sets granted in one txn share its revision, so their token: the audit
// tells them apart by their names.
func TestCheckLockSetAudit_BatchedGrants(t *testing.T) {
	ops := mkHistory(
		mkSetAcquire(0, set("a", "b"), 0, 10, OK, 9),
		mkSetAcquire(1, set("d", "c"), 0, 10, OK, 9),
		mkSetRelease(0, set("a", "b"), 9, 20, 30, OK),
		mkSetRelease(1, set("d", "c"), 9, 20, 30, OK),
	)
	var trail []AuditEvent
	for _, g := range []struct {
		owner string
		names []string
	}{{"ls0", set("a", "b")}, {"ls1", set("d", "c")}} {
		for _, n := range g.names {
			trail = append(trail, setEvent(9, "acquired", n, g.owner, 9, g.names...))
		}
		for _, n := range g.names {
			trail = append(trail, setEvent(10, "released", n, g.owner, 9, g.names...))
		}
	}
	assertProblems(t, CheckLockSetAudit(ops, trail), nil)
	if ok, err := CheckLockSets(ops, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckLockSets = %v, %v; want true, nil", ok, err)
	}
}

func TestResolveLockSets(t *testing.T) {
	ops := mkHistory(
		mkSetAcquire(0, set("a", "b"), 0, 10, Unknown, 0),   // granted, as the trail says
		mkSetAcquire(1, set("b", "c"), 0, 10, Unknown, 0),   // never granted
		inPool(mkAcquire(2, "c", 20, 30, Unknown, 0)),       // granted
		inPool(mkAcquire(3, "c", 20, 30, Unknown, 0)),       // never granted
		mkAcquire(4, "c", 20, 30, Unknown, 0),               // not in the pool: LockModel's
		mkSetAcquire(5, set("c", "d"), 40, 50, OK, 12),      // answered
		mkSetRelease(5, set("c", "d"), 12, 60, 70, Unknown), // not an acquire
		func() Op { // refused while the Unknown set held "a"
			op := mkSetAcquire(6, set("b", "e"), 60, 70, Rejected, 0)
			op.OutHolders = []LockHolder{{"b", 7}}
			return op
		}(),
	)
	events := []AuditEvent{
		setEvent(7, "acquired", "a", "ls0", 7, "a", "b"),
		setEvent(7, "acquired", "b", "ls0", 7, "a", "b"),
		setEvent(9, "acquired", "c", "c2", 9),
		setEvent(12, "acquired", "c", "ls5", 12, "c", "d"),
		setEvent(12, "acquired", "d", "ls5", 12, "c", "d"),
	}
	got := ResolveLockSets(ops, events)
	if len(got) != len(ops)+1 {
		t.Fatalf("ResolveLockSets returned %d ops; want %d and the refusal's holder as a get", len(got), len(ops))
	}
	if g := got[len(ops)]; g.Kind != Get || g.Lock != "b" || g.Pool != "p" || g.Result != OK || g.OutToken != 7 || g.Call != 60 || g.Return != 70 || g.ID != len(ops) {
		t.Errorf("the refusal's holder: %+v; want a get OK of \"b\" in pool \"p\" showing 7 over the refusal's interval", g)
	}
	if g := got[0]; g.Result != OK || g.OutToken != 7 || g.Return != 71 {
		t.Errorf("the Unknown set acquire the trail grants: %+v; want OK, token 7, pending past the last return", g)
	}
	if g := got[2]; g.Result != OK || g.OutToken != 9 || g.Return != 71 {
		t.Errorf("the Unknown single acquire the trail grants: %+v; want OK, token 9, pending past the last return", g)
	}
	for _, i := range []int{1, 3} {
		if got[i].Result != Failed {
			t.Errorf("op %d, an Unknown acquire never granted: %s; want failed", i, got[i].Result)
		}
	}
	for _, i := range []int{4, 6} {
		if got[i].Result != Unknown {
			t.Errorf("op %d: %s; want it left Unknown", i, got[i].Result)
		}
	}
	if ops[0].Result != Unknown {
		t.Error("ResolveLockSets changed its argument")
	}
	if ok, err := CheckLockSets(got, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckLockSets of the resolved ops = %v, %v; want true, nil", ok, err)
	}
	ops[len(ops)-1].OutHolders[0].Token = 3 // never granted
	if ok, err := CheckLockSets(ResolveLockSets(ops, events), 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckLockSets of a refusal showing a holder never granted = %v, %v; want false, nil", ok, err)
	}
}
