package check

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Builders of synthetic semaphore ops, as check_test.go's for locks. The
// owner of client n is "sn"; every op is on semaphore "s", of limit 2.

func mkPermit(client int, call, ret int64, res Result, token int64) Op {
	op := Op{Client: client, Kind: SemAcquire, Semaphore: "s", Owner: fmt.Sprintf("s%d", client), Limit: 2,
		Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken = token
	}
	if res == Rejected {
		op.Code = "semaphore_full"
	}
	return op
}

// mortal marks an acquire OK's permit as one the trail shows expired.
func mortal(op Op) Op {
	op.mortal = true
	return op
}

// strict marks a refusal as one no waiter can have been ahead of.
func strict(op Op) Op {
	op.strict = true
	return op
}

func waiting(op Op) Op {
	op.Wait = "2s"
	return op
}

func mkRenewPermit(client int, token, call, ret int64, res Result) Op {
	op := Op{Client: client, Kind: SemRenew, Semaphore: "s", Token: token, Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken, op.OutLimit = token, 2
	}
	return op
}

func mkReleasePermit(client int, token, call, ret int64, res Result) Op {
	return Op{Client: client, Kind: SemRelease, Semaphore: "s", Token: token, Call: call, Return: ret, Result: res}
}

// mkSemGet reads tokens (none: Rejected, nothing held).
func mkSemGet(client int, call, ret int64, tokens ...int64) Op {
	op := Op{Client: client, Kind: SemGet, Semaphore: "s", Call: call, Return: ret, Result: Rejected, Code: "not_held"}
	if len(tokens) > 0 {
		op.Result, op.Code, op.OutTokens, op.OutLimit = OK, "", tokens, 2
	}
	return op
}

func TestSemaphoreModel_LegalHistories(t *testing.T) {
	tests := []historyCase{
		{"two permits held, a third refused, one released, a third granted", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkPermit(1, 0, 10, OK, 6),
			strict(mkPermit(2, 20, 30, Rejected, 0)),
			mkSemGet(3, 35, 38, 5, 6),
			mkRenewPermit(0, 5, 40, 45, OK),
			mkReleasePermit(0, 5, 50, 60, OK),
			mkPermit(2, 70, 80, OK, 9),
			mkSemGet(3, 90, 100, 6, 9),
			mkReleasePermit(1, 6, 110, 120, OK),
			mkReleasePermit(2, 9, 110, 120, OK),
			mkSemGet(3, 130, 140),
		)},
		{"a permit expires unseen and its seat is granted; its renew is refused", mkHistory(
			mortal(mkPermit(0, 0, 10, OK, 5)),
			mkPermit(1, 0, 10, OK, 6),
			mkPermit(2, 20, 30, OK, 9),
			mkRenewPermit(0, 5, 40, 50, Rejected),
			mkReleasePermit(0, 5, 60, 70, Rejected),
			mkSemGet(3, 80, 90, 6, 9),
		)},
		{"a waiting acquire takes the seat a release frees", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkPermit(1, 0, 10, OK, 6),
			waiting(mkPermit(2, 20, 100, OK, 9)),
			mkReleasePermit(0, 5, 30, 40, OK),
			mkSemGet(3, 110, 120, 6, 9),
		)},
		{"a refusal that is not strict while a permit is free: a waiter may be ahead", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkPermit(1, 20, 30, Rejected, 0),
		)},
		{"a permit held past its TTL by the client's clock is renewed and released", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkRenewPermit(0, 5, 5000, 5010, OK),
			mkReleasePermit(0, 5, 5020, 5030, OK),
		)},
		{"an Unknown acquire took effect: a read shows its token, its owner releases it", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkPermit(1, 0, 10, Unknown, 0),
			mkSemGet(2, 20, 30, 5, 7),
			mkReleasePermit(1, 7, 40, 50, OK),
			strict(mkPermit(3, 40, 50, Rejected, 0)), // before the release, 5 and 7 held
		)},
		{"an Unknown acquire that never took effect", mkHistory(
			mkPermit(1, 0, 10, Unknown, 0),
			mkPermit(0, 20, 30, OK, 5),
			mkSemGet(2, 40, 50, 5),
		)},
		{"an Unknown release took effect", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkReleasePermit(0, 5, 20, 30, Unknown),
			mkSemGet(1, 40, 50),
		)},
		{"a read does not show a permit that expired", mkHistory(
			mortal(mkPermit(0, 0, 10, OK, 5)),
			mkPermit(1, 0, 10, OK, 6),
			mkSemGet(2, 20, 30, 6),
		)},
		{"failed ops never happened", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkPermit(1, 0, 10, OK, 6),
			mkPermit(2, 20, 30, Failed, 9),
			mkReleasePermit(2, 9, 40, 50, Failed),
			mkSemGet(3, 60, 70, 5, 6),
		)},
	}
	checkHistories(t, CheckSemaphores, true, tests)
}

