package kvcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// Builders of synthetic key ops, as check's tests have for locks. Every op
// is on key "k" unless on() moves it; values are JSON strings.

// put is a put of value by client, answered res: OK at revision rev, or
// Rejected as revision_mismatch with the key at rev.
func put(client int, value string, call, ret int64, res check.Result, rev int64) check.Op {
	op := check.Op{Client: client, Kind: check.KVPut, Key: "k", Value: fmt.Sprintf("%q", value), Call: call, Return: ret, Result: res}
	switch res {
	case check.OK:
		op.OutRevision = rev
	case check.Rejected:
		op.Code, op.OutRevision = "revision_mismatch", rev
	}
	return op
}

// get is a read by client of value at rev, or ("" value) of the key
// missing at the read's revision rev.
func get(client int, call, ret, rev int64, value string) check.Op {
	op := check.Op{Client: client, Kind: check.KVGet, Key: "k", Call: call, Return: ret, Result: check.OK, OutRevision: rev}
	if value == "" {
		op.Result, op.Code = check.Rejected, "key_not_found"
	} else {
		op.OutValue = fmt.Sprintf("%q", value)
	}
	return op
}

// del is a delete by client answered res (Rejected: key_not_found at rev).
func del(client int, call, ret int64, res check.Result, rev int64) check.Op {
	op := check.Op{Client: client, Kind: check.KVDelete, Key: "k", Call: call, Return: ret, Result: res}
	if res == check.Rejected {
		op.Code, op.OutRevision = "key_not_found", rev
	}
	return op
}

// cas makes op compare the key's revision with rev (0: create only).
func cas(op check.Op, rev int64) check.Op {
	op.IfRevision = &rev
	return op
}

// bound binds op's key to session (a put), or shows it bound (a read).
func bound(op check.Op, session string) check.Op {
	if op.Kind == check.KVPut {
		op.Session = session
	}
	if op.Result == check.OK {
		op.OutSession = session
	}
	return op
}

// fenced makes op a put fenced by lock token.
func fenced(op check.Op, lock string, token int64) check.Op {
	op.Lock, op.Token = lock, token
	return op
}

func refused(op check.Op, code string) check.Op {
	op.Code, op.OutRevision = code, 0
	return op
}

func on(op check.Op, key string) check.Op {
	op.Key = key
	return op
}

func mkHistory(ops ...check.Op) []check.Op {
	for i := range ops {
		ops[i].ID = i
	}
	return ops
}

type keyCase struct {
	name     string
	ops      []check.Op
	vanishes Vanishes
}

// checkKeys wants CheckKeys to judge each history of tests legal (or,
// legal false, not linearizable), without an error.
func checkKeys(t *testing.T, legal bool, tests []keyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := CheckKeys(tt.ops, tt.vanishes, 10*time.Second, "")
			if err != nil {
				t.Fatal(err)
			}
			if ok != legal {
				var b strings.Builder
				for _, op := range tt.ops {
					fmt.Fprintf(&b, "  [%d, %d] c%d %s\n", op.Call, op.Return, op.Client, check.DescribeOp(op))
				}
				t.Errorf("CheckKeys = %v, want %v:\n%s", ok, legal, b.String())
			}
		})
	}
}

var s1Vanishes = Vanishes{"k": {{Put: 5, At: 12, Session: "s1"}}}

