package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
)

// rwToken takes a hold of the read/write lock name over HTTP and returns
// its token.
func rwToken(t *testing.T, addr, name, body string) int64 {
	t.Helper()
	return holdToken(t, addr, "/v1/rwlocks/"+name, body)
}

// del sends DELETE path and fails the test unless it answers status.
func del(t *testing.T, addr, path string, status int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE %s: %v", path, err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != status {
		t.Fatalf("DELETE %s: %d %s, want %d", path, resp.StatusCode, b, status)
	}
}

// TestExecRW_RunsUnderAHoldAndEndsIt: a reader runs beside another
// reader, seeing the lock, its own token and its mode, and exec exits
// with its command's code; a writer is refused with code 3 naming the
// reader in the way, in text and in -o json; the flags that exclude each
// other are usage errors.
func TestExecRW_RunsUnderAHoldAndEndsIt(t *testing.T) {
	_, addr := startServer(t)
	other := rwToken(t, addr, "catalog", `{"mode":"read","owner":"other","ttl":"1m"}`)
	out, errs, code := run(t, addr, "exec", "--read", "catalog", "--", "sh", "-c", `echo "$BATON_RWLOCK $BATON_TOKEN $BATON_MODE"; exit 7`)
	if code != 7 {
		t.Fatalf("exit code %d (stderr %q), want the command's 7", code, errs)
	}
	f := strings.Fields(out)
	if len(f) != 3 || f[0] != "catalog" || f[2] != "read" {
		t.Fatalf("command saw %q, want BATON_RWLOCK, BATON_TOKEN and BATON_MODE read", out)
	}
	if tok, err := strconv.ParseInt(f[1], 10, 64); err != nil || tok <= other {
		t.Fatalf("BATON_TOKEN %q, want a token after the other reader's %d", f[1], other)
	}
	out, errs, code = run(t, addr, "status", "--rwlock", "catalog", "-o", "json")
	var s struct {
		Mode    string `json:"mode"`
		Holders []struct {
			Token int64 `json:"token"`
		} `json:"holders"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Mode != "read" || len(s.Holders) != 1 || s.Holders[0].Token != other {
		t.Fatalf("status --rwlock -o json after the command: code %d, %q (stderr %q); want only the other reader", code, out, errs)
	}

	_, errs, code = run(t, addr, "exec", "--write", "catalog", "--", "true")
	if code != 3 || !strings.Contains(errs, `"other" (read, token `+strconv.FormatInt(other, 10)) {
		t.Fatalf("exec --write past a reader: code %d, stderr %q; want 3 naming the reader", code, errs)
	}
	out, _, code = run(t, addr, "exec", "--write", "catalog", "-o", "json", "--", "true")
	if code != 3 || strings.Count(out, `"owner"`) != 1 || !strings.Contains(out, `"lock_held"`) || !strings.Contains(out, `"mode": "read"`) {
		t.Fatalf("exec --write -o json past a reader: code %d, %q; want the problem with the reader", code, out)
	}
	for _, args := range [][]string{
		{"--read", "--write"}, {"--read", "--permits", "2"}, {"--write", "--lock-delay", "1s"},
	} {
		argv := append(append([]string{"exec"}, args...), "catalog", "--", "true")
		if _, errs, code := run(t, addr, argv...); code != 2 {
			t.Errorf("exec %v: code %d (stderr %q), want 2", args, code, errs)
		}
	}
}

// TestExecRW_AWriterRunsOnceTheReadersAreDone: exec --write --wait queues
// behind a reader and runs as soon as the reader ends, alone, with
// BATON_MODE write; status shows it waiting meanwhile, with its mode.
func TestExecRW_AWriterRunsOnceTheReadersAreDone(t *testing.T) {
	_, addr := startServer(t)
	r := rwToken(t, addr, "catalog", `{"mode":"read","owner":"r","ttl":"1m"}`)
	type result struct {
		out, errs string
		code      int
	}
	done := make(chan result, 1)
	go func() {
		o, e, c := run(t, addr, "exec", "--write", "--wait", "1m", "--owner", "rebuild", "catalog", "--", "sh", "-c", `echo "$BATON_MODE $BATON_TOKEN"`)
		done <- result{o, e, c}
	}()
	poll.Until(t, 20*time.Second, "the writer in line", func() bool {
		out, _, code := run(t, addr, "status", "--rwlock", "catalog")
		return code == 0 && strings.Contains(out, "rebuild, write")
	})
	del(t, addr, fmt.Sprintf("/v1/rwlocks/catalog?token=%d", r), 204)
	var res result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the writer did not run within 20 s of the reader's release")
	}
	f := strings.Fields(res.out)
	if res.code != 0 || len(f) != 2 || f[0] != "write" {
		t.Fatalf("writer: code %d, %q (stderr %q); want it run with BATON_MODE write", res.code, res.out, res.errs)
	}
	if tok, err := strconv.ParseInt(f[1], 10, 64); err != nil || tok <= r {
		t.Fatalf("writer's BATON_TOKEN %q, want one above the reader's %d", f[1], r)
	}
	if _, _, code := run(t, addr, "status", "--rwlock", "catalog"); code != 4 {
		t.Fatalf("status --rwlock after the writer: code %d, want 4 (its hold ended)", code)
	}
}

// TestRWLock_StatusListRevokeHistoryAndSessions: the operator's view of a
// read/write lock, its end of a hold by token, recorded in the trail, and
// a session naming its read/write locks and elections.
func TestRWLock_StatusListRevokeHistoryAndSessions(t *testing.T) {
	_, addr := startServer(t)
	a := rwToken(t, addr, "cat", `{"mode":"read","owner":"a","ttl":"1m"}`)
	rwToken(t, addr, "cat", `{"mode":"read","owner":"b","ttl":"1m"}`)
	if out, errs, code := run(t, addr, "status", "--rwlock", "cat"); code != 0 || !regexp.MustCompile(`(?m)^mode +read$`).MatchString(out) ||
		!strings.Contains(out, fmt.Sprintf("read %d", a)) {
		t.Fatalf("status --rwlock: code %d, %q (stderr %q)", code, out, errs)
	}
	if _, _, code := run(t, addr, "status", "--rwlock", "idle"); code != 4 {
		t.Fatalf("status --rwlock of an idle lock: code %d, want 4", code)
	}
	if _, _, code := run(t, addr, "status", "--rwlock", "--semaphore", "cat"); code != 2 {
		t.Fatalf("status --rwlock --semaphore: code %d, want 2", code)
	}
	if out, errs, code := run(t, addr, "list", "--rwlocks"); code != 0 || !strings.Contains(out, "cat") || !strings.Contains(out, "read") ||
		!strings.Contains(out, fmt.Sprintf("a (%d)", a)) {
		t.Fatalf("list --rwlocks: code %d, %q (stderr %q)", code, out, errs)
	}
	revokeByToken(t, addr, "rwlock", "cat", "hold", a)
	out, _, code := run(t, addr, "history", "--rwlock", "cat", "-o", "json")
	if code != 0 || strings.Count(out, `"mode": "read"`) != 3 {
		t.Fatalf("history --rwlock -o json: code %d, %q; want each event's mode", code, out)
	}
	for _, other := range []string{"--election", "--semaphore"} {
		if _, _, code := run(t, addr, "history", "--rwlock", "cat", other, "x"); code != 2 {
			t.Fatalf("history with --rwlock and %s: code %d, want 2", other, code)
		}
	}

	var sess struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(post(t, addr, "/v1/sessions", `{"owner":"node","ttl":"1m"}`, 201), &sess); err != nil {
		t.Fatal(err)
	}
	rwToken(t, addr, "cat", `{"mode":"read","session":"`+sess.ID+`"}`)
	post(t, addr, "/v1/elections/billing/campaign", `{"session":"`+sess.ID+`"}`, 201)
	if out, errs, code := run(t, addr, "sessions", "get", sess.ID); code != 0 || !strings.Contains(out, "rwlocks") || !strings.Contains(out, "cat") ||
		!strings.Contains(out, "elections") || !strings.Contains(out, "billing") {
		t.Fatalf("sessions get: code %d, %q (stderr %q); want its rwlocks and elections", code, out, errs)
	}
	out, _, code = run(t, addr, "sessions", "get", sess.ID, "-o", "json")
	var got struct {
		RWLocks   []string `json:"rwlocks"`
		Elections []string `json:"elections"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.RWLocks) != 1 || got.RWLocks[0] != "cat" ||
		len(got.Elections) != 1 || got.Elections[0] != "billing" {
		t.Fatalf("sessions get -o json: code %d, %q; want rwlocks [cat] and elections [billing]", code, out)
	}
}

// TestWatchRWLock_StreamsThatLocksEventsOnly: watch --rwlock shows the
// read/write lock's holds' events as they happen, and no others.
func TestWatchRWLock_StreamsThatLocksEventsOnly(t *testing.T) {
	_, addr := startServer(t)
	lines, _ := startWatch(t, addr, "--rwlock", "cat")
	rwToken(t, addr, "other", `{"mode":"write","owner":"x","ttl":"1m"}`)
	tok := rwToken(t, addr, "cat", `{"mode":"write","owner":"w","ttl":"1m"}`)
	if !lines.Scan() {
		t.Fatalf("no event: %v", lines.Err())
	}
	f := strings.Fields(lines.Text())
	if len(f) < 6 || f[2] != "acquired" || f[3] != "rwlock:cat" || f[4] != "w" || f[5] != strconv.FormatInt(tok, 10) {
		t.Fatalf("watch --rwlock cat showed %q first; want cat's hold %d acquired by w, and nothing of other", lines.Text(), tok)
	}
}

// TestExecRW_ARevokeStopsTheCommandWithinASecond: with a 30 s TTL the
// next renew is 10 s away; an operator who revokes the write hold expects
// the job to stop now.
func TestExecRW_ARevokeStopsTheCommandWithinASecond(t *testing.T) {
	_, addr := startServer(t)
	errs := revokeStopsTheCommand(t, addr, []string{"exec", "--write", "--ttl", "30s", "--kill-after", "5s", "job"}, func(tok string) {
		post(t, addr, "/v1/rwlocks/job/revoke", `{"token":`+tok+`,"reason":"maintenance"}`, 204)
	})
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `hold of rwlock "job"`) || !strings.Contains(lines[0], "revoked") ||
		!strings.Contains(lines[0], "maintenance") || strings.Count(lines[1], "lost") != 1 {
		t.Errorf("stderr %q; want a line naming the hold's revoke and its reason, then a one-line summary", errs)
	}
}
