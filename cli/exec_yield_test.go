package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
)

// TestExec_OnYieldSignalsTheCommandWhenAskedToYield: "baton yield NAME"
// reaches the command of "baton exec --on-yield USR1 NAME" as SIGUSR1
// well within a second; the command, which chose to stop, exits 0, exec
// with it, and the lock is released: the history has the request, then
// the release.
func TestExec_OnYieldSignalsTheCommandWhenAskedToYield(t *testing.T) {
	_, addr := startServer(t)
	dir := t.TempDir()
	running, yielded := filepath.Join(dir, "running"), filepath.Join(dir, "yielded")
	script := fmt.Sprintf(`trap 'touch %s; exit 0' USR1; touch %s; while :; do sleep 0.05; done`, yielded, running)
	type result struct {
		errs string
		code int
	}
	done := make(chan result, 1)
	go func() {
		_, e, c := run(t, addr, "exec", "--ttl", "30s", "--on-yield", "usr1", "job", "--", "sh", "-c", script)
		done <- result{e, c}
	}()
	poll.Until(t, 20*time.Second, "the command to run", func() bool { _, err := os.Stat(running); return err == nil })
	sent := time.Now()
	if out, errs, code := run(t, addr, "yield", "job", "--owner", "nightly-backup", "--reason", "backup window"); code != 0 || !strings.HasPrefix(out, "asked lock job to yield (token ") {
		t.Fatalf("yield: code %d, %q (stderr %q)", code, out, errs)
	}
	poll.Until(t, 20*time.Second, "the command to get SIGUSR1", func() bool { _, err := os.Stat(yielded); return err == nil })
	took := time.Since(sent)
	t.Logf("baton yield → the command's SIGUSR1 handler: %s", took)
	if took > time.Second {
		t.Errorf("the command got SIGUSR1 %s after the request, want well within 1 s", took)
	}
	r := <-done
	if r.code != 0 || !strings.Contains(r.errs, `nightly-backup asks lock "job"`) || !strings.Contains(r.errs, "backup window; sending sh SIGUSR1") {
		t.Fatalf("exec: exit %d, stderr %q; want 0 and a line naming who asked, why and the signal", r.code, r.errs)
	}
	out, errs, code := run(t, addr, "history", "--lock", "job")
	if code != 0 || !strings.Contains(out, "yield_requested") || !strings.Contains(out, "backup window") || strings.Index(out, "released") > strings.Index(out, "yield_requested") {
		t.Fatalf("history: code %d, %q (stderr %q); want the release after the request", code, out, errs)
	}
	if _, _, code := run(t, addr, "yield", "job"); code != 4 {
		t.Fatalf("yield to a free lock: code %d, want 4", code)
	}
	if _, _, code := run(t, addr, "exec", "--on-yield", "KILL", "job", "--", "true"); code != 2 {
		t.Fatalf("exec --on-yield KILL: code %d, want 2 (not a signal a command can choose to heed)", code)
	}
}
