package check

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Builders of synthetic election ops, as check_test.go's for locks. The
// candidate of client n is "cn"; every election op is on election "e".

func mkCampaign(client int, call, ret int64, res Result, token, term int64, value string) Op {
	op := Op{Client: client, Kind: Campaign, Election: "e", Owner: fmt.Sprintf("c%d", client), Value: value,
		Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken, op.OutTerm, op.OutOwner, op.OutValue = token, term, op.Owner, value
	}
	return op
}

// mkWaitingCampaign is a campaign with wait.
func mkWaitingCampaign(client int, call, ret int64, res Result, token, term int64, value string) Op {
	op := mkCampaign(client, call, ret, res, token, term, value)
	op.Wait = "2s"
	return op
}

// mkProclaim answers, on OK, the leadership of token in term with value.
func mkProclaim(client int, token int64, value string, call, ret int64, res Result, term int64) Op {
	op := Op{Client: client, Kind: Proclaim, Election: "e", Token: token, Value: value, Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken, op.OutTerm, op.OutValue = token, term, value
	}
	return op
}

func mkResign(client int, token, call, ret int64, res Result) Op {
	return Op{Client: client, Kind: Resign, Election: "e", Token: token, Call: call, Return: ret, Result: res}
}

func mkRenewLeader(client int, token, call, ret int64, res Result, term int64) Op {
	op := Op{Client: client, Kind: RenewLeader, Election: "e", Token: token, Call: call, Return: ret, Result: res}
	if res == OK {
		op.OutToken, op.OutTerm = token, term
	}
	return op
}

func mkLeader(client int, call, ret int64, res Result, token, term int64, value string) Op {
	return Op{Client: client, Kind: Leader, Election: "e", Call: call, Return: ret, Result: res,
		OutToken: token, OutTerm: term, OutValue: value}
}

// mkLedFPut is a fenced write to resource "e" guarded by election "e".
func mkLedFPut(client int, token int64, value string, call, ret int64, res Result, code string) Op {
	return Op{Client: client, Kind: FPut, Election: "e", Token: token, Value: value, Call: call, Return: ret, Result: res, Code: code}
}

func mkLedFGet(client int, call, ret int64, res Result, token int64, value string) Op {
	return Op{Client: client, Kind: FGet, Election: "e", Call: call, Return: ret, Result: res, OutToken: token, OutValue: value}
}

