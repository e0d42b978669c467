package cli_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestExec_ARevokeStopsTheCommandWithinASecond: with a 30 s TTL the next
// renew is 10 s away; an operator who revokes expects the job to stop now.
func TestExec_ARevokeStopsTheCommandWithinASecond(t *testing.T) {
	_, addr := startServer(t)
	errs := revokeStopsTheCommand(t, addr, []string{"exec", "--ttl", "30s", "--kill-after", "5s", "job"}, func(string) {
		resp, err := http.Post(addr+"/v1/locks/job/revoke", "application/json", strings.NewReader(`{"reason":"maintenance"}`))
		if err != nil || resp.StatusCode != 204 {
			t.Fatalf("revoke: %v %v", err, resp)
		}
		resp.Body.Close()
	})
	// One line when the lock is lost, one when exec exits: each names the
	// lock and how it was lost once.
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `lock "job"`) || !strings.Contains(lines[0], "revoked") ||
		!strings.Contains(lines[0], "maintenance") || strings.Contains(errs, "renew") || strings.Count(lines[1], "lost") != 1 {
		t.Errorf("stderr %q; want a line naming the revoke and its reason, then a one-line summary", errs)
	}
}