func TestSemaphoreModel_IllegalHistories(t *testing.T) {
	tests := []historyCase{
		{"three permits held at once under limit 2", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkPermit(1, 20, 30, OK, 6),
			mkPermit(2, 40, 50, OK, 9),
		)},
		{"three permits granted concurrently", mkHistory(
			mkPermit(0, 0, 50, OK, 5),
			waiting(mkPermit(1, 0, 50, OK, 6)),
			mkPermit(2, 0, 50, OK, 9),
		)},
		{"a third permit while two are held, though one of them expired later", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mortal(mkPermit(1, 0, 10, OK, 6)),
			mkPermit(2, 20, 30, OK, 9),
			mkRenewPermit(1, 6, 40, 50, OK), // so 6 was still held at 9's grant
		)},
		{"a strict refusal while a permit is free", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			strict(mkPermit(1, 20, 30, Rejected, 0)),
		)},
		{"a strict refusal after a release", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkPermit(1, 0, 10, OK, 6),
			mkReleasePermit(0, 5, 20, 30, OK),
			strict(mkPermit(2, 40, 50, Rejected, 0)),
		)},
		{"a permit released twice", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkReleasePermit(0, 5, 20, 30, OK),
			mkReleasePermit(0, 5, 40, 50, OK),
		)},
		{"a released permit renewed", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkReleasePermit(0, 5, 20, 30, OK),
			mkRenewPermit(0, 5, 40, 50, OK),
		)},
		{"an expired permit released after its renew was refused", mkHistory(
			mortal(mkPermit(0, 0, 10, OK, 5)),
			mkRenewPermit(0, 5, 20, 30, Rejected),
			mkReleasePermit(0, 5, 40, 50, OK),
		)},
		{"a permit the trail shows released is refused before its release", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkRenewPermit(0, 5, 20, 30, Rejected),
		)},
		{"a read misses a permit that was released later", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkPermit(1, 0, 10, OK, 6),
			mkSemGet(2, 20, 30, 6),
		)},
		{"a read finds nothing while a permit is held", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkSemGet(1, 20, 30),
			mkReleasePermit(0, 5, 40, 50, OK),
		)},
		{"a read shows a token never granted", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			mkSemGet(1, 20, 30, 5, 8),
		)},
		{"a read shows more permits than the limit", mkHistory(
			mkPermit(0, 0, 10, Unknown, 0),
			mkPermit(1, 0, 10, Unknown, 0),
			mkPermit(2, 0, 10, Unknown, 0),
			mkSemGet(3, 20, 30, 5, 6, 7),
		)},
		{"a grant's token below an earlier grant's", mkHistory(
			mkPermit(0, 0, 10, OK, 9),
			mkReleasePermit(0, 9, 20, 30, OK),
			mkPermit(1, 40, 50, OK, 5),
		)},
		{"a renew answers another token", mkHistory(
			mkPermit(0, 0, 10, OK, 5),
			func() Op { op := mkRenewPermit(0, 5, 20, 30, OK); op.OutToken = 6; return op }(),
		)},
	}
	checkHistories(t, CheckSemaphores, false, tests)
}

