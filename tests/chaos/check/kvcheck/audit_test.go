package kvcheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// keyEvent is an event of key "k" at rev: a put (with its session,
// created_revision and version) or a request's delete.
func keyEvent(rev int64, typ, session string, created, version int64) check.AuditEvent {
	return check.AuditEvent{Revision: rev, Type: typ, Kind: "key", Name: "k", Session: session, CreatedRevision: created, Version: version}
}

// sessionEnd is the delete of key "k" by the end of session at rev.
func sessionEnd(rev int64, session string) check.AuditEvent {
	return check.AuditEvent{Revision: rev, Type: "delete", Kind: "key", Name: "k", Session: session,
		Detail: fmt.Sprintf("session ended; etcd deleted the key at revision %d", rev)}
}

func lockEvent(rev int64, typ string, token int64) check.AuditEvent {
	return check.AuditEvent{Revision: rev, Type: typ, Kind: "lock", Name: "l", Lock: "l", Owner: "o", Token: token}
}

// acked is op answered OK with created_revision and version.
func acked(op check.Op, created, version int64) check.Op {
	op.OutCreated, op.OutVersion = created, version
	return op
}

func sessionOp(client int, kind check.Kind, session string, call, ret int64, res check.Result) check.Op {
	op := check.Op{Client: client, Kind: kind, Session: session, Call: call, Return: ret, Result: res}
	if res == check.Rejected {
		op.Code = "session_not_found"
	}
	return op
}

func lockOp(client int, kind check.Kind, token, call, ret int64) check.Op {
	op := check.Op{Client: client, Kind: kind, Lock: "l", Call: call, Return: ret, Result: check.OK}
	if kind == check.Acquire {
		op.OutToken = token
	} else {
		op.Token = token
	}
	return op
}

// auditOps and auditTrail are a run that passes CheckKeyAudit: puts,
// reads, a compare-and-set, deletes (one Unknown), a key bound to a
// session the client deletes, an Unknown put, and fenced puts, one
// accepted under its hold, one refused after its release.
func auditOps() []check.Op {
	return mkHistory(
		acked(put(0, "a", 0, 10, check.OK, 5), 5, 1),
		acked(get(1, 20, 30, 5, "a"), 5, 1),
		acked(cas(put(0, "b", 40, 50, check.OK, 7), 5), 5, 2),
		del(1, 60, 70, check.OK, 0),
		sessionOp(2, check.SessionCreate, "s1", 72, 78, check.OK),
		acked(bound(put(2, "c", 80, 90, check.OK, 10), "s1"), 10, 1),
		sessionOp(2, check.SessionDelete, "s1", 100, 110, check.OK),
		get(1, 120, 130, 12, ""),
		put(0, "d", 140, 150, check.Unknown, 0),
		lockOp(3, check.Acquire, 15, 160, 170),
		acked(fenced(put(3, "e", 180, 190, check.OK, 16), "l", 15), 14, 2),
		lockOp(3, check.Release, 15, 200, 210),
		refused(fenced(put(3, "f", 220, 230, check.Rejected, 0), "l", 15), "stale_token"),
		cas(del(1, 240, 250, check.Unknown, 0), 16),
		acked(on(put(0, "x", 260, 270, check.OK, 20), "k2"), 20, 1),
	)
}

func auditTrail() []check.AuditEvent {
	k2 := keyEvent(20, "put", "", 20, 1)
	k2.Name = "k2"
	return []check.AuditEvent{
		keyEvent(5, "put", "", 5, 1),
		keyEvent(7, "put", "", 5, 2),
		keyEvent(8, "delete", "", 0, 0),
		keyEvent(10, "put", "s1", 10, 1),
		sessionEnd(12, "s1"),
		keyEvent(14, "put", "", 14, 1), // op 8's
		lockEvent(15, "acquired", 15),
		keyEvent(16, "put", "", 14, 2),
		lockEvent(17, "released", 15),
		keyEvent(18, "delete", "", 0, 0), // op 13's
		k2,
	}
}

