package cli_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// permitToken takes a permit of the semaphore name over HTTP and returns
// its token.
func permitToken(t *testing.T, addr, name, body string) int64 {
	t.Helper()
	return holdToken(t, addr, "/v1/semaphores/"+name, body)
}

// TestExecPermits_RunsUnderAPermitAndGivesItBack: the command sees the
// semaphore, its permit's token and the limit, its exit code is exec's,
// and the permit is given back; a full semaphore exits 3 naming the
// holders, another limit 2 naming the semaphore's.
func TestExecPermits_RunsUnderAPermitAndGivesItBack(t *testing.T) {
	_, addr := startServer(t)
	other := permitToken(t, addr, "jobs", `{"limit":2,"owner":"other","ttl":"1m"}`)
	out, errs, code := run(t, addr, "exec", "--permits", "2", "jobs", "--", "sh", "-c",
		`echo "$BATON_SEMAPHORE $BATON_TOKEN $BATON_LIMIT"; exit 7`)
	if code != 7 {
		t.Fatalf("exit code %d (stderr %q), want the command's 7", code, errs)
	}
	f := strings.Fields(out)
	if len(f) != 3 || f[0] != "jobs" || f[2] != "2" {
		t.Fatalf("command saw %q, want BATON_SEMAPHORE, BATON_TOKEN and BATON_LIMIT 2", out)
	}
	if tok, err := strconv.ParseInt(f[1], 10, 64); err != nil || tok <= other {
		t.Fatalf("BATON_TOKEN %q, want a token after the other permit's %d", f[1], other)
	}
	out, errs, code = run(t, addr, "status", "--semaphore", "jobs", "-o", "json")
	var s struct {
		Limit   int `json:"limit"`
		Holders []struct {
			Owner string `json:"owner"`
			Token int64  `json:"token"`
		} `json:"holders"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Limit != 2 || len(s.Holders) != 1 || s.Holders[0].Token != other {
		t.Fatalf("status --semaphore -o json after the command: code %d, %q (stderr %q); want only the other permit", code, out, errs)
	}

	permitToken(t, addr, "jobs", `{"limit":2,"owner":"third","ttl":"1m"}`)
	_, errs, code = run(t, addr, "exec", "--permits", "2", "jobs", "--", "true")
	if code != 3 || !strings.Contains(errs, `"other"`) || !strings.Contains(errs, `"third"`) {
		t.Fatalf("exec on a full semaphore: code %d, stderr %q; want 3 naming both holders", code, errs)
	}
	out, _, code = run(t, addr, "exec", "--permits", "2", "jobs", "-o", "json", "--", "true")
	if code != 3 || strings.Count(out, `"owner"`) != 2 || !strings.Contains(out, `"semaphore_full"`) {
		t.Fatalf("exec -o json on a full semaphore: code %d, %q; want the problem with its two holders", code, out)
	}
	_, errs, code = run(t, addr, "exec", "--permits", "5", "jobs", "--", "true")
	if code != 2 || !strings.Contains(errs, "--permits 2") {
		t.Fatalf("exec under another limit: code %d, stderr %q; want 2 naming limit 2", code, errs)
	}
	if _, errs, code := run(t, addr, "exec", "--permits", "2", "--lock-delay", "1s", "jobs", "--", "true"); code != 2 {
		t.Fatalf("exec --permits --lock-delay: code %d (stderr %q), want 2", code, errs)
	}
}

// TestSemaphore_StatusListRevokeAndHistory: the operator's view of a
// semaphore, and its end of a permit by token, recorded in the trail.
func TestSemaphore_StatusListRevokeAndHistory(t *testing.T) {
	_, addr := startServer(t)
	a := permitToken(t, addr, "pool", `{"limit":3,"owner":"a","ttl":"1m"}`)
	permitToken(t, addr, "pool", `{"limit":3,"owner":"b","ttl":"1m"}`)
	if out, errs, code := run(t, addr, "status", "--semaphore", "pool"); code != 0 || !strings.Contains(out, "2 of 3") ||
		!strings.Contains(out, fmt.Sprintf("permit %d", a)) {
		t.Fatalf("status --semaphore: code %d, %q (stderr %q)", code, out, errs)
	}
	if _, _, code := run(t, addr, "status", "--semaphore", "idle"); code != 4 {
		t.Fatalf("status --semaphore of an idle semaphore: code %d, want 4", code)
	}
	if out, errs, code := run(t, addr, "list", "--semaphores"); code != 0 || !strings.Contains(out, "pool") || !strings.Contains(out, "2/3") ||
		!strings.Contains(out, fmt.Sprintf("a (%d)", a)) {
		t.Fatalf("list --semaphores: code %d, %q (stderr %q)", code, out, errs)
	}
	revokeByToken(t, addr, "semaphore", "pool", "permit", a)
	if _, _, code := run(t, addr, "history", "--semaphore", "pool", "--election", "x"); code != 2 {
		t.Fatalf("history with --semaphore and --election: code %d, want 2", code)
	}

	var sess struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(post(t, addr, "/v1/sessions", `{"owner":"node","ttl":"1m"}`, 201), &sess); err != nil {
		t.Fatal(err)
	}
	permitToken(t, addr, "pool", `{"limit":3,"session":"`+sess.ID+`"}`)
	if out, errs, code := run(t, addr, "sessions", "get", sess.ID); code != 0 || !strings.Contains(out, "semaphores") || !strings.Contains(out, "pool") {
		t.Fatalf("sessions get: code %d, %q (stderr %q); want its semaphores", code, out, errs)
	}
	out, _, code := run(t, addr, "sessions", "get", sess.ID, "-o", "json")
	var got struct {
		Semaphores []string `json:"semaphores"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Semaphores) != 1 || got.Semaphores[0] != "pool" {
		t.Fatalf("sessions get -o json: code %d, %q; want semaphores [pool]", code, out)
	}
}