func TestCheckSemaphores_WritesVisualisationWhenIllegal(t *testing.T) {
	html := filepath.Join(t.TempDir(), "semaphores.html")
	ok, err := CheckSemaphores(mkHistory(
		mkPermit(0, 0, 10, OK, 5),
		mortal(mkPermit(1, 0, 10, OK, 6)),
		strict(mkPermit(2, 20, 30, Rejected, 0)),
		mkReleasePermit(0, 5, 40, 50, OK),
		mkReleasePermit(0, 5, 60, 70, OK),
	), 10*time.Second, html)
	if err != nil || ok {
		t.Fatalf("CheckSemaphores = %v, %v; want false, nil", ok, err)
	}
	assertFileHas(t, html, "<html", "sem-acquire s1 → 6†", "sem-acquire s2 → semaphore_full (strict)", "limit 2 held 5 6† last 6")
}

func TestCheckSemaphores_RefusesLimitsOverTheModels(t *testing.T) {
	op := mkPermit(0, 0, 10, OK, 5)
	op.Limit = MaxModelLimit + 1
	if _, err := CheckSemaphores(mkHistory(op), 10*time.Second, ""); err == nil {
		t.Errorf("CheckSemaphores of a limit of %d: no error", op.Limit)
	}
}

// semEvent is an event of semaphore "s" at revision rev.
func semEvent(rev int64, typ, owner string, token int64) AuditEvent {
	ev := AuditEvent{Revision: rev, Type: typ, Kind: "semaphore", Name: "s", Owner: owner, Token: token}
	if typ == "acquired" {
		ev.Limit = 2
	}
	return ev
}

// expiredAt is the recorder's expiry of token, written at rev, of a
// permit etcd deleted at deleted.
func expiredAt(rev int64, owner string, token, deleted int64) AuditEvent {
	return deletedAt(semEvent(rev, "expired", owner, token), deleted)
}

// deletedAt is the expiry ev as the recorder words it for a hold etcd
// deleted at revision deleted, which endRevision reads.
func deletedAt(ev AuditEvent, deleted int64) AuditEvent {
	ev.Detail = fmt.Sprintf("lease ended; etcd deleted the lock at revision %d", deleted)
	return ev
}

func TestResolvePermits(t *testing.T) {
	ops := mkHistory(
		mkPermit(0, 0, 10, OK, 5),                 // released
		mkPermit(1, 0, 10, OK, 6),                 // expired
		mkPermit(2, 20, 30, Unknown, 0),           // acquired, as the trail says
		mkPermit(3, 20, 30, Unknown, 0),           // never acquired
		mkPermit(4, 25, 35, Rejected, 0),          // before any waiter: strict
		waiting(mkPermit(5, 40, 50, Rejected, 0)), // waited: not strict
		mkPermit(6, 45, 55, Rejected, 0),          // after a waiter's call: not strict
		mkReleasePermit(0, 5, 60, 70, OK),
	)
	events := []AuditEvent{
		semEvent(5, "acquired", "s0", 5),
		semEvent(6, "acquired", "s1", 6),
		semEvent(9, "acquired", "s2", 9),
		expiredAt(12, "s1", 6, 11),
		semEvent(20, "released", "s0", 5),
		semEvent(21, "revoked", "s2", 9),
	}
	got := ResolvePermits(ops, events)
	if g := got[0]; g.Result != OK || g.mortal {
		t.Errorf("the released permit: %s mortal %v; want OK, not mortal", g.Result, g.mortal)
	}
	if g := got[1]; !g.mortal {
		t.Error("the expired permit is not mortal")
	}
	if g := got[2]; g.Result != OK || g.OutToken != 9 || !g.mortal || g.Return != 71 {
		t.Errorf("the Unknown acquire the trail grants: %+v; want OK, token 9, mortal, pending past the last return", g)
	}
	if g := got[3]; g.Result != Failed {
		t.Errorf("the Unknown acquire never granted: %s; want failed", g.Result)
	}
	for i, want := range map[int]bool{4: true, 5: false, 6: false} {
		if got[i].strict != want {
			t.Errorf("refusal op %d: strict %v, want %v", i, got[i].strict, want)
		}
	}
	if ops[2].Result != Unknown || ops[0].mortal || ops[4].strict {
		t.Error("ResolvePermits changed its argument")
	}
	if ok, err := CheckSemaphores(got, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckSemaphores of the resolved history = %v, %v; want true, nil", ok, err)
	}
	// A third permit while 5 and 6 are held: legal only while 6 may have
	// expired first.
	more := mkHistory(append(slices.Clone(ops[:2]), mkPermit(7, 20, 30, OK, 8))...)
	released := []AuditEvent{semEvent(5, "acquired", "s0", 5), semEvent(6, "acquired", "s1", 6), semEvent(20, "released", "s0", 5), semEvent(21, "released", "s1", 6)}
	if ok, err := CheckSemaphores(ResolvePermits(more, released), 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckSemaphores with both permits released later = %v, %v; want false, nil", ok, err)
	}
	if ok, err := CheckSemaphores(ResolvePermits(more, events), 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckSemaphores with one permit expired = %v, %v; want true, nil", ok, err)
	}
}

