package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
)

// lockOf reads the lock name over HTTP: its token and its set.
func lockOf(t *testing.T, addr, name string) (token int64, set []string) {
	t.Helper()
	resp, err := http.Get(addr + "/v1/locks/" + name)
	if err != nil {
		t.Fatalf("GET %s: %v", name, err)
	}
	defer resp.Body.Close()
	var l struct {
		Token int64    `json:"token"`
		Set   []string `json:"set"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&l) != nil {
		t.Fatalf("GET %s: %d, want the lock", name, resp.StatusCode)
	}
	return l.Token, l.Set
}

// TestExecSet_SeveralNamesRunTheCommandUnderOneLockSet: with two names,
// the command runs while both locks are held with one token, which it
// gets as BATON_TOKEN beside BATON_LOCKS; exec exits with its code, and
// the set is released with it.
func TestExecSet_SeveralNamesRunTheCommandUnderOneLockSet(t *testing.T) {
	_, addr := startServer(t)
	dir := t.TempDir()
	running, proceed := filepath.Join(dir, "running"), filepath.Join(dir, "go")
	script := fmt.Sprintf(`echo "$BATON_LOCKS $BATON_TOKEN" > %[1]s.tmp; mv %[1]s.tmp %[1]s; while [ ! -e %[2]s ]; do sleep 0.05; done; exit 7`, running, proceed)
	type result struct {
		errs string
		code int
	}
	done := make(chan result, 1)
	go func() {
		_, e, c := run(t, addr, "exec", "--ttl", "30s", "acct-1", "acct-2", "--", "sh", "-c", script)
		done <- result{e, c}
	}()
	var saw []string
	poll.Until(t, 20*time.Second, "the command to run", func() bool {
		b, err := os.ReadFile(running)
		saw = strings.Fields(string(b))
		return err == nil && len(saw) > 0
	})
	if len(saw) != 2 || saw[0] != "acct-1,acct-2" {
		t.Fatalf("command saw %q, want BATON_LOCKS acct-1,acct-2 and BATON_TOKEN", saw)
	}
	tok, err := strconv.ParseInt(saw[1], 10, 64)
	if err != nil || tok <= 0 {
		t.Fatalf("BATON_TOKEN %q", saw[1])
	}
	for _, n := range []string{"acct-1", "acct-2"} {
		if got, set := lockOf(t, addr, n); got != tok || !slices.Equal(set, []string{"acct-1", "acct-2"}) {
			t.Errorf("%s while the command runs: token %d, set %q; want BATON_TOKEN %d and both names", n, got, set, tok)
		}
	}
	if err := os.WriteFile(proceed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 7 {
		t.Fatalf("exit code %d (stderr %q), want the command's 7", r.code, r.errs)
	}
	for _, n := range []string{"acct-1", "acct-2"} {
		if held(addr, n) {
			t.Errorf("%s still held after the command exited", n)
		}
	}
}

// TestExecSet_AHeldLockExits3TakingNothingAndRunningNothing: one lock of
// the set held, exec without --wait exits with lock_held's code, naming
// the holder, and takes none of the others.
func TestExecSet_AHeldLockExits3TakingNothingAndRunningNothing(t *testing.T) {
	_, addr := startServer(t)
	if _, errs, code := run(t, addr, "acquire", "acct-2", "--owner", "other", "--ttl", "1m"); code != 0 {
		t.Fatalf("acquire: code %d, %s", code, errs)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	_, errs, code := run(t, addr, "exec", "acct-1", "acct-2", "--", "touch", marker)
	if code != 3 || !strings.Contains(errs, `acct-2 is held by "other"`) {
		t.Fatalf("code %d, stderr %q; want 3 naming acct-2's holder", code, errs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran without the set")
	}
	out, _, code := run(t, addr, "exec", "-o", "json", "acct-1", "acct-2", "--", "touch", marker)
	var p struct {
		Code    string `json:"code"`
		Holders []struct {
			Name  string  `json:"name"`
			Owner string  `json:"owner"`
			Mode  *string `json:"mode"`
		} `json:"holders"`
	}
	if code != 3 || json.Unmarshal([]byte(out), &p) != nil || p.Code != "lock_held" || len(p.Holders) != 1 || p.Holders[0].Name != "acct-2" || p.Holders[0].Owner != "other" || p.Holders[0].Mode != nil {
		t.Fatalf("exec -o json: code %d, %q; want lock_held with acct-2's holder, a lock's (no mode)", code, out)
	}
	if held(addr, "acct-1") {
		t.Fatal("acct-1 is held: the refused set took a lock")
	}
}

// TestExecSet_OneNameFlagsAreUsageErrors: a semaphore's, a read/write
// lock's and lock-delay take one NAME.
func TestExecSet_OneNameFlagsAreUsageErrors(t *testing.T) {
	_, addr := startServer(t)
	for _, args := range [][]string{{"--permits", "2"}, {"--read"}, {"--write"}, {"--lock-delay", "1s"}} {
		argv := append(append([]string{"exec"}, args...), "acct-1", "acct-2", "--", "true")
		if _, errs, code := run(t, addr, argv...); code != 2 || !strings.Contains(errs, "lock set") {
			t.Errorf("exec %v with two names: code %d (stderr %q), want 2 saying why", args, code, errs)
		}
	}
	if _, errs, code := run(t, addr, "exec", "acct-1", "acct-2", "--"); code != 2 {
		t.Errorf("exec without a command: code %d (stderr %q), want 2", code, errs)
	}
	if held(addr, "acct-1") || held(addr, "acct-2") {
		t.Error("a refused exec took a lock")
	}
}

// TestExecSet_ARevokeOfOneLockStopsTheCommandWithinASecond: revoking one
// lock ends the set, and the command stops now, not at the next renew.
func TestExecSet_ARevokeOfOneLockStopsTheCommandWithinASecond(t *testing.T) {
	_, addr := startServer(t)
	errs := revokeStopsTheCommand(t, addr, []string{"exec", "--ttl", "30s", "--kill-after", "5s", "acct-1", "acct-2"}, func(string) {
		post(t, addr, "/v1/locks/acct-2/revoke", `{"reason":"maintenance"}`, 204)
	})
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `lock set "acct-1,acct-2"`) || !strings.Contains(lines[0], `lock "acct-2" revoked`) ||
		!strings.Contains(lines[0], "maintenance") || strings.Count(lines[1], "lost") != 1 {
		t.Errorf("stderr %q; want a line naming the set, the revoked lock and the reason, then a one-line summary", errs)
	}
	if held(addr, "acct-1") {
		t.Error("acct-1 still held after exec exited")
	}
}
