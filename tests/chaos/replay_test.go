package chaos

import (
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
	"github.com/baton-dev/baton/tests/chaos/check/kvcheck"
	"github.com/baton-dev/baton/tests/chaos/check/scopecheck"
	"github.com/baton-dev/baton/tests/chaos/check/windowcheck"
)

var flagReplay = flag.String("chaos.replay", "", "a run's folder (history.json, audit.json): check it again instead of running anything")

// TestReplay checks a run's saved history again, with every checker that
// reads only the history and the trail, and, for a partition a model
// finds illegal, logs the shortest prefix (in call order) that is already
// illegal, ending at the op that cannot be linearized.
func TestReplay(t *testing.T) {
	if *flagReplay == "" {
		t.Skip("replays a saved run given by -chaos.replay")
	}
	var ops []check.Op
	readJSON(t, filepath.Join(*flagReplay, "history.json"), &ops)
	t.Logf("history: %s", check.Summarize(ops))
	var events []check.AuditEvent
	if _, err := os.Stat(filepath.Join(*flagReplay, "audit.json")); err == nil {
		var all []check.AuditEvent
		readJSON(t, filepath.Join(*flagReplay, "audit.json"), &all)
		replayScope(t, all)
		events = scopecheck.Without(all, narrowPrefix, sharedPrefix)
		for _, v := range windowcheck.CheckWindows(ops, events) {
			t.Error("at-least windows:", v)
		}
		for _, v := range check.CheckAudit(ops, events) {
			t.Error("audit:", v)
		}
		for _, v := range check.CheckElectionAudit(ops, events) {
			t.Error("election audit:", v)
		}
		for _, v := range check.CheckSemaphoreAudit(ops, events) {
			t.Error("semaphore audit:", v)
		}
		for _, v := range check.CheckRWLockAudit(ops, events) {
			t.Error("rwlock audit:", v)
		}
		for _, v := range check.CheckLockSetAudit(ops, events) {
			t.Error("lock set audit:", v)
		}
		for _, v := range kvcheck.CheckKeyAudit(ops, events) {
			t.Error("key audit:", v)
		}
	}
	for _, v := range check.CheckTokenOrder(ops) {
		t.Error("token order:", v)
	}
	for _, v := range check.CheckFencedOrder(ops) {
		t.Error("fenced order:", v)
	}
	for _, v := range kvcheck.CheckKeyOrder(ops) {
		t.Error("key order:", v)
	}
	checks := []struct {
		name  string
		check func([]check.Op, time.Duration, string) (bool, error)
	}{{"linearizability-replay.html", check.CheckLinearizable}, {"elections-replay.html", func(ops []check.Op, timeout time.Duration, html string) (bool, error) {
		return check.CheckElections(check.ResolveCampaigns(ops, events), timeout, html)
	}}, {"semaphores-replay.html", func(ops []check.Op, timeout time.Duration, html string) (bool, error) {
		return check.CheckSemaphores(check.ResolvePermits(ops, events), timeout, html)
	}}, {"rwlocks-replay.html", func(ops []check.Op, timeout time.Duration, html string) (bool, error) {
		return check.CheckRWLocks(check.ResolveRWLocks(ops, events), timeout, html)
	}}, {"locksets-replay.html", func(ops []check.Op, timeout time.Duration, html string) (bool, error) {
		return check.CheckLockSets(check.ResolveLockSets(ops, events), timeout, html)
	}}, {"keys-replay.html", func(ops []check.Op, timeout time.Duration, html string) (bool, error) {
		return kvcheck.CheckKeys(ops, kvcheck.ResolveKeys(events), timeout, html)
	}}}
	for _, c := range checks {
		html := filepath.Join(*flagReplay, c.name)
		ok, err := c.check(ops, 5*time.Minute, html)
		if err != nil || ok {
			if err != nil {
				t.Error(err)
			}
			continue
		}
		t.Errorf("not linearizable; porcupine's visualisation: %s", html)
		logIllegalPrefixes(t, ops, c.check)
	}
}

// logIllegalPrefixes logs, for each lock, election (…) or lock set pool
// whose ops checker rejects, the last ops of its shortest illegal prefix.
func logIllegalPrefixes(t *testing.T, ops []check.Op, checker func([]check.Op, time.Duration, string) (bool, error)) {
	byName := map[string][]check.Op{}
	for _, op := range ops {
		name := op.Name()
		if op.OnLockSet() {
			name = op.Pool // a set couples the pool's locks
		}
		byName[name] = append(byName[name], op)
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		part := byName[name]
		if ok, _ := checker(part, time.Minute, ""); ok {
			continue
		}
		slices.SortStableFunc(part, func(a, b check.Op) int { return int(a.Call - b.Call) })
		lo, hi := 1, len(part)
		for lo < hi {
			mid := (lo + hi) / 2
			if ok, _ := checker(part[:mid], time.Minute, ""); ok {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		t.Logf("%s: the first %d ops (in call order) are already illegal; the last of them:", name, lo)
		for _, op := range part[max(0, lo-30):lo] {
			t.Logf("  [%.3fs, %.3fs] %s (%s)", float64(op.Call)/1e9, float64(op.Return)/1e9, check.DescribeOp(op), check.DescribeOpDetail(op))
		}
	}
}

// replayScope checks the narrow clients' requests (scope.json) again,
// if the run had them.
func replayScope(t *testing.T, all []check.AuditEvent) {
	if _, err := os.Stat(filepath.Join(*flagReplay, "scope.json")); err != nil {
		return
	}
	var reqs []scopecheck.Request
	readJSON(t, filepath.Join(*flagReplay, "scope.json"), &reqs)
	for _, p := range scopecheck.Check(reqs, all, scopecheck.Config{Credential: narrowCredential, Rules: narrowRules}).Problems {
		t.Error("scope:", p)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