// A refusal's holders are a read of their own over its interval.
func TestResolvePermits_RefusalsHolders(t *testing.T) {
	refusal := waiting(mkPermit(2, 40, 50, Rejected, 0)) // not strict: only the read is checked
	refusal.OutTokens, refusal.OutLimit = []int64{5, 6}, 2
	trail := []AuditEvent{
		semEvent(5, "acquired", "s0", 5), semEvent(6, "acquired", "s1", 6),
		semEvent(20, "released", "s0", 5), semEvent(60, "released", "s1", 6),
	}
	ops := mkHistory(mkPermit(0, 0, 10, OK, 5), mkPermit(1, 0, 10, OK, 6), mkReleasePermit(0, 5, 60, 70, OK), refusal)
	got := ResolvePermits(ops, trail)
	if len(got) != 5 {
		t.Fatalf("ResolvePermits gave %d ops; want the 4 and one read", len(got))
	}
	if r := got[4]; r.ID != 4 || r.Kind != SemGet || r.Result != OK || !slices.Equal(r.OutTokens, []int64{5, 6}) || r.Call != 40 || r.Return != 50 {
		t.Errorf("the refusal's read: %+v; want op 4, a sem-get OK of [5 6] over [40, 50]", r)
	}
	if ok, err := CheckSemaphores(got, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckSemaphores = %v, %v; want true, nil", ok, err)
	}
	// The holders show 5 after its release returned.
	ops[2].Call, ops[2].Return = 20, 30
	if ok, err := CheckSemaphores(ResolvePermits(ops, trail), 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckSemaphores with the holders showing a released permit = %v, %v; want false, nil", ok, err)
	}
}

