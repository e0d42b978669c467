package check

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Builders of synthetic ops. Times are nanoseconds since the run began;
// the owner of client n is "cn".

func mkAcquire(client int, lock string, call, ret int64, res Result, token int64) Op {
	return Op{Client: client, Kind: Acquire, Lock: lock, Owner: fmt.Sprintf("c%d", client),
		Call: call, Return: ret, Result: res, OutToken: token}
}

func mkRenew(client int, lock string, token, call, ret int64, res Result) Op {
	return Op{Client: client, Kind: Renew, Lock: lock, Token: token, Call: call, Return: ret, Result: res}
}

func mkRelease(client int, lock string, token, call, ret int64, res Result) Op {
	return Op{Client: client, Kind: Release, Lock: lock, Token: token, Call: call, Return: ret, Result: res}
}

func mkGet(client int, lock string, call, ret int64, res Result, token int64) Op {
	return Op{Client: client, Kind: Get, Lock: lock, Call: call, Return: ret, Result: res, OutToken: token}
}

func mkFPut(client int, lock string, token int64, value string, call, ret int64, res Result) Op {
	op := Op{Client: client, Kind: FPut, Lock: lock, Token: token, Value: value, Call: call, Return: ret, Result: res}
	if res == Rejected {
		op.Code = "stale_token"
	}
	return op
}

func mkFGet(client int, lock string, call, ret int64, res Result, token int64, value string) Op {
	return Op{Client: client, Kind: FGet, Lock: lock, Call: call, Return: ret, Result: res, OutToken: token, OutValue: value}
}

// mkHistory numbers ops as a workload would.
func mkHistory(ops ...Op) []Op {
	for i := range ops {
		ops[i].ID = i
	}
	return ops
}

func TestModel_LegalHistories(t *testing.T) {
	tests := []historyCase{
		{"a hold is renewed, read and released, then granted anew", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkRenew(0, "a", 5, 20, 30, OK),
			mkGet(1, "a", 35, 40, OK, 5),
			mkRelease(0, "a", 5, 50, 60, OK),
			mkGet(1, "a", 70, 80, Rejected, 0),
			mkAcquire(1, "a", 90, 100, OK, 9),
		)},
		{"an expired hold is replaced and its owner refused", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkAcquire(1, "a", 20, 30, OK, 9),
			mkRenew(0, "a", 5, 40, 50, Rejected),
			mkRelease(0, "a", 5, 60, 70, Rejected),
			mkGet(2, "a", 80, 90, OK, 9),
		)},
		{"a hold expires unseen and get finds the lock free", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkGet(1, "a", 20, 30, Rejected, 0),
			mkRelease(0, "a", 5, 40, 50, Rejected),
		)},
		{"concurrent acquires may be granted out of call order", mkHistory(
			mkAcquire(0, "a", 0, 50, OK, 9),
			mkAcquire(1, "a", 10, 20, OK, 7),
			mkRelease(0, "a", 9, 60, 70, OK),
		)},
		{"an ambiguous acquire, then a get shows its token", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkRelease(0, "a", 5, 20, 30, OK),
			mkAcquire(1, "a", 40, 50, Unknown, 0),
			mkGet(2, "a", 60, 70, OK, 12),
			mkRelease(1, "a", 12, 80, 90, OK),
		)},
		{"an ambiguous acquire lands after its client gave up", mkHistory(
			mkAcquire(1, "a", 0, 10, Unknown, 0),
			mkAcquire(0, "a", 20, 30, OK, 5),
			mkGet(2, "a", 40, 50, OK, 12),
		)},
		{"an ambiguous acquire that never took effect", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkAcquire(1, "a", 20, 30, Unknown, 0),
			mkRenew(0, "a", 5, 40, 50, OK),
			mkRelease(0, "a", 5, 60, 70, OK),
		)},
		{"an ambiguous release that took effect", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkRelease(0, "a", 5, 20, 30, Unknown),
			mkGet(1, "a", 40, 50, Rejected, 0),
			mkRelease(0, "a", 5, 60, 70, Rejected),
		)},
		{"fenced writes: higher and equal tokens pass, lower ones are stale", mkHistory(
			mkFGet(2, "a", 0, 5, Rejected, 0, ""),
			mkFPut(0, "a", 5, `"x"`, 10, 20, OK),
			mkFPut(1, "a", 9, `"y"`, 30, 40, OK),
			mkFPut(0, "a", 5, `"z"`, 50, 60, Rejected),
			mkFPut(1, "a", 9, `"w"`, 70, 80, OK),
			mkFGet(2, "a", 90, 100, OK, 9, `"w"`),
		)},
		{"an ambiguous fenced write shows up later", mkHistory(
			mkFPut(0, "a", 5, `"x"`, 0, 10, Unknown),
			mkFGet(1, "a", 20, 30, OK, 5, `"x"`),
		)},
		{"fenced values compare as JSON, not as bytes", mkHistory(
			mkFPut(0, "a", 5, `{"n": 1}`, 0, 10, OK),
			mkFGet(1, "a", 20, 30, OK, 5, `{"n":1}`),
		)},
		{"failed ops never happened", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkRelease(1, "a", 99, 20, 30, Failed),
			mkAcquire(1, "a", 40, 50, Failed, 3),
			mkFGet(1, "a", 60, 70, Failed, 7, `"nothing"`),
			mkRenew(0, "a", 5, 80, 90, OK),
		)},
		{"a renew is refused while a concurrent one succeeds", mkHistory(
			mkAcquire(0, "a", 0, 5, OK, 5),
			mkRenew(0, "a", 5, 10, 100, OK),
			mkRenew(1, "a", 5, 20, 30, Rejected),
			mkGet(2, "a", 110, 120, Rejected, 0),
		)},
		{"locks do not constrain each other", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 9),
			mkAcquire(1, "b", 20, 30, OK, 5),
			mkRelease(0, "a", 9, 40, 50, OK),
			mkRelease(1, "b", 5, 60, 70, OK),
		)},
	}
	checkHistories(t, CheckLinearizable, true, tests)
}