func TestElectionModel_LegalHistories(t *testing.T) {
	tests := []historyCase{
		{"a leader proclaims, renews, writes and resigns; the next is term 2", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkLeader(1, 15, 18, OK, 5, 1, "a"),
			mkProclaim(0, 5, "b", 20, 30, OK, 1),
			mkLeader(1, 35, 40, OK, 5, 1, "b"),
			mkRenewLeader(0, 5, 41, 42, OK, 1),
			mkLedFPut(0, 5, "w", 43, 44, OK, ""),
			mkLedFGet(1, 45, 46, OK, 5, "w"),
			mkResign(0, 5, 50, 60, OK),
			mkLeader(1, 70, 80, Rejected, 0, 0, ""),
			mkCampaign(1, 90, 100, OK, 9, 2, "c"),
			mkLeader(2, 110, 120, OK, 9, 2, "c"),
		)},
		{"a campaign is refused while someone leads", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkCampaign(1, 20, 30, Rejected, 0, 0, "b"),
			mkProclaim(0, 5, "c", 40, 50, OK, 1),
		)},
		{"a waiting campaign takes over from a resignation", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkWaitingCampaign(1, 20, 100, OK, 9, 2, "b"),
			mkResign(0, 5, 30, 40, OK),
			mkProclaim(1, 9, "c", 110, 120, OK, 2),
			mkProclaim(0, 5, "d", 130, 140, Rejected, 0),
		)},
		{"a leadership expires unseen and the next is elected; the deposed are refused", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkCampaign(1, 20, 30, OK, 9, 2, "b"),
			mkProclaim(0, 5, "x", 40, 50, Rejected, 0),
			mkLedFPut(0, 5, "late", 60, 70, Rejected, "not_holder"),
			mkResign(0, 5, 80, 90, Rejected),
			mkLeader(2, 100, 110, OK, 9, 2, "b"),
		)},
		{"an Unknown campaign won: the next grant is a term later", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkCampaign(1, 20, 30, Unknown, 0, 0, "b"),
			mkCampaign(2, 40, 50, OK, 12, 3, "c"),
		)},
		{"an Unknown campaign that never took effect", mkHistory(
			mkCampaign(1, 0, 10, Unknown, 0, 0, "b"),
			mkCampaign(0, 20, 30, OK, 5, 1, "a"),
			mkProclaim(0, 5, "x", 40, 50, OK, 1),
		)},
		{"a read shows the leader of an Unknown campaign, which then resigns", mkHistory(
			mkCampaign(0, 0, 10, Unknown, 0, 0, "a"),
			mkLeader(1, 20, 30, OK, 7, 1, "a"),
			mkResign(0, 7, 40, 50, OK),
		)},
		{"an Unknown proclaim shows up later; an Unknown resign took effect", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkProclaim(0, 5, "b", 20, 30, Unknown, 0),
			mkLeader(1, 40, 50, OK, 5, 1, "b"),
			mkResign(0, 5, 60, 70, Unknown),
			mkLeader(1, 80, 90, Rejected, 0, 0, ""),
		)},
		{"failed ops never happened", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkCampaign(1, 20, 30, Failed, 9, 1, "b"),
			mkProclaim(1, 9, "x", 40, 50, Failed, 1),
			mkRenewLeader(0, 5, 60, 70, OK, 1),
		)},
		{"a fenced write of the current leader passes, a deposed leader's is refused as stale", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkLedFPut(0, 5, "x", 20, 30, OK, ""),
			mkResign(0, 5, 40, 50, OK),
			mkCampaign(1, 60, 70, OK, 9, 2, "b"),
			mkLedFPut(1, 9, "y", 80, 90, OK, ""),
			mkLedFPut(0, 5, "z", 100, 110, Rejected, "stale_token"),
			mkLedFGet(2, 120, 130, OK, 9, "y"),
		)},
	}
	checkHistories(t, CheckElections, true, tests)
}