func TestCheckSemaphoreAudit(t *testing.T) {
	ops := mkHistory(
		mkPermit(0, 0, 10, OK, 5),
		mkPermit(1, 0, 10, OK, 6),
		waiting(mkPermit(2, 20, 100, OK, 9)), // handed 5's seat
		mkReleasePermit(0, 5, 30, 40, OK),
		mkPermit(3, 110, 120, Unknown, 0),
		mkPermit(4, 110, 120, Rejected, 0),
		mkReleasePermit(2, 9, 130, 140, OK),
	)
	trail := []AuditEvent{
		semEvent(5, "acquired", "s0", 5),
		semEvent(6, "acquired", "s1", 6),
		semEvent(9, "released", "s0", 5),
		semEvent(9, "acquired", "s2", 9), // the handover shares the release's revision
		semEvent(12, "acquired", "s3", 12),
		expiredAt(13, "s1", 6, 11), // recorded after etcd deleted it, and 12 took its seat
		semEvent(15, "released", "s2", 9),
		expiredAt(16, "s3", 12, 16),
		{Revision: 17, Type: "acquired", Kind: "lock", Lock: "s", Owner: "x", Token: 17}, // a lock's, not this check's
	}
	without, with, replaced := trailEdits(trail)
	tests := []auditCase{
		{"the trail matches the ops", trail, nil},
		{"a third permit held while two are", replaced(5, expiredAt(13, "s1", 6, 13)), []string{
			"after the grant of token 12 at revision 12, 3 permits are held (tokens [6 9 12]), over its limit 2",
		}},
		{"an expiry without the revision it happened at counts as ended at once", replaced(5, semEvent(13, "expired", "s1", 6)), nil},
		{"a grant's token below the last", with(semEvent(20, "acquired", "s4", 10), semEvent(21, "expired", "s4", 10)), []string{
			"token 10 is granted after token 12",
			"sem-acquire op 5 (client 4, node 0) was refused",
		}},
		{"a grant under another limit", replaced(0, func() AuditEvent { e := semEvent(5, "acquired", "s0", 5); e.Limit = 3; return e }()), []string{
			"token 5: acquired under limit 3, but the clients asked for 2",
		}},
		{"an acquire's event is missing", without(1), []string{
			"sem-acquire op 1: semaphore \"s\" token 6 has no acquired event",
			"token 6: expired without an acquired event",
		}},
		{"a permit acquired twice", with(semEvent(6, "acquired", "s1", 6)), []string{
			"token 6: 2 acquired events",
			"token 6 is granted after token 12",
		}},
		{"a release is missing", without(6), []string{
			"token 9: acquired but never ended",
			"sem-release op 6: semaphore \"s\" token 9 has no released event (ends: none)",
		}},
		{"a permit ends twice", with(semEvent(30, "expired", "s0", 5)), []string{
			"token 5: 2 end events (released, expired)",
		}},
		{"the audit names another owner", replaced(1, semEvent(6, "acquired", "s9", 6)), []string{
			"token 6 acquired by \"s1\", but the audit says \"s9\"",
		}},
		{"a grant no acquire explains", with(semEvent(20, "acquired", "s7", 20), semEvent(21, "expired", "s7", 20)), []string{
			"2 acquired events (tokens [12 20]) match no acquire OK, but only 1 acquires were Unknown",
		}},
	}
	checkAudits(t, CheckSemaphoreAudit, ops, tests)
}

// The lock and election models leave semaphore ops alone, and the lock
// audit their events.
func TestCheckers_LeaveSemaphoresAlone(t *testing.T) {
	ops := mkHistory(
		mkAcquire(0, "s", 0, 10, OK, 5),
		mkPermit(1, 0, 10, OK, 6),
		mkPermit(2, 0, 10, OK, 7),
		mkRelease(0, "s", 5, 20, 30, OK),
		mkPermit(3, 40, 50, OK, 9), // a third permit: the semaphore model's business
	)
	for _, check := range []func([]Op, time.Duration, string) (bool, error){CheckLinearizable, CheckElections} {
		if ok, err := check(ops, 10*time.Second, ""); !ok || err != nil {
			t.Errorf("check = %v, %v; want true, nil", ok, err)
		}
	}
	if ok, err := CheckSemaphores(ops, 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckSemaphores = %v, %v; want false, nil", ok, err)
	}
	events := []AuditEvent{
		{Type: "acquired", Kind: "lock", Lock: "s", Owner: "c0", Token: 5},
		{Type: "released", Kind: "lock", Lock: "s", Owner: "c0", Token: 5},
		semEvent(6, "acquired", "s1", 6),
	}
	assertProblems(t, CheckAudit(ops, events), nil)
	assertProblems(t, CheckElectionAudit(ops, events), nil)
}

func TestCheckTokenOrder_SpansSemaphores(t *testing.T) {
	assertProblems(t, CheckTokenOrder(mkHistory(
		mkPermit(0, 0, 10, OK, 9),
		mkAcquire(1, "l", 20, 30, OK, 7),
		mkPermit(2, 0, 40, OK, 9),
	)), []string{
		"sem-acquire op 0 (semaphore \"s\") returned token 9 at 10ns, but acquire op 1 (lock \"l\") called later at 20ns got token 7",
		"semaphore \"s\": token 9 granted twice",
	})
}
