package windowcheck

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

var t0 = time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)

func acquired(kind, name, owner string, token int64, at time.Duration) check.AuditEvent {
	ev := check.AuditEvent{Revision: token, Type: "acquired", Kind: kind, Owner: owner, Token: token, Time: t0.Add(at)}
	if kind == "lock" {
		ev.Lock = name
	}
	ev.Name = name
	return ev
}

func ended(typ, kind, name string, token, revision int64, at time.Duration) check.AuditEvent {
	ev := acquired(kind, name, "", token, at)
	ev.Type, ev.Revision = typ, revision
	return ev
}

func lockOp(owner, minHold string) check.Op {
	return check.Op{Kind: check.Acquire, Lock: "l", Owner: owner, MinHold: minHold, Result: check.OK}
}

func TestCheckWindows_AGrantInsideALocksWindowIsCaught(t *testing.T) {
	ops := []check.Op{lockOp("a", "500ms"), lockOp("b", "")}
	events := []check.AuditEvent{
		acquired("lock", "l", "a", 10, 0),
		ended("released", "lock", "l", 10, 11, 100*time.Millisecond),
		acquired("lock", "l", "b", 12, 300*time.Millisecond),
		ended("released", "lock", "l", 12, 13, 400*time.Millisecond),
	}
	got := CheckWindows(ops, events)
	if len(got) != 1 || !strings.Contains(got[0], "token 12") || !strings.Contains(got[0], "window of token 10") {
		t.Fatalf("a grant 300ms into a 500ms window: %q; want it reported", got)
	}
}

func TestCheckWindows_AGrantAtTheWindowsEndOrAMillisecondBeforePasses(t *testing.T) {
	for _, at := range []time.Duration{500 * time.Millisecond, 499 * time.Millisecond, 2 * time.Second} {
		ops := []check.Op{lockOp("a", "500ms"), lockOp("b", "")}
		events := []check.AuditEvent{
			acquired("lock", "l", "a", 10, 0),
			ended("released", "lock", "l", 10, 11, 100*time.Millisecond),
			acquired("lock", "l", "b", 12, at),
		}
		if got := CheckWindows(ops, events); len(got) != 0 {
			t.Errorf("a grant %s after a 500ms window began: %q; want none", at, got)
		}
	}
}

func TestCheckWindows_AnExpiryInsideTheWindowKeepsItToo(t *testing.T) {
	ops := []check.Op{lockOp("a", "2s"), {Kind: check.Acquire, Lock: "l", Owner: "b", Result: check.Unknown}}
	events := []check.AuditEvent{
		acquired("lock", "l", "a", 10, 0),
		{Revision: 12, Type: "expired", Lock: "l", Token: 10, Time: t0.Add(time.Second), Detail: "etcd deleted the lock at revision 11"},
		acquired("lock", "l", "b", 13, 1500*time.Millisecond),
	}
	if got := CheckWindows(ops, events); len(got) != 1 {
		t.Fatalf("a grant after an expiry, inside the window: %q; want it reported", got)
	}
}

func TestCheckWindows_HoldsWithoutAWindowAreNotItsToReport(t *testing.T) {
	events := []check.AuditEvent{
		acquired("lock", "l", "a", 10, 0),
		acquired("lock", "l", "b", 12, 10*time.Millisecond),
	}
	if got := CheckWindows([]check.Op{lockOp("a", ""), lockOp("b", "")}, events); len(got) != 0 {
		t.Fatalf("overlapping holds without windows: %q; want none from this check", got)
	}
}

func semOp(owner, minHold string) check.Op {
	return check.Op{Kind: check.SemAcquire, Semaphore: "s", Limit: 2, Owner: owner, MinHold: minHold, Result: check.OK}
}

func TestCheckWindows_ASemaphoresWindowKeepsItsSeat(t *testing.T) {
	ops := []check.Op{semOp("a", "1s"), semOp("b", ""), semOp("c", ""), semOp("d", "")}
	base := []check.AuditEvent{
		acquired("semaphore", "s", "a", 10, 0),
		acquired("semaphore", "s", "b", 11, 10*time.Millisecond),
		ended("released", "semaphore", "s", 10, 12, 100*time.Millisecond),
	}
	// One seat held (b), one kept by a's window: c is one too many.
	over := append(append([]check.AuditEvent(nil), base...), acquired("semaphore", "s", "c", 13, 200*time.Millisecond))
	if got := CheckWindows(ops, over); len(got) != 1 || !strings.Contains(got[0], "token 13") {
		t.Errorf("a third permit of two while a window keeps a seat: %q; want it reported", got)
	}
	// Once b is released, c fits beside a's window.
	fits := append(append([]check.AuditEvent(nil), base...),
		ended("released", "semaphore", "s", 11, 13, 150*time.Millisecond),
		acquired("semaphore", "s", "c", 14, 200*time.Millisecond),
		acquired("semaphore", "s", "d", 15, time.Second))
	if got := CheckWindows(ops, fits); len(got) != 0 {
		t.Errorf("permits within the limit, windows counted: %q; want none", got)
	}
}
