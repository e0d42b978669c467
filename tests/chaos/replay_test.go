package chaos

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
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
	var ops []Op
	readJSON(t, filepath.Join(*flagReplay, "history.json"), &ops)
	t.Logf("history: %s", Summarize(ops))
	var events []AuditEvent
	if _, err := os.Stat(filepath.Join(*flagReplay, "audit.json")); err == nil {
		readJSON(t, filepath.Join(*flagReplay, "audit.json"), &events)
		for _, v := range CheckAudit(ops, events) {
			t.Error("audit:", v)
		}
		for _, v := range CheckElectionAudit(ops, events) {
			t.Error("election audit:", v)
		}
		for _, v := range CheckSemaphoreAudit(ops, events) {
			t.Error("semaphore audit:", v)
		}
		for _, v := range CheckRWLockAudit(ops, events) {
			t.Error("rwlock audit:", v)
		}
		for _, v := range CheckLockSetAudit(ops, events) {
			t.Error("lock set audit:", v)
		}
	}
	for _, v := range CheckTokenOrder(ops) {
		t.Error("token order:", v)
	}
	for _, v := range CheckFencedOrder(ops) {
		t.Error("fenced order:", v)
	}
	checks := []struct {
		name  string
		check func([]Op, time.Duration, string) (bool, error)
	}{{"linearizability-replay.html", CheckLinearizable}, {"elections-replay.html", func(ops []Op, timeout time.Duration, html string) (bool, error) {
		return CheckElections(ResolveCampaigns(ops, events), timeout, html)
	}}, {"semaphores-replay.html", func(ops []Op, timeout time.Duration, html string) (bool, error) {
		return CheckSemaphores(ResolvePermits(ops, events), timeout, html)
	}}, {"rwlocks-replay.html", func(ops []Op, timeout time.Duration, html string) (bool, error) {
		return CheckRWLocks(ResolveRWLocks(ops, events), timeout, html)
	}}, {"locksets-replay.html", func(ops []Op, timeout time.Duration, html string) (bool, error) {
		return CheckLockSets(ResolveLockSets(ops, events), timeout, html)
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
// whose ops check rejects, the last ops of its shortest illegal prefix.
func logIllegalPrefixes(t *testing.T, ops []Op, check func([]Op, time.Duration, string) (bool, error)) {
	byName := map[string][]Op{}
	for _, op := range ops {
		name := op.name()
		if op.onLockSet() {
			name = op.Pool // a set couples the pool's locks
		}
		byName[name] = append(byName[name], op)
	}
	for _, name := range sortedNames(byName) {
		part := byName[name]
		if ok, _ := check(part, time.Minute, ""); ok {
			continue
		}
		slices.SortStableFunc(part, func(a, b Op) int { return int(a.Call - b.Call) })
		lo, hi := 1, len(part)
		for lo < hi {
			mid := (lo + hi) / 2
			if ok, _ := check(part[:mid], time.Minute, ""); ok {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		t.Logf("%s: the first %d ops (in call order) are already illegal; the last of them:", name, lo)
		for _, op := range part[max(0, lo-30):lo] {
			t.Logf("  [%.3fs, %.3fs] %s (%s)", float64(op.Call)/1e9, float64(op.Return)/1e9, describeOp(op), describeOpDetail(op))
		}
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
