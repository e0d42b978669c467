package check

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Builders of synthetic rwlock ops, as semaphore_check_test.go's. The
// owner of client n is "rwn"; every op is on rwlock "rw".

func mkRW(client int, mode string, call, ret int64, res Result, token int64) Op {
	op := Op{Client: client, Kind: RWAcquire, RWLock: "rw", Owner: fmt.Sprintf("rw%d", client), Mode: mode,
		Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken = token
	}
	if res == Rejected {
		op.Code = "lock_held"
	}
	return op
}

func mkRenewRW(client int, token, call, ret int64, res Result) Op {
	op := Op{Client: client, Kind: RWRenew, RWLock: "rw", Token: token, Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken = token
	}
	return op
}

func mkReleaseRW(client int, token, call, ret int64, res Result) Op {
	return Op{Client: client, Kind: RWRelease, RWLock: "rw", Token: token, Call: call, Return: ret, Result: res}
}

// mkGetRW reads holds of mode with tokens (none: Rejected, nothing held).
func mkGetRW(client int, call, ret int64, mode string, tokens ...int64) Op {
	op := Op{Client: client, Kind: RWGet, RWLock: "rw", Call: call, Return: ret, Result: Rejected, Code: "not_held"}
	if len(tokens) > 0 {
		op.Result, op.Code, op.OutTokens, op.OutMode = OK, "", tokens, mode
	}
	return op
}

// mkRWFPut is a fenced write naming rwlock "rw"; code is a refusal's.
func mkRWFPut(client int, token int64, value string, call, ret int64, res Result, code string) Op {
	op := Op{Client: client, Kind: FPut, RWLock: "rw", Token: token, Value: value, Call: call, Return: ret, Result: res}
	if res == Rejected {
		op.Code = code
	}
	return op
}

func mkRWFGet(client int, call, ret int64, token int64, value string) Op {
	return Op{Client: client, Kind: FGet, RWLock: "rw", Call: call, Return: ret, Result: OK, OutToken: token, OutValue: value}
}

func TestRWLockModel_LegalHistories(t *testing.T) {
	tests := []historyCase{
		{"readers share, a writer waits for them, then writes", mkHistory(
			mkRW(0, "read", 0, 10, OK, 5),
			mkRW(1, "read", 0, 10, OK, 6),
			mkGetRW(3, 12, 14, "read", 5, 6),
			strict(mkRW(2, "write", 15, 18, Rejected, 0)),
			mkRWFPut(0, 5, "r", 20, 25, Rejected, "not_holder"), // a reader's write
			mkReleaseRW(0, 5, 30, 35, OK),
			mkReleaseRW(1, 6, 30, 35, OK),
			waiting(mkRW(2, "write", 20, 50, OK, 9)), // granted by the last release
			mkRWFPut(2, 9, "w1", 60, 65, OK, ""),
			mkRWFPut(2, 9, "w2", 66, 68, OK, ""),
			mkRWFGet(3, 70, 75, 9, "w2"),
			mkGetRW(4, 70, 75, "write", 9),
			strict(mkRW(0, "read", 76, 78, Rejected, 0)),
			mkRenewRW(2, 9, 80, 85, OK),
			mkReleaseRW(2, 9, 90, 95, OK),
			mkReleaseRW(2, 9, 96, 98, Rejected),
			mkGetRW(3, 100, 105, ""),
		)},
		{"a mortal writer expires unseen; a reader is granted and the old writer's fenced write refused", mkHistory(
			mortal(mkRW(0, "write", 0, 10, OK, 5)),
			mkRWFPut(0, 5, "w", 12, 14, OK, ""),
			mkRW(1, "read", 20, 30, OK, 8),
			mkRWFPut(0, 5, "late", 40, 45, Rejected, "not_holder"),
			mkRenewRW(0, 5, 50, 55, Rejected),
			mkReleaseRW(1, 8, 60, 65, OK),
		)},
		{"a stale writer's write is refused by the register after a later writer wrote", mkHistory(
			mortal(mkRW(0, "write", 0, 10, OK, 5)),
			mkRW(1, "write", 20, 30, OK, 8),
			mkRWFPut(1, 8, "new", 32, 34, OK, ""),
			mkRWFPut(0, 5, "old", 40, 45, Rejected, "stale_token"),
			mkReleaseRW(1, 8, 50, 55, OK),
		)},
		{"an Unknown write acquire may have taken the lock; a read reveals its token", mkHistory(
			mkRW(0, "write", 0, 10, Unknown, 0),
			mkGetRW(1, 20, 30, "write", 7),
			strict(mkRW(2, "read", 35, 38, Rejected, 0)),
			mkRW(2, "read", 40, 50, OK, 9),
		)},
		{"a non-strict refusal with nothing held passes (a waiter may have been ahead)", mkHistory(
			mkRW(0, "read", 0, 10, Rejected, 0),
		)},
		{"an Unknown release may have released", mkHistory(
			mkRW(0, "write", 0, 10, OK, 5),
			mkReleaseRW(0, 5, 20, 30, Unknown),
			mkRW(1, "write", 40, 50, OK, 8),
		)},
	}
	checkHistories(t, CheckRWLocks, true, tests)
}