func TestElectionModel_IllegalHistories(t *testing.T) {
	tests := []historyCase{
		{"two leaders in one term", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkCampaign(1, 20, 30, OK, 9, 1, "b"),
		)},
		{"two leaders in one term, granted concurrently", mkHistory(
			mkCampaign(0, 0, 30, OK, 5, 1, "a"),
			mkWaitingCampaign(1, 10, 40, OK, 9, 1, "b"),
		)},
		{"a term is skipped", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkResign(0, 5, 20, 30, OK),
			mkCampaign(1, 40, 50, OK, 9, 3, "b"),
		)},
		{"the first term is not 1", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 2, "a"),
		)},
		{"a deposed leader's proclaim succeeds", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkCampaign(1, 20, 30, OK, 9, 2, "b"),
			mkProclaim(0, 5, "x", 40, 50, OK, 1),
		)},
		{"a resigned leader renews", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkResign(0, 5, 20, 30, OK),
			mkRenewLeader(0, 5, 40, 50, OK, 1),
		)},
		{"a leader resigns twice", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkResign(0, 5, 20, 30, OK),
			mkResign(0, 5, 40, 50, OK),
		)},
		{"a leader proclaims after a proclaim of it was refused", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkProclaim(1, 5, "x", 20, 30, Rejected, 0),
			mkProclaim(0, 5, "y", 40, 50, OK, 1),
		)},
		{"a read misses a proclaimed value", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkProclaim(0, 5, "b", 20, 30, OK, 1),
			mkLeader(1, 40, 50, OK, 5, 1, "a"),
		)},
		{"a read shows the wrong term", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkLeader(1, 20, 30, OK, 5, 2, "a"),
		)},
		{"a grant's token is below an earlier grant's", mkHistory(
			mkCampaign(0, 0, 10, OK, 9, 1, "a"),
			mkResign(0, 9, 20, 30, OK),
			mkCampaign(1, 40, 50, OK, 5, 2, "b"),
		)},
		{"a deposed leader's fenced write is accepted", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkCampaign(1, 20, 30, OK, 9, 2, "b"),
			mkLedFPut(0, 5, "late", 40, 50, OK, ""),
		)},
		{"a fenced write is accepted after the leader resigned", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkResign(0, 5, 20, 30, OK),
			mkLedFPut(0, 5, "late", 40, 50, OK, ""),
		)},
		{"a leader's fenced write is called stale with nothing higher written", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkLedFPut(0, 5, "x", 20, 30, Rejected, "stale_token"),
		)},
		{"a waiting campaign is refused, yet its candidate leads", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkWaitingCampaign(1, 20, 200, Rejected, 0, 0, "b"),
			mkResign(0, 5, 100, 110, OK),
			mkLeader(2, 120, 130, OK, 9, 2, "b"),
		)},
		{"a read finds no leader, then the leader renews", mkHistory(
			mkCampaign(0, 0, 10, OK, 5, 1, "a"),
			mkLeader(1, 20, 30, Rejected, 0, 0, ""),
			mkRenewLeader(0, 5, 40, 50, OK, 1),
		)},
	}
	checkHistories(t, CheckElections, false, tests)
}

// The two models split one history: each checks only its own ops, so a
// lock and an election of the same name never meet.
func TestCheckers_SplitOneHistory(t *testing.T) {
	ops := mkHistory(
		mkAcquire(0, "e", 0, 10, OK, 5),
		mkCampaign(1, 20, 30, OK, 9, 1, "a"),
		mkRelease(0, "e", 5, 40, 50, OK),
		mkProclaim(1, 9, "b", 60, 70, OK, 1),
	)
	for _, check := range []func([]Op, time.Duration, string) (bool, error){CheckLinearizable, CheckElections} {
		if ok, err := check(ops, 10*time.Second, ""); !ok || err != nil {
			t.Errorf("check = %v, %v; want true, nil", ok, err)
		}
	}
	// A deposed leader's proclaim fails the election model only.
	bad := mkHistory(append(slices.Clone(ops), mkCampaign(2, 80, 90, OK, 12, 2, "c"), mkProclaim(1, 9, "x", 100, 110, OK, 1))...)
	if ok, err := CheckLinearizable(bad, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckLinearizable = %v, %v; want true, nil", ok, err)
	}
	if ok, err := CheckElections(bad, 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckElections = %v, %v; want false, nil", ok, err)
	}
}

func TestCheckElections_WritesVisualisationWhenIllegal(t *testing.T) {
	html := filepath.Join(t.TempDir(), "elections.html")
	ok, err := CheckElections(mkHistory(
		mkCampaign(0, 0, 10, OK, 5, 1, "a"),
		mkCampaign(1, 20, 30, OK, 9, 1, "b"),
	), 10*time.Second, html)
	if err != nil || ok {
		t.Fatalf("CheckElections = %v, %v; want false, nil", ok, err)
	}
	assertFileHas(t, html, "<html", "campaign c1 b → 9 t1", "leader 5 a term 1 last 5")
}