func TestKeyModel_LegalHistories(t *testing.T) {
	checkKeys(t, true, []keyCase{
		{"puts, reads, compare-and-sets and deletes in turn", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			get(1, 20, 30, 5, "a"),
			cas(put(0, "b", 40, 50, check.OK, 7), 5),
			cas(put(1, "c", 60, 70, check.Rejected, 7), 5),
			get(1, 80, 90, 7, "b"),
			cas(del(0, 100, 110, check.OK, 0), 7),
			get(1, 120, 130, 9, ""),
			cas(put(0, "d", 140, 150, check.OK, 10), 0),
			get(1, 160, 170, 10, "d"),
		), nil},
		{"concurrent puts take effect in revision order", mkHistory(
			put(0, "a", 0, 50, check.OK, 8),
			put(1, "b", 10, 20, check.OK, 6),
			get(2, 60, 70, 8, "a"),
		), nil},
		{"an Unknown put took effect: a read shows it, a compare-and-set uses its revision", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			put(1, "b", 20, 30, check.Unknown, 0),
			get(2, 40, 50, 9, "b"),
			cas(put(2, "c", 60, 70, check.OK, 11), 9),
		), nil},
		{"an Unknown put that never took effect", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			cas(put(1, "b", 20, 30, check.Unknown, 0), 5),
			get(2, 40, 50, 5, "a"),
		), nil},
		{"a create-only put refused shows the key's revision", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			cas(put(1, "b", 20, 30, check.Rejected, 5), 0),
		), nil},
		{"a compare-and-set on a missing key is refused with revision 0", mkHistory(
			cas(put(1, "b", 0, 10, check.Rejected, 0), 3),
			put(0, "a", 20, 30, check.OK, 5),
		), nil},
		{"a fenced put or a put under an ended session refused changes nothing", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			refused(fenced(put(1, "b", 20, 30, check.Rejected, 0), "l", 4), "stale_token"),
			refused(bound(put(1, "c", 20, 30, check.Rejected, 0), "s9"), "session_not_found"),
			get(2, 40, 50, 5, "a"),
		), nil},
		{"a delete finds the key missing at the revision it read", mkHistory(
			del(0, 0, 10, check.Rejected, 3),
			put(1, "a", 20, 30, check.OK, 5),
			del(0, 40, 50, check.OK, 0),
			del(1, 60, 70, check.Rejected, 6),
		), nil},
		{"a key bound to a session vanishes where the trail says, at that revision", mkHistory(
			bound(put(0, "a", 0, 10, check.OK, 5), "s1"),
			bound(get(1, 20, 30, 5, "a"), "s1"),
			get(1, 40, 50, 12, ""),
			put(2, "b", 60, 70, check.OK, 14),
		), s1Vanishes},
		{"a key bound by an Unknown put vanishes with its session", mkHistory(
			put(0, "a", 0, 10, check.OK, 3),
			bound(put(1, "b", 20, 30, check.Unknown, 0), "s1"),
			get(2, 40, 50, 12, ""),
		), s1Vanishes},
	})
}

func TestKeyModel_IllegalHistories(t *testing.T) {
	checkKeys(t, false, []keyCase{
		{"a lost update: a read after two puts shows the first", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			put(1, "b", 20, 30, check.OK, 7),
			get(2, 40, 50, 5, "a"),
		), nil},
		{"a stale read: the key missing after a put returned", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			get(1, 20, 30, 4, ""),
		), nil},
		{"a read below the revision a read before it was at", mkHistory(
			get(0, 0, 10, 9, ""),
			get(1, 20, 30, 7, ""),
		), nil},
		{"a compare-and-set that should have failed: two succeed on one revision", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			cas(put(1, "b", 20, 30, check.OK, 7), 5),
			cas(put(2, "c", 40, 50, check.OK, 9), 5),
		), nil},
		{"a create-only put succeeds on a key that exists", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			cas(put(1, "b", 20, 30, check.OK, 7), 0),
		), nil},
		{"a mismatch shows a revision the key was never at", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			cas(put(1, "b", 20, 30, check.Rejected, 4), 3),
		), nil},
		{"a mismatch while the key is at the revision asked for", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			cas(put(1, "b", 20, 30, check.Rejected, 5), 5),
		), nil},
		{"a put at a revision below one already read", mkHistory(
			get(0, 0, 10, 9, ""),
			put(1, "a", 20, 30, check.OK, 8),
		), nil},
		{"a put at the key's own revision", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			put(1, "b", 20, 30, check.OK, 5),
		), nil},
		{"a read shows a value no put wrote", mkHistory(
			put(0, "a", 0, 10, check.OK, 5),
			get(1, 20, 30, 5, "z"),
		), nil},
		{"a delete of a missing key succeeds", mkHistory(
			del(0, 0, 10, check.OK, 0),
		), nil},
		{"a resurrected session key: read again after its session's end", mkHistory(
			bound(put(0, "a", 0, 10, check.OK, 5), "s1"),
			get(1, 20, 30, 12, ""),
			bound(get(1, 40, 50, 5, "a"), "s1"),
		), s1Vanishes},
		{"a session key vanishes where the trail shows no session's end", mkHistory(
			bound(put(0, "a", 0, 10, check.OK, 5), "s1"),
			get(1, 20, 30, 12, ""),
		), nil},
		{"a session key read missing before its session's end deleted it", mkHistory(
			bound(put(0, "a", 0, 10, check.OK, 5), "s1"),
			get(1, 20, 30, 8, ""),
		), s1Vanishes},
		{"a key unbound from its session does not vanish with it", mkHistory(
			bound(put(0, "a", 0, 10, check.OK, 5), "s1"),
			put(0, "b", 20, 30, check.OK, 6),
			get(1, 40, 50, 12, ""),
		), Vanishes{"k": {{Put: 5, At: 12, Session: "s1"}, {Put: 6, At: 12, Session: "s1"}}}},
		{"a read shows the key bound to another session", mkHistory(
			bound(put(0, "a", 0, 10, check.OK, 5), "s1"),
			bound(get(1, 20, 30, 5, "a"), "s2"),
		), nil},
	})
}