func TestRWLockModel_IllegalHistories(t *testing.T) {
	tests := []historyCase{
		{"a writer beside a reader", mkHistory(
			mkRW(0, "read", 0, 10, OK, 5),
			mkRW(1, "write", 20, 30, OK, 6),
		)},
		{"two writers", mkHistory(
			mkRW(0, "write", 0, 10, OK, 5),
			mkRW(1, "write", 20, 30, OK, 6),
		)},
		{"a reader beside a writer", mkHistory(
			mkRW(0, "write", 0, 10, OK, 5),
			mkRW(1, "read", 20, 30, OK, 6),
		)},
		{"a writer granted while a reader that later renewed held", mkHistory(
			mortal(mkRW(0, "read", 0, 10, OK, 5)),
			mkRW(1, "write", 20, 30, OK, 6),
			mkRenewRW(0, 5, 40, 50, OK),
		)},
		{"a grant's token below an earlier one", mkHistory(
			mkRW(0, "read", 0, 10, OK, 5),
			mkRW(1, "read", 20, 30, OK, 4),
		)},
		{"a reader's fenced write accepted", mkHistory(
			mkRW(0, "read", 0, 10, OK, 5),
			mkRWFPut(0, 5, "r", 20, 30, OK, ""),
		)},
		{"a fenced write with a token below one accepted", mkHistory(
			mortal(mkRW(0, "write", 0, 10, OK, 5)),
			mkRW(1, "write", 20, 30, OK, 8),
			mkRWFPut(1, 8, "new", 32, 34, OK, ""),
			mkRWFPut(0, 5, "old", 40, 45, OK, ""),
		)},
		{"a writer's fenced write refused as not_holder while it holds for sure", mkHistory(
			mkRW(0, "write", 0, 10, OK, 5),
			mkRWFPut(0, 5, "w", 20, 30, Rejected, "not_holder"),
			mkReleaseRW(0, 5, 40, 50, OK),
		)},
		{"a renew of a hold never granted", mkHistory(
			mkRenewRW(0, 5, 0, 10, OK),
		)},
		{"a release refused while the hold is held until its release", mkHistory(
			mkRW(0, "read", 0, 10, OK, 5),
			mkReleaseRW(0, 5, 20, 30, Rejected),
			mkReleaseRW(0, 5, 40, 50, OK),
		)},
		{"a read that misses an immortal hold", mkHistory(
			mkRW(0, "read", 0, 10, OK, 5),
			mkRW(1, "read", 0, 10, OK, 6),
			mkGetRW(2, 20, 30, "read", 6),
		)},
		{"a read that shows a reader as a writer", mkHistory(
			mkRW(0, "read", 0, 10, OK, 5),
			mkGetRW(2, 20, 30, "write", 5),
		)},
		{"a strict refusal of a writer with nothing held", mkHistory(
			strict(mkRW(0, "write", 0, 10, Rejected, 0)),
		)},
		{"a strict refusal of a reader while only readers hold", mkHistory(
			mkRW(0, "read", 0, 10, OK, 5),
			strict(mkRW(1, "read", 20, 30, Rejected, 0)),
		)},
	}
	checkHistories(t, CheckRWLocks, false, tests)
}