func TestCheckElectionAudit(t *testing.T) {
	ops := mkHistory(
		mkCampaign(0, 0, 10, OK, 5, 1, "a"),
		mkProclaim(0, 5, "a2", 20, 30, OK, 1),
		mkResign(0, 5, 40, 50, OK),
		mkCampaign(1, 60, 70, OK, 9, 2, "b"), // expires
		mkCampaign(2, 80, 90, Unknown, 0, 0, "c"),
		mkProclaim(2, 12, "c2", 100, 110, Unknown, 0), // never took effect
		mkCampaign(3, 80, 90, Rejected, 0, 0, "d"),
	)
	ev := func(typ, owner string, token, term int64, value string) AuditEvent {
		e := AuditEvent{Type: typ, Kind: "election", Name: "e", Owner: owner, Token: token, Term: term}
		if value != "" {
			e.Value = []byte(`"` + value + `"`)
		}
		return e
	}
	trail := []AuditEvent{
		ev("elected", "c0", 5, 1, "a"),
		ev("proclaimed", "c0", 5, 1, "a2"),
		ev("resigned", "c0", 5, 1, ""),
		ev("elected", "c1", 9, 2, "b"),
		ev("expired", "c1", 9, 2, ""),
		ev("elected", "c2", 12, 3, "c"), // the Unknown campaign took effect
		ev("revoked", "c2", 12, 3, ""),
		{Type: "acquired", Kind: "lock", Lock: "e", Owner: "x", Token: 14}, // a lock's, not this check's
	}
	without, with, replaced := trailEdits(trail)
	tests := []auditCase{
		{"the trail matches the ops", trail, nil},
		{"a campaign's elected event is missing", slices.Delete(without(3), 3, 4), []string{
			"campaign op 3: election \"e\" token 9 has no elected event",
			"elected event 2 (token 12) has term 3, want 2",
		}},
		{"an elected event is duplicated", with(ev("elected", "c1", 9, 2, "b")), []string{
			"election \"e\" token 9: 2 elected events",
			"elected event 4 (token 9) has term 2, want 4",
			"term 2's token 9 is not above term 3's token 12",
		}},
		{"a term is skipped", replaced(3, ev("elected", "c1", 9, 3, "b")), []string{
			"elected event 2 (token 9) has term 3, want 2",
			"campaign op 3: election \"e\" token 9 answered term 2, but the audit says 3",
		}},
		{"a resignation is missing", without(2), []string{
			"election \"e\" token 5: elected but never ended",
			"resign op 2: election \"e\" token 5 has no resigned event (ends: none)",
		}},
		{"a leadership ends twice", with(ev("expired", "c0", 5, 1, "")), []string{
			"election \"e\" token 5: 2 end events (resigned, expired)",
		}},
		{"a proclaim is recorded twice", with(ev("proclaimed", "c0", 5, 1, "a2")), []string{
			"proclaim op 1: election \"e\" token 5 value a2 has 2 proclaimed events, want 1",
		}},
		{"a proclaim is missing", without(1), []string{
			"proclaim op 1: election \"e\" token 5 value a2 has 0 proclaimed events, want 1",
		}},
		{"a value nobody proclaimed", with(ev("proclaimed", "c1", 9, 2, "zz")), []string{
			"election \"e\" token 9: proclaimed zz, which no proclaim sent",
		}},
		{"the audit names another candidate and value", replaced(0, ev("elected", "c9", 5, 1, "q")), []string{
			"won by \"c0\", but the audit says \"c9\"",
			"campaigned with a, but the audit says q",
		}},
		{"a refused campaign's candidate is elected", with(ev("elected", "c3", 20, 4, "d"), ev("expired", "c3", 20, 4, "")), []string{
			"campaign op 6 (client 3, node 0) was refused",
		}},
		{"a leadership no campaign explains", with(ev("elected", "c7", 20, 4, "d"), ev("expired", "c7", 20, 4, "")), []string{
			"election \"e\": 2 elected events (tokens [12 20]) match no campaign OK, but only 1 campaigns were Unknown",
		}},
	}
	checkAudits(t, CheckElectionAudit, ops, tests)
}

