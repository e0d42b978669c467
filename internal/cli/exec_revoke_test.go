package cli_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
)

// TestExec_ARevokeStopsTheCommandWithinASecond: with a 30 s TTL the next
// renew is 10 s away; an operator who revokes expects the job to stop now.
func TestExec_ARevokeStopsTheCommandWithinASecond(t *testing.T) {
	_, addr := startServer(t)
	dir := t.TempDir()
	running, termed := filepath.Join(dir, "running"), filepath.Join(dir, "termed")
	script := fmt.Sprintf(`trap 'touch %s; exit 0' TERM; touch %s; while :; do sleep 0.05; done`, termed, running)
	type result struct {
		errs string
		code int
	}
	done := make(chan result, 1)
	go func() {
		_, e, c := run(t, addr, "exec", "--ttl", "30s", "--kill-after", "5s", "job", "--", "sh", "-c", script)
		done <- result{e, c}
	}()
	poll.Until(t, 20*time.Second, "the command to run", func() bool { _, err := os.Stat(running); return err == nil })
	sent := time.Now()
	resp, err := http.Post(addr+"/v1/locks/job/revoke", "application/json", strings.NewReader(`{"reason":"maintenance"}`))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("revoke: %v %v", err, resp)
	}
	resp.Body.Close()
	poll.Until(t, 20*time.Second, "the command to get SIGTERM", func() bool { _, err := os.Stat(termed); return err == nil })
	took := time.Since(sent)
	t.Logf("revoke → the command's SIGTERM handler: %s", took)
	if took > time.Second {
		t.Errorf("the command got SIGTERM %s after the revoke, want within 1 s", took)
	}
	r := <-done
	if r.code != 10 {
		t.Fatalf("exit %d, stderr %q; want 10", r.code, r.errs)
	}
	t.Logf("stderr:\n%s", r.errs)
	// One line when the lock is lost, one when exec exits: each names the
	// lock and how it was lost once.
	lines := strings.Split(strings.TrimSpace(r.errs), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `lock "job"`) || !strings.Contains(lines[0], "revoked") ||
		!strings.Contains(lines[0], "maintenance") || strings.Contains(r.errs, "renew") || strings.Count(lines[1], "lost") != 1 {
		t.Errorf("stderr %q; want a line naming the revoke and its reason, then a one-line summary", r.errs)
	}
}