func TestCheckRWLocks_WritesVisualisationWhenIllegal(t *testing.T) {
	html := filepath.Join(t.TempDir(), "rwlocks.html")
	ok, err := CheckRWLocks(mkHistory(
		mortal(mkRW(0, "read", 0, 10, OK, 5)),
		mkRW(2, "write", 20, 30, OK, 6),
		strict(mkRW(1, "read", 40, 50, Rejected, 0)),
		mkRW(3, "read", 60, 70, OK, 7),
	), 10*time.Second, html)
	if err != nil || ok {
		t.Fatalf("CheckRWLocks = %v, %v; want false, nil", ok, err)
	}
	assertFileHas(t, html, "<html", "rw-acquire rw0 read → 5†", "rw-acquire rw1 read → lock_held (strict)", "held w6 last 6")
}

// rwEvent is an event of rwlock "rw" at revision rev.
func rwEvent(rev int64, typ, owner, mode string, token int64) AuditEvent {
	return AuditEvent{Revision: rev, Type: typ, Kind: "rwlock", Name: "rw", Owner: owner, Token: token, Mode: mode}
}

// queued is ev with queued_at sec seconds into a day.
func queued(ev AuditEvent, sec float64) AuditEvent {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(sec * float64(time.Second)))
	ev.QueuedAt = &at
	return ev
}

func rwExpiredAt(rev int64, owner, mode string, token, deleted int64) AuditEvent {
	return deletedAt(rwEvent(rev, "expired", owner, mode, token), deleted)
}

func TestResolveRWLocks(t *testing.T) {
	refused := mkRW(4, "write", 25, 35, Rejected, 0)
	refused.OutTokens, refused.OutMode = []int64{5, 6}, "read"
	ops := mkHistory(
		mkRW(0, "read", 0, 10, OK, 5),                 // released
		mkRW(1, "read", 0, 10, OK, 6),                 // expired
		mkRW(2, "write", 20, 30, Unknown, 0),          // acquired, as the trail says
		mkRW(3, "read", 20, 30, Unknown, 0),           // never acquired
		refused,                                       // before any waiter: strict, and its holders a read
		waiting(mkRW(5, "read", 40, 50, Rejected, 0)), // waited: not strict
		mkRW(6, "read", 45, 55, Rejected, 0),          // after a waiter's call: not strict
	)
	trail := []AuditEvent{
		rwEvent(5, "acquired", "rw0", "read", 5),
		rwEvent(6, "acquired", "rw1", "read", 6),
		rwEvent(8, "released", "rw0", "read", 5),
		rwExpiredAt(10, "rw1", "read", 6, 9),
		rwEvent(11, "acquired", "rw2", "write", 11),
		rwExpiredAt(13, "rw2", "write", 11, 12),
	}
	got := ResolveRWLocks(ops, trail)
	if len(got) != len(ops)+1 {
		t.Fatalf("got %d ops, want %d", len(got), len(ops)+1)
	}
	want := []struct {
		res    Result
		token  int64
		mortal bool
		strict bool
	}{{OK, 5, false, false}, {OK, 6, true, false}, {OK, 11, true, false}, {Failed, 0, false, false},
		{Rejected, 0, false, true}, {Rejected, 0, false, false}, {Rejected, 0, false, false}}
	for i, w := range want {
		op := got[i]
		if op.Result != w.res || op.OutToken != w.token || op.mortal != w.mortal || op.strict != w.strict {
			t.Errorf("op %d: %s token %d mortal %v strict %v; want %s %d %v %v", i, op.Result, op.OutToken, op.mortal, op.strict, w.res, w.token, w.mortal, w.strict)
		}
	}
	if got[2].Return <= 55 {
		t.Errorf("the settled Unknown acquire returns at %d; want it pending to the end", got[2].Return)
	}
	read := got[len(ops)]
	if read.Kind != RWGet || read.Result != OK || !slices.Equal(read.OutTokens, []int64{5, 6}) || read.OutMode != "read" || read.Call != 25 || read.Return != 35 {
		t.Errorf("the refusal's holders: %+v; want an rw-get OK of read [5 6] over [25, 35]", read)
	}
}