// TestWatchSemaphore_StreamsThatSemaphoresEventsOnly: watch --semaphore
// shows the semaphore's permits' events as they happen, and no others.
func TestWatchSemaphore_StreamsThatSemaphoresEventsOnly(t *testing.T) {
	_, addr := startServer(t)
	lines, _ := startWatch(t, addr, "--semaphore", "pool")
	permitToken(t, addr, "other", `{"limit":2,"owner":"x","ttl":"1m"}`)
	tok := permitToken(t, addr, "pool", `{"limit":2,"owner":"w","ttl":"1m"}`)
	if !lines.Scan() {
		t.Fatalf("no event: %v", lines.Err())
	}
	f := strings.Fields(lines.Text())
	if len(f) < 6 || f[2] != "acquired" || f[3] != "semaphore:pool" || f[4] != "w" || f[5] != strconv.FormatInt(tok, 10) {
		t.Fatalf("watch --semaphore pool showed %q first; want pool's permit %d acquired by w, and nothing of other", lines.Text(), tok)
	}
}

// TestExecPermits_ARevokeStopsTheCommandWithinASecond: with a 30 s TTL the
// next renew is 10 s away; an operator who revokes the permit expects the
// job to stop now.
func TestExecPermits_ARevokeStopsTheCommandWithinASecond(t *testing.T) {
	_, addr := startServer(t)
	errs := revokeStopsTheCommand(t, addr, []string{"exec", "--permits", "3", "--ttl", "30s", "--kill-after", "5s", "job"}, func(tok string) {
		post(t, addr, "/v1/semaphores/job/revoke", `{"token":`+tok+`,"reason":"maintenance"}`, 204)
	})
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `permit of "job"`) || !strings.Contains(lines[0], "revoked") ||
		!strings.Contains(lines[0], "maintenance") || strings.Count(lines[1], "lost") != 1 {
		t.Errorf("stderr %q; want a line naming the permit's revoke and its reason, then a one-line summary", errs)
	}
}