func TestModel_IllegalHistories(t *testing.T) {
	tests := []historyCase{
		{"a stale release is accepted after another client's acquire", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkAcquire(1, "a", 20, 30, OK, 9),
			mkRelease(0, "a", 5, 40, 50, OK),
		)},
		{"an expired and replaced token is renewed", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkAcquire(1, "a", 20, 30, OK, 9),
			mkRenew(0, "a", 5, 40, 50, OK),
		)},
		{"a released token is renewed", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkRelease(0, "a", 5, 20, 30, OK),
			mkRenew(0, "a", 5, 40, 50, OK),
		)},
		{"a hold is renewed after a renew of it was refused", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkRenew(0, "a", 5, 20, 30, Rejected),
			mkRenew(0, "a", 5, 40, 50, OK),
		)},
		{"a hold is released after a release of it was refused", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkRelease(1, "a", 5, 20, 30, Rejected),
			mkRelease(0, "a", 5, 40, 50, OK),
		)},
		{"a hold is renewed after get found the lock free", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkGet(1, "a", 20, 30, Rejected, 0),
			mkRenew(0, "a", 5, 40, 50, OK),
		)},
		{"a grant's token is below an earlier grant of the lock", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 9),
			mkRelease(0, "a", 9, 20, 30, OK),
			mkAcquire(1, "a", 40, 50, OK, 5),
		)},
		{"get shows a token nobody could have been granted", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkRelease(0, "a", 5, 20, 30, OK),
			mkGet(1, "a", 40, 50, OK, 12),
		)},
		{"get shows an expired and replaced holder", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkAcquire(1, "a", 20, 30, OK, 9),
			mkGet(2, "a", 40, 50, OK, 5),
		)},
		{"a fenced write with a lower token is accepted after a higher one", mkHistory(
			mkFPut(0, "a", 9, `"x"`, 0, 10, OK),
			mkFPut(1, "a", 5, `"y"`, 20, 30, OK),
		)},
		{"a fenced write is called stale with nothing higher written", mkHistory(
			mkFPut(0, "a", 5, `"x"`, 0, 10, OK),
			mkFPut(1, "a", 9, `"y"`, 20, 30, Rejected),
		)},
		{"fget reads a value nobody wrote", mkHistory(
			mkFPut(0, "a", 5, `"x"`, 0, 10, OK),
			mkFGet(1, "a", 20, 30, OK, 5, `"y"`),
		)},
		{"fget finds nothing after a write", mkHistory(
			mkFPut(0, "a", 5, `"x"`, 0, 10, OK),
			mkFGet(1, "a", 20, 30, Rejected, 0, ""),
		)},
	}
	checkHistories(t, CheckLinearizable, false, tests)
}