func TestCheckRWLockAudit(t *testing.T) {
	ops := mkHistory(
		mkRW(0, "read", 0, 10, OK, 5),
		mkRW(1, "read", 0, 10, OK, 6),
		waiting(mkRW(2, "write", 20, 100, OK, 9)), // handed the lock by the last release
		mkReleaseRW(0, 5, 30, 40, OK),
		mkRW(3, "read", 110, 120, Unknown, 0),
		mkRW(4, "write", 110, 120, Rejected, 0),
		mkReleaseRW(2, 9, 130, 140, OK),
	)
	trail := []AuditEvent{
		rwEvent(5, "acquired", "rw0", "read", 5),
		rwEvent(6, "acquired", "rw1", "read", 6),
		rwEvent(7, "released", "rw0", "read", 5),
		rwExpiredAt(9, "rw1", "read", 6, 8),
		queued(rwEvent(9, "acquired", "rw2", "write", 9), 20),
		rwEvent(15, "released", "rw2", "write", 9),
		rwEvent(16, "acquired", "rw3", "read", 16),
		rwExpiredAt(18, "rw3", "read", 16, 17),
		{Revision: 19, Type: "acquired", Kind: "semaphore", Name: "rw", Owner: "x", Token: 19}, // a semaphore's, not this check's
	}
	without, with, replaced := trailEdits(trail)
	tests := []auditCase{
		{"the trail matches the ops", trail, nil},
		{"a writer granted while a reader holds", replaced(3, rwExpiredAt(10, "rw1", "read", 6, 10)), []string{
			"the write grant of token 9 at revision 9 came while the read hold of token 6 (revisions 6 to 10) was held",
		}},
		{"an expiry without the revision it happened at counts as ended at once", replaced(3, rwEvent(10, "expired", "rw1", "read", 6)), nil},
		{"a reader granted while the writer holds", with(rwEvent(12, "acquired", "rw9", "read", 12), rwEvent(13, "released", "rw9", "read", 12)), []string{
			"the read grant of token 12 at revision 12 came while the write hold of token 9 (revisions 9 to 15) was held",
			"token 12 is granted after token 16", // appended: after 16 in trail order
			"2 acquired events (tokens [12 16]) match no acquire OK, but only 1 acquires were Unknown",
		}},
		{"a write grant's token not above a hold ended before it", with(rwEvent(30, "acquired", "rw4x", "write", 8), rwEvent(31, "released", "rw4x", "write", 8)), []string{
			"token 8 is granted after token 16",
			"the write grant of token 8 at revision 30 is not above token 9 of a hold that ended at revision 15",
			"the write grant of token 8 at revision 30 is not above token 16 of a hold that ended at revision 17",
			"2 acquired events (tokens [8 16]) match no acquire OK",
		}},
		{"an acquire's event is missing", without(1), []string{
			"rw-acquire op 1: rwlock \"rw\" token 6 has no acquired event",
			"token 6: expired without an acquired event",
		}},
		{"an acquire's mode differs", replaced(1, rwEvent(6, "acquired", "rw1", "write", 6)), []string{
			"token 6 acquired in mode \"read\", but the audit says \"write\"",
			"token 6: acquired in mode \"write\", but expired in mode \"read\"",
			"the write grant of token 6 at revision 6 came while the read hold of token 5 (revisions 5 to 7) was held",
		}},
		{"a hold acquired twice", with(rwEvent(6, "acquired", "rw1", "read", 6)), []string{
			"token 6: 2 acquired events",
			"token 6 is granted after token 16",
		}},
		{"a release is missing", without(5), []string{
			"token 9: acquired but never ended",
			"rw-release op 6: rwlock \"rw\" token 9 has no released event (ends: none)",
			"the read grant of token 16 at revision 16 came while the write hold of token 9 (revisions 9 to the end)",
		}},
		{"a hold ends twice", with(rwEvent(30, "expired", "rw0", "read", 5)), []string{
			"token 5: 2 end events (released, expired)",
		}},
		{"a refused acquire granted", with(rwEvent(30, "acquired", "rw4", "write", 30), rwEvent(31, "expired", "rw4", "write", 30)), []string{
			"rw-acquire op 5 (client 4, node 0) was refused",
		}},
		{"a grant no acquire explains", with(rwEvent(30, "acquired", "rw7", "read", 30), rwEvent(31, "expired", "rw7", "read", 30)), []string{
			"2 acquired events (tokens [16 30]) match no acquire OK, but only 1 acquires were Unknown",
		}},
	}
	checkAudits(t, CheckRWLockAudit, ops, tests)
}