// Keys never constrain each other in the model: the order across keys is
// CheckKeyOrder's.
func TestKeyModel_PartitionsByKey(t *testing.T) {
	ops := mkHistory(
		put(0, "a", 0, 10, check.OK, 5),
		on(get(1, 20, 30, 3, ""), "other"),
	)
	if ok, err := CheckKeys(ops, nil, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckKeys = %v, %v; want true, nil", ok, err)
	}
	if got := CheckKeyOrder(ops); len(got) != 1 || !strings.Contains(got[0], "found the key missing at revision 3") {
		t.Errorf("CheckKeyOrder = %q; want the read below revision 5", got)
	}
}

// The other models leave key ops alone, even a fenced put naming a lock.
func TestCheckers_LeaveKeysAlone(t *testing.T) {
	ops := mkHistory(
		fenced(put(0, "a", 0, 10, check.OK, 5), "l", 99),
		put(1, "a", 20, 30, check.OK, 5), // a second put at 5: the key model's business
		check.Op{Client: 2, Kind: check.SessionRenew, Session: "s1", Call: 40, Return: 50, Result: check.OK},
	)
	if ok, err := check.CheckLinearizable(ops, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckLinearizable = %v, %v; want true, nil", ok, err)
	}
	if got := check.CheckAudit(ops, nil); len(got) != 0 {
		t.Errorf("CheckAudit = %q; want nothing", got)
	}
	if ok, err := CheckKeys(ops, nil, 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckKeys = %v, %v; want false, nil", ok, err)
	}
}

func TestCheckKeys_WritesVisualisation(t *testing.T) {
	html := filepath.Join(t.TempDir(), "keys.html")
	ops := mkHistory(
		cas(put(0, "first", 0, 10, check.OK, 5), 0),
		cas(put(1, "second", 20, 30, check.OK, 7), 0),
	)
	if ok, err := CheckKeys(ops, nil, 10*time.Second, html); ok || err != nil {
		t.Fatalf("CheckKeys = %v, %v; want false, nil", ok, err)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`kv-put \"second\" if 0 → 7`, "5 = \\\"first\\\""} {
		if !strings.Contains(string(b), want) {
			t.Errorf("visualisation lacks %s", want)
		}
	}
}

func TestResolveKeys(t *testing.T) {
	trail := []check.AuditEvent{
		keyEvent(5, "put", "s1", 5, 1),
		keyEvent(6, "put", "s1", 5, 2),
		sessionEnd(12, "s1"),
		keyEvent(14, "put", "", 14, 1),
		keyEvent(15, "delete", "", 0, 0),
		{Revision: 16, Type: "acquired", Kind: "lock", Lock: "k", Token: 16},
	}
	got := ResolveKeys(trail)
	want := Vanishes{"k": {{Put: 6, At: 12, Session: "s1"}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ResolveKeys = %v; want %v", got, want)
	}
}