func describeHistory(ops []Op) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "  [%d,%d] c%d %s: %s\n", op.Call, op.Return, op.Client, op.Lock, DescribeOp(op))
	}
	return b.String()
}

func TestCheckLinearizable_WritesVisualisationOnlyWhenIllegal(t *testing.T) {
	dir := t.TempDir()

	illegal := filepath.Join(dir, "illegal.html")
	ok, err := CheckLinearizable(mkHistory(
		mkAcquire(0, "a", 0, 10, OK, 5),
		mkAcquire(1, "a", 20, 30, OK, 9),
		mkRelease(0, "a", 5, 40, 50, OK),
	), 10*time.Second, illegal)
	if err != nil || ok {
		t.Fatalf("CheckLinearizable = %v, %v; want false, nil", ok, err)
	}
	assertFileHas(t, illegal, "<html", "acquire c1 → 9", "release 5 → ok", "holder 9 last 9")

	legal := filepath.Join(dir, "legal.html")
	ok, err = CheckLinearizable(mkHistory(mkAcquire(0, "a", 0, 10, OK, 5)), 10*time.Second, legal)
	if err != nil || !ok {
		t.Fatalf("CheckLinearizable = %v, %v; want true, nil", ok, err)
	}
	if _, err := os.Stat(legal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a legal history wrote %s (stat: %v)", legal, err)
	}
}

func TestCheckLinearizable_TimeoutIsNoPass(t *testing.T) {
	// Every order of many concurrent writes must be tried before the read
	// that matches none of them is proved illegal: far beyond the timeout.
	var ops []Op
	for i := range 24 {
		ops = append(ops, mkFPut(i, "a", 5, fmt.Sprintf("%d", i), 0, 100, OK))
	}
	ops = mkHistory(append(ops, mkFGet(24, "a", 200, 300, OK, 5, `"none"`))...)
	ok, err := CheckLinearizable(ops, 50*time.Millisecond, "")
	if ok || !errors.Is(err, ErrCheckTimeout) {
		t.Errorf("CheckLinearizable = %v, %v; want false, ErrCheckTimeout", ok, err)
	}
}

func TestCheckLinearizable_RefusesUnknownKind(t *testing.T) {
	ops := mkHistory(Op{Kind: "steal", Lock: "a", Result: OK})
	ok, err := CheckLinearizable(ops, time.Second, "")
	if ok || err == nil || !strings.Contains(err.Error(), "steal") {
		t.Errorf("CheckLinearizable = %v, %v; want false and an error naming the kind", ok, err)
	}
}