func TestResolveCampaigns(t *testing.T) {
	ops := mkHistory(
		mkCampaign(0, 0, 10, OK, 5, 1, "a"),
		mkCampaign(1, 20, 30, Unknown, 0, 0, "b"), // won, as the trail says
		mkCampaign(2, 20, 30, Unknown, 0, 0, "c"), // never won
		mkCampaign(3, 20, 30, Unknown, 0, 0, "d"),
		mkCampaign(3, 40, 50, Rejected, 0, 0, "d"), // c3 campaigned twice: left alone
		mkLeader(4, 60, 70, OK, 9, 2, "b"),
	)
	events := []AuditEvent{
		{Type: "elected", Kind: "election", Name: "e", Owner: "c0", Token: 5, Term: 1, Value: []byte(`"a"`)},
		{Type: "elected", Kind: "election", Name: "e", Owner: "c1", Token: 9, Term: 2, Value: []byte(`"b"`)},
		{Type: "elected", Kind: "election", Name: "e", Owner: "c3", Token: 12, Term: 3, Value: []byte(`"d"`)},
	}
	got := ResolveCampaigns(ops, events)
	if b := got[1]; b.Result != OK || b.OutToken != 9 || b.OutTerm != 2 || b.OutValue != "b" || b.Return != 71 {
		t.Errorf("the campaign that won: %+v; want OK, token 9, term 2, value b, pending past the last return", b)
	}
	if c := got[2]; c.Result != Failed {
		t.Errorf("the campaign that never won: %s; want failed", c.Result)
	}
	if d := got[3]; d.Result != Unknown {
		t.Errorf("a campaign whose candidate campaigned twice: %s; want it left Unknown", d.Result)
	}
	if ops[1].Result != Unknown {
		t.Error("ResolveCampaigns changed its argument")
	}
	if ok, err := CheckElections(got, 10*time.Second, ""); !ok || err != nil {
		t.Errorf("CheckElections of the resolved history = %v, %v; want true, nil", ok, err)
	}
	// The trail's term for the campaign that won contradicts the read.
	events[1].Term = 3
	if ok, err := CheckElections(ResolveCampaigns(ops, events), 10*time.Second, ""); ok || err != nil {
		t.Errorf("CheckElections with the term the trail gives = %v, %v; want false, nil", ok, err)
	}
}

// Leaderships and holds share one sequence of tokens.
func TestCheckTokenOrder_SpansLocksAndElections(t *testing.T) {
	assertProblems(t, CheckTokenOrder(mkHistory(
		mkAcquire(0, "e", 0, 10, OK, 5),
		mkCampaign(1, 20, 30, OK, 9, 1, "a"),
		mkAcquire(2, "f", 40, 50, OK, 7),
		mkCampaign(3, 0, 60, OK, 9, 1, "b"),
	)), []string{
		"campaign op 1 (election \"e\") returned token 9 at 30ns, but acquire op 2 (lock \"f\") called later at 40ns got token 7",
		"election \"e\": token 9 granted twice: op 1 (client 1) and op 3 (client 3)",
	})
}

// CheckAudit is the locks': an election's events, whatever they say, are
// not its business.
func TestCheckAudit_LeavesElectionsOut(t *testing.T) {
	ops := mkHistory(mkAcquire(0, "e", 0, 10, OK, 5), mkCampaign(1, 0, 10, OK, 9, 1, "a"))
	events := []AuditEvent{
		{Type: "acquired", Kind: "lock", Lock: "e", Owner: "c0", Token: 5},
		{Type: "expired", Kind: "lock", Lock: "e", Owner: "c0", Token: 5},
		{Type: "elected", Kind: "election", Name: "e", Owner: "c1", Token: 9, Term: 1},
		{Type: "resigned", Kind: "election", Name: "e", Owner: "c1", Token: 9, Term: 1},
		{Type: "expired", Kind: "election", Name: "e", Owner: "c1", Token: 9, Term: 1},
	}
	assertProblems(t, CheckAudit(ops, events), nil)
}