// TestCheckRWLockAudit_FIFO: a read that shows a waiter, and queued_at
// far enough apart, order the queue where one of the two is a write;
// closer queued_at, or two reads, do not.
func TestCheckRWLockAudit_FIFO(t *testing.T) {
	read := mkGetRW(9, 20, 30, "write", 5)
	read.OutWaiters = []string{"rw1"}
	ops := mkHistory(
		mkRW(0, "write", 0, 10, OK, 5),
		waiting(mkRW(1, "read", 15, 100, OK, 12)), // shown waiting at 30
		mkRW(2, "write", 40, 50, OK, 10),          // called after the read
		mkReleaseRW(0, 5, 35, 38, OK),
		read,
	)
	trail := []AuditEvent{
		rwEvent(5, "acquired", "rw0", "write", 5),
		rwEvent(8, "released", "rw0", "write", 5),
		rwEvent(10, "acquired", "rw2", "write", 10),
		rwEvent(11, "released", "rw2", "write", 10),
		queued(rwEvent(12, "acquired", "rw1", "read", 12), 15),
		rwEvent(14, "released", "rw1", "read", 12),
	}
	assertProblems(t, CheckRWLockAudit(ops, trail), []string{
		"rw-get op 4 showed \"rw1\" waiting at 30ns; rw-acquire op 2 (write, owner \"rw2\") called after, at 40ns, was granted token 10 at revision 10, before \"rw1\"'s token 12 at revision 12",
	})
	reads := slices.Clone(ops)
	reads[2].Mode = "read"
	readTrail := slices.Clone(trail)
	readTrail[2], readTrail[3] = rwEvent(10, "acquired", "rw2", "read", 10), rwEvent(13, "released", "rw2", "read", 10)
	assertProblems(t, CheckRWLockAudit(reads, readTrail), nil) // readers between writers: no order among them
	ops[2].Call = 25                                           // called before the read returned: it may have been ahead
	assertProblems(t, CheckRWLockAudit(ops, trail), nil)

	ops[2].Wait = "2s"
	slack := func(sec float64) []AuditEvent {
		out := slices.Clone(trail)
		out[2] = queued(out[2], sec)
		return out
	}
	assertProblems(t, CheckRWLockAudit(ops, slack(15+fifoSlack.Seconds()-1)), nil)
	assertProblems(t, CheckRWLockAudit(ops, slack(15+fifoSlack.Seconds()+1)), []string{
		"token 12 (owner \"rw1\") queued at 2026-12-01T00:00:15Z, 16s before token 10 (owner \"rw2\")",
	})
}

// The other models and audits leave rwlock ops and events alone, and the
// rwlock model and audit theirs.
func TestCheckers_LeaveRWLocksAlone(t *testing.T) {
	ops := mkHistory(
		mkAcquire(0, "rw", 0, 10, OK, 5),
		mkRW(1, "write", 0, 10, OK, 6),
		mkRW(2, "read", 20, 30, OK, 7), // beside the writer: the rwlock model's business
	)
	for _, check := range []func([]Op, time.Duration, string) (bool, error){CheckLinearizable, CheckElections, CheckSemaphores} {
		if ok, err := check(ops, 10*time.Second, ""); !ok || err != nil {
			t.Errorf("check = %v, %v; want true, nil", ok, err)
		}
	}
	if ok, err := CheckRWLocks(ops, 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckRWLocks = %v, %v; want false, nil", ok, err)
	}
	events := []AuditEvent{
		{Type: "acquired", Kind: "lock", Lock: "rw", Owner: "c0", Token: 5},
		{Type: "released", Kind: "lock", Lock: "rw", Owner: "c0", Token: 5},
		rwEvent(6, "acquired", "rw1", "write", 6),
	}
	assertProblems(t, CheckAudit(ops, events), nil)
	assertProblems(t, CheckElectionAudit(ops, events), nil)
	assertProblems(t, CheckSemaphoreAudit(ops, events), nil)
	assertProblems(t, CheckRWLockAudit(ops, events[:2]), []string{"token 6 has no acquired event", "token 7 has no acquired event"})
}

func TestCheckTokenOrder_SpansRWLocks(t *testing.T) {
	assertProblems(t, CheckTokenOrder(mkHistory(
		mkRW(0, "read", 0, 10, OK, 8),
		mkAcquire(1, "a", 20, 30, OK, 7),
	)), []string{"rw-acquire op 0 (rwlock \"rw\") returned token 8"})
}