func TestCheckTokenOrder(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		want []string // one substring per expected violation
	}{
		{"tokens grow in real time across locks; concurrent grants may not", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 5),
			mkAcquire(1, "b", 20, 30, OK, 9),
			mkAcquire(2, "a", 25, 40, OK, 7),
			mkAcquire(3, "a", 50, 60, Rejected, 1),
			mkAcquire(3, "b", 50, 60, Unknown, 0),
			mkAcquire(3, "c", 50, 60, Failed, 2),
		), nil},
		{"a token decreases in real time across locks", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 9),
			mkAcquire(1, "b", 20, 30, OK, 5),
		), []string{"acquire op 0 (lock \"a\") returned token 9"}},
		{"a later grant repeats an earlier token", mkHistory(
			mkAcquire(0, "a", 0, 10, OK, 9),
			mkAcquire(1, "b", 20, 30, OK, 9),
		), []string{"got token 9"}},
		{"two grants of one lock share a token", mkHistory(
			mkAcquire(0, "a", 0, 20, OK, 5),
			mkAcquire(1, "a", 10, 30, OK, 5),
		), []string{"token 5 granted twice: op 0 (client 0) and op 1 (client 1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblems(t, CheckTokenOrder(tt.ops), tt.want)
		})
	}
}

func TestCheckFencedOrder(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		want []string
	}{
		{"tokens never fall; concurrent and rejected writes do not count", mkHistory(
			mkFPut(0, "a", 5, `1`, 0, 10, OK),
			mkFPut(0, "a", 5, `2`, 20, 30, OK),
			mkFPut(1, "a", 9, `3`, 40, 50, OK),
			mkFPut(0, "a", 5, `4`, 60, 70, Rejected),
			mkFPut(0, "b", 9, `5`, 0, 20, OK),
			mkFPut(1, "b", 7, `6`, 10, 30, OK),
			mkFPut(2, "c", 3, `7`, 100, 110, OK),
		), nil},
		{"a lower token is accepted after a higher one", mkHistory(
			mkFPut(0, "a", 9, `1`, 0, 10, OK),
			mkFPut(1, "a", 5, `2`, 20, 30, OK),
		), []string{"fput op 1 with token 5 was accepted at 30ns after fput op 0 with token 9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblems(t, CheckFencedOrder(tt.ops), tt.want)
		})
	}
}

func TestCheckAudit(t *testing.T) {
	ops := mkHistory(
		mkAcquire(0, "a", 0, 10, OK, 5),
		mkRelease(0, "a", 5, 20, 30, OK),
		mkAcquire(1, "a", 40, 50, OK, 9), // expires
		mkAcquire(2, "b", 0, 10, Unknown, 0),
		mkAcquire(3, "c", 0, 10, Unknown, 0), // never took effect
		mkAcquire(3, "c", 20, 30, Rejected, 0),
		mkAcquire(3, "c", 40, 50, Failed, 0),
	)
	ev := func(typ, lock, owner string, token int64) AuditEvent {
		return AuditEvent{Type: typ, Lock: lock, Owner: owner, Token: token}
	}
	trail := []AuditEvent{
		ev("acquired", "a", "c0", 5),
		ev("released", "a", "c0", 5),
		ev("acquired", "a", "c1", 9),
		ev("expired", "a", "c1", 9),
		ev("acquired", "b", "c2", 7), // the Unknown acquire took effect
		ev("revoked", "b", "c2", 7),
	}
	without, with, replaced := trailEdits(trail)

	tests := []auditCase{
		{"the trail matches the ops", trail, nil},
		{"a grant's acquired event is missing", without(0), []string{
			"acquire op 0: lock \"a\" token 5 has no acquired event",
			"lock \"a\" token 5: released without an acquired event",
		}},
		{"a released event is duplicated", with(ev("released", "a", "c0", 5)), []string{
			"lock \"a\" token 5: 2 end events (released, released)",
		}},
		{"a hold has two ends", with(ev("expired", "a", "c0", 5)), []string{
			"lock \"a\" token 5: 2 end events (released, expired)",
		}},
		{"a hold never ends", without(3), []string{
			"lock \"a\" token 9: acquired but never ended",
		}},
		{"an acquired event is duplicated", with(ev("acquired", "a", "c1", 9)), []string{
			"lock \"a\" token 9: 2 acquired events",
		}},
		{"a released hold is recorded as expired", replaced(1, ev("expired", "a", "c0", 5)), []string{
			"release op 1: lock \"a\" token 5 has no released event (ends: expired)",
		}},
		{"the audit names another owner", replaced(0, ev("acquired", "a", "c9", 5)), []string{
			"acquire op 0: lock \"a\" token 5 acquired by \"c0\", but the audit says \"c9\"",
		}},
		{"a grant no acquire explains", with(ev("acquired", "c", "c3", 12), ev("released", "c", "c3", 12), ev("acquired", "c", "c3", 14), ev("expired", "c", "c3", 14)), []string{
			"lock \"c\": 2 acquired events (tokens [12 14]) match no acquire OK, but only 1 acquires were Unknown",
		}},
		{"locks the run never touched are not its business", with(ev("acquired", "z", "ops", 3), ev("revoked", "z", "ops", 3)), nil},
	}
	checkAudits(t, CheckAudit, ops, tests)
}