// assertProblems wants got to be as many problems as want, each of want
// in one of them.
func assertProblems(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n  %s", len(got), len(want), strings.Join(got, "\n  "))
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("no problem mentions %q; got:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
}

func TestCheckKeyAudit(t *testing.T) {
	trail := auditTrail()
	without := func(i int) []check.AuditEvent { return slices.Delete(slices.Clone(trail), i, i+1) }
	with := func(extra ...check.AuditEvent) []check.AuditEvent { return append(slices.Clone(trail), extra...) }
	replaced := func(i int, e check.AuditEvent) []check.AuditEvent {
		out := slices.Clone(trail)
		out[i] = e
		return out
	}
	extraK2 := keyEvent(22, "put", "", 20, 2)
	extraK2.Name = "k2"
	tests := []struct {
		name   string
		events []check.AuditEvent
		want   []string
	}{
		{"the trail matches the ops", trail, nil},
		{"an acknowledged put is missing", without(1), []string{
			"kv-put op 2: key \"k\" at revision 7 has no put event",
		}},
		{"a put is recorded twice", with(keyEvent(7, "put", "", 5, 2)), []string{
			"key \"k\": put and put events at revision 7: one change, recorded twice",
		}},
		{"a refused put took effect", with(extraK2), []string{
			"key \"k2\": the put at revision 22 (session \"\") matches no kv-put OK, and no Unknown kv-put could have made it",
		}},
		{"a version skips", replaced(7, keyEvent(16, "put", "", 14, 3)), []string{
			"the put at revision 16 is version 3, created at 14; after its put at revision 14, it is version 2, created at 14",
			"kv-put op 10: key \"k\" at revision 16 is version 2, created at 14, session \"\"; the trail's put says version 3",
		}},
		{"an acknowledged delete is missing", without(2), []string{
			"kv-delete op 3 (key \"k\"): no delete of the key in the trail fits it, above revision 7 and at most 10",
			"the put at revision 10 is version 1, created at 10; after its put at revision 7, it is version 3, created at 5",
		}},
		{"a delete no op can have made", with(keyEvent(21, "delete", "", 0, 0)), []string{
			"key \"k\": deleted at revision 21 while it did not exist",
			"key \"k\": the delete at revision 21 matches no kv-delete OK",
		}},
		{"two keys' requests at one revision", with(func() check.AuditEvent { e := keyEvent(5, "put", "", 5, 1); e.Name = "k3"; return e }()), []string{
			"revision 5 has events of keys \"k\" and \"k3\"",
			"key \"k3\": the put at revision 5 (session \"\") matches no kv-put OK",
		}},
		{"a session's keys are deleted after an op said it had ended", replaced(4, sessionEnd(13, "s1")), []string{
			"session s1: its end deleted its keys at revision 13, after session-delete op 6 had returned at 110ns saying it had ended: kv-get op 7 (key \"k\", client 1), called later, was at revision 12",
		}},
		{"a key is deleted by the end of a session it was not bound to", replaced(3, keyEvent(10, "put", "", 10, 1)), []string{
			"key \"k\": deleted at revision 12 by the end of session s1, but its put at revision 10 bound it to session \"\"",
			"kv-put op 5: key \"k\" at revision 10 is version 1, created at 10, session \"s1\"; the trail's put says version 1, created at 10, session \"\"",
		}},
		{"a session's end names another revision in its detail", replaced(4, func() check.AuditEvent { e := sessionEnd(12, "s1"); e.Detail = "lease ended"; return e }()), []string{
			"deleted at revision 12 by the end of session s1, but the event's detail says \"lease ended\"",
		}},
		{"a fenced put accepted after its hold ended", replaced(8, lockEvent(16, "released", 15)), []string{
			"kv-put op 10 (key \"k\") fenced by lock \"l\" token 15 was accepted at revision 16, outside that hold in the trail (from 15 to 16)",
		}},
		{"a fenced put accepted under a hold the trail never had", without(6), []string{
			"kv-put op 10 (key \"k\") fenced by lock \"l\" token 15 was accepted at revision 16, but the trail has no hold of the lock with that token",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblems(t, CheckKeyAudit(auditOps(), tt.events), tt.want)
		})
	}
}

// The checks that need ops of their own beside auditOps.
func TestCheckKeyAudit_Sessions(t *testing.T) {
	resurrected := mkHistory(append(auditOps(), bound(acked(get(1, 135, 138, 10, "c"), 10, 1), "s1"))...)
	renewedLate := mkHistory(
		sessionOp(0, check.SessionCreate, "s1", 0, 5, check.OK),
		acked(bound(put(0, "a", 10, 20, check.OK, 5), "s1"), 5, 1),
		acked(on(put(1, "x", 30, 40, check.OK, 7), "k2"), 7, 1),
		sessionOp(0, check.SessionRenew, "s1", 50, 60, check.OK),
	)
	k2 := keyEvent(7, "put", "", 7, 1)
	k2.Name = "k2"
	renewedTrail := []check.AuditEvent{keyEvent(5, "put", "s1", 5, 1), sessionEnd(6, "s1"), k2}
	tests := []struct {
		name   string
		ops    []check.Op
		events []check.AuditEvent
		want   []string
	}{
		{"a resurrected session key: read after its session ended", resurrected, auditTrail(), []string{
			"kv-get op 15 (called at 135ns) finds session s1 alive, but session-delete op 6 had returned at 110ns saying it had ended",
			"kv-get op 15 (called at 135ns) finds session s1 alive, but the session's end had deleted its keys at revision 12 before",
		}},
		{"a session's keys deleted while it lived", renewedLate, renewedTrail, []string{
			"session-renew op 3 (called at 50ns) finds session s1 alive, but the session's end had deleted its keys at revision 6 before: kv-put op 2 (key \"k2\", client 1) had returned having seen revision 7",
		}},
		{"a put under a session after its end", renewedLate[:3], []check.AuditEvent{sessionEnd(4, "s1"), keyEvent(5, "put", "s1", 5, 1), k2}, []string{
			"key \"k\": deleted at revision 4 while it did not exist",
			"key \"k\": the put at revision 5 binds it to session s1, whose end had deleted its keys at revision 4",
			"key \"k\": still bound to session s1 by its put at revision 5, when every session had ended",
		}},
		{"a key outlives its session", renewedLate[:3], []check.AuditEvent{
			keyEvent(5, "put", "s1", 5, 1), k2, keyEvent(8, "put", "", 5, 2), func() check.AuditEvent { e := sessionEnd(6, "s1"); e.Name = "k4"; return e }(),
		}, []string{
			"key \"k\": bound to session s1 by its put at revision 5, it outlived the session's end at revision 6 (its next event: put at 8)",
			"key \"k\": the put at revision 8 (session \"\") matches no kv-put OK",
			"key \"k4\": deleted at revision 6 while it did not exist",
		}},
		{"a session ended with its keys' deletes at two revisions", renewedLate[:3], []check.AuditEvent{
			keyEvent(5, "put", "s1", 5, 1), sessionEnd(6, "s1"), k2, func() check.AuditEvent { e := sessionEnd(9, "s1"); e.Name = "k4"; return e }(),
		}, []string{
			"session s1: its end deleted its keys at revisions [6 9], not in one",
			"key \"k4\": deleted at revision 9 while it did not exist",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblems(t, CheckKeyAudit(tt.ops, tt.events), tt.want)
		})
	}
}

func TestCheckKeyAudit_FencedRefusals(t *testing.T) {
	ops := mkHistory(
		lockOp(0, check.Acquire, 5, 0, 10),
		refused(fenced(put(0, "a", 20, 30, check.Rejected, 0), "l", 5), "stale_token"),
		acked(on(put(1, "x", 40, 50, check.OK, 7), "k2"), 7, 1),
		lockOp(0, check.Release, 5, 60, 70),
	)
	k2 := keyEvent(7, "put", "", 7, 1)
	k2.Name = "k2"
	current := []check.AuditEvent{lockEvent(5, "acquired", 5), k2, lockEvent(9, "released", 5)}
	assertProblems(t, CheckKeyAudit(ops, current), []string{
		"kv-put op 1 (key \"k\") fenced by lock \"l\" token 5 was refused as stale, but its hold (from 5 to 9) was current from before it was called (acquire op 0 (lock \"l\", client 0) had seen revision 5) to after it returned (kv-put op 2 (key \"k2\", client 1) was at revision 7)",
	})
	// Ended before the put returned, the hold may have been gone at its
	// revision.
	ended := []check.AuditEvent{lockEvent(5, "acquired", 5), lockEvent(6, "expired", 5), k2}
	ended[1].Detail = "lease ended; etcd deleted the lock at revision 6"
	assertProblems(t, CheckKeyAudit(ops, ended), nil)
}

func TestCheckKeyOrder(t *testing.T) {
	tests := []struct {
		name string
		ops  []check.Op
		want []string
	}{
		{"revisions rise with real time across keys", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			on(put(1, "b", 20, 30, check.OK, 7), "k2"),
			on(get(2, 40, 50, 7, ""), "k3"),
			on(get(2, 30, 60, 6, ""), "k3"), // concurrent with the put
		), nil},
		{"a put below a revision seen before it was called", mkHistory(
			put(0, "a", 0, 10, check.OK, 9),
			on(put(1, "b", 20, 30, check.OK, 7), "k2"),
		), []string{
			"kv-put op 1 (key \"k2\") called at 20ns took effect at revision 7, but kv-put op 0 (key \"k\", client 0) had returned before, having seen revision 9",
		}},
		{"a key read missing below a revision seen before", mkHistory(
			put(0, "a", 0, 10, check.OK, 9),
			on(get(1, 20, 30, 8, ""), "k2"),
		), []string{
			"kv-get op 1 (key \"k2\") called at 20ns found the key missing at revision 8",
		}},
		{"two puts at one revision", mkHistory(
			put(0, "a", 0, 10, check.OK, 9),
			on(put(1, "b", 0, 10, check.OK, 9), "k2"),
		), []string{
			"kv-put op 0 (key \"k\") and kv-put op 1 (key \"k2\") both took effect at revision 9",
		}},
		{"a fenced put accepted after a later grant of its lock", mkHistory(
			lockOp(0, check.Acquire, 5, 0, 10),
			lockOp(1, check.Acquire, 8, 20, 30),
			fenced(put(0, "a", 40, 50, check.OK, 12), "l", 5),
		), []string{
			"kv-put op 2 (key \"k\") fenced by lock \"l\" token 5 was accepted at revision 12, but acquire op 1 had been granted token 8 at 30ns, before it was called at 40ns",
		}},
		{"a fenced put accepted after its release", mkHistory(
			lockOp(0, check.Acquire, 5, 0, 10),
			lockOp(0, check.Release, 5, 20, 30),
			fenced(put(0, "a", 40, 50, check.OK, 12), "l", 5),
		), []string{
			"kv-put op 2 (key \"k\") fenced by lock \"l\" token 5 was accepted at revision 12, but release op 1 had ended that hold at 30ns",
		}},
		{"a fenced put refused after a handover is fine", mkHistory(
			lockOp(0, check.Acquire, 5, 0, 10),
			lockOp(1, check.Acquire, 8, 20, 30),
			refused(fenced(put(0, "a", 40, 50, check.Rejected, 0), "l", 5), "stale_token"),
		), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblems(t, CheckKeyOrder(tt.ops), tt.want)
		})
	}
}