// historyCase is a named history for a model's check.
type historyCase struct {
	name string
	ops  []Op
}

// checkHistories wants check to judge each history of tests legal (or,
// legal false, not linearizable), without an error.
func checkHistories(t *testing.T, check func([]Op, time.Duration, string) (bool, error), legal bool, tests []historyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := check(tt.ops, 10*time.Second, "")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case legal && !ok:
				t.Errorf("history judged illegal:\n%s", describeHistory(tt.ops))
			case !legal && ok:
				t.Errorf("history judged linearizable:\n%s", describeHistory(tt.ops))
			}
		})
	}
}

// auditCase is a named trail and the problems an audit check must find
// in it, one per substring.
type auditCase struct {
	name   string
	events []AuditEvent
	want   []string
}

// checkAudits wants check to find in each trail of tests, against ops,
// exactly the problems it names.
func checkAudits(t *testing.T, check func([]Op, []AuditEvent) []string, ops []Op, tests []auditCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblems(t, check(ops, tt.events), tt.want)
		})
	}
}

// trailEdits are the variants of trail the audit tests check: without
// its event i, with extra events after it, with its event i replaced.
func trailEdits(trail []AuditEvent) (without func(int) []AuditEvent, with func(...AuditEvent) []AuditEvent, replaced func(int, AuditEvent) []AuditEvent) {
	without = func(i int) []AuditEvent { return slices.Delete(slices.Clone(trail), i, i+1) }
	with = func(extra ...AuditEvent) []AuditEvent { return append(slices.Clone(trail), extra...) }
	replaced = func(i int, e AuditEvent) []AuditEvent {
		out := slices.Clone(trail)
		out[i] = e
		return out
	}
	return without, with, replaced
}

// assertFileHas wants the file at path to hold each of wants, as a
// porcupine visualisation shows the ops and states it is about.
func assertFileHas(t *testing.T, path string, wants ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range wants {
		if !strings.Contains(string(b), want) {
			t.Errorf("visualisation lacks %q", want)
		}
	}
}

// assertProblems wants exactly one problem per substring in want.
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

func TestSummarize(t *testing.T) {
	ops := mkHistory(
		mkAcquire(0, "a", 0, 1, OK, 5),
		mkAcquire(1, "a", 0, 1, OK, 7),
		mkAcquire(2, "a", 0, 1, Rejected, 0),
		mkAcquire(3, "a", 0, 1, Failed, 0),
		mkRelease(0, "a", 5, 2, 3, OK),
		mkRelease(1, "a", 7, 2, 3, Unknown),
		mkFGet(2, "a", 0, 1, Rejected, 0, ""),
	)
	want := "acquire ok=2 rejected=1 unknown=0 failed=1; release ok=1 rejected=0 unknown=1 failed=0; fget ok=0 rejected=1 unknown=0 failed=0"
	if got := Summarize(ops); got != want {
		t.Errorf("Summarize =\n  %s\nwant\n  %s", got, want)
	}
	if got := Summarize(nil); got != "no ops" {
		t.Errorf("Summarize(nil) = %q", got)
	}
}
