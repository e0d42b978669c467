package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
)

// post sends body to addr+path and wants status back, returning the body.
func post(t *testing.T, addr, path, body string, status int) []byte {
	t.Helper()
	resp, err := http.Post(addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, b, status)
	}
	return b
}

// TestElect_RunsTheCommandWhileLeadingAndResigns: the command sees the
// election, its token and its term, its exit code is elect's, and the
// leadership ends with it; with someone leading, elect fails at once.
func TestElect_RunsTheCommandWhileLeadingAndResigns(t *testing.T) {
	_, addr := startServer(t)
	out, errs, code := run(t, addr, "elect", "--value", `{"addr":"a:1"}`, "billing", "--", "sh", "-c",
		`echo "$BATON_ELECTION $BATON_TOKEN $BATON_TERM"; exit 7`)
	if code != 7 {
		t.Fatalf("exit code %d (stderr %q), want the command's 7", code, errs)
	}
	f := strings.Fields(out)
	if len(f) != 3 || f[0] != "billing" || f[2] != "1" {
		t.Fatalf("command saw %q, want BATON_ELECTION, BATON_TOKEN and BATON_TERM 1", out)
	}
	if tok, err := strconv.ParseInt(f[1], 10, 64); err != nil || tok <= 0 {
		t.Fatalf("BATON_TOKEN %q", f[1])
	}
	if _, _, code := run(t, addr, "leader", "billing"); code != 4 {
		t.Fatalf("leader after the command exited: code %d, want 4 (nobody leads)", code)
	}

	var leader struct {
		Token int64 `json:"token"`
	}
	if err := json.Unmarshal(post(t, addr, "/v1/elections/billing/campaign", `{"candidate":"other","ttl":"1m"}`, 201), &leader); err != nil {
		t.Fatal(err)
	}
	_, errs, code = run(t, addr, "elect", "billing", "--", "true")
	if code != 3 || !strings.Contains(errs, `"other"`) {
		t.Fatalf("elect against a leader: code %d, stderr %q; want 3 naming the leader", code, errs)
	}
	out, errs, code = run(t, addr, "leader", "billing", "-o", "json")
	var got struct {
		Candidate string `json:"candidate"`
		Token     int64  `json:"token"`
		Term      int64  `json:"term"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Candidate != "other" || got.Token != leader.Token || got.Term != 2 {
		t.Fatalf("leader -o json: code %d, %q (stderr %q); want other with token %d, term 2", code, out, errs, leader.Token)
	}
	if out, _, code := run(t, addr, "leader", "billing"); code != 0 || !strings.Contains(out, "other") || !strings.Contains(out, "term") {
		t.Fatalf("leader: code %d, %q", code, out)
	}
	// The trail names the election, not an empty lock: elected, resigned,
	// elected.
	if out, _, code := run(t, addr, "history", "--election", "billing"); code != 0 || strings.Count(out, "election:billing") != 3 || !strings.Contains(out, "resigned") {
		t.Fatalf("history --election: code %d, %q", code, out)
	}
	if out, errs, code := run(t, addr, "revoke", "--election", "billing", "--reason", "drill"); code != 0 || !strings.Contains(out, "leadership of billing") {
		t.Fatalf("revoke --election: code %d, %q (stderr %q)", code, out, errs)
	}
	if _, _, code := run(t, addr, "leader", "billing"); code != 4 {
		t.Fatalf("leader after the revoke: code %d, want 4", code)
	}
}

// TestElect_ARevokeStopsTheCommandWithinASecond: with a 30 s TTL the next
// renew is 10 s away; an operator who deposes the leader expects its work
// to stop now.
func TestElect_ARevokeStopsTheCommandWithinASecond(t *testing.T) {
	_, addr := startServer(t)
	errs := revokeStopsTheCommand(t, addr, []string{"elect", "--ttl", "30s", "--kill-after", "5s", "primary"}, func(string) {
		post(t, addr, "/v1/elections/primary/revoke", `{"reason":"maintenance"}`, 204)
	})
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `leadership of "primary"`) || !strings.Contains(lines[0], "revoked") ||
		!strings.Contains(lines[0], "maintenance") || strings.Contains(errs, "renew") || strings.Count(lines[1], "lost") != 1 {
		t.Errorf("stderr %q; want a line naming the revoke and its reason, then a one-line summary", errs)
	}
}

// TestLeader_WatchPrintsEveryChange: the state, then each change, until
// interrupted.
func TestLeader_WatchPrintsEveryChange(t *testing.T) {
	_, addr := startServer(t)
	cmd, stdout := startBaton(t, addr, "leader", "web", "--watch", "-o", "json")
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var last int64
	expect := func(candidate, value string) {
		t.Helper()
		var line string
		select {
		case line = <-lines:
		case <-time.After(20 * time.Second):
			t.Fatalf("no line within 20 s; want leader %q", candidate)
		}
		var ch struct {
			Revision int64 `json:"revision"`
			Leader   *struct {
				Candidate string          `json:"candidate"`
				Value     json.RawMessage `json:"value"`
			} `json:"leader"`
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got, gotValue := "", ""
		if ch.Leader != nil {
			got, gotValue = ch.Leader.Candidate, string(ch.Leader.Value)
		}
		if ch.Revision <= last || got != candidate || gotValue != value {
			t.Fatalf("line %q after revision %d; want leader %q with %s, later", line, last, candidate, value)
		}
		last = ch.Revision
	}
	expect("", "")
	var a struct {
		Token int64 `json:"token"`
	}
	if err := json.Unmarshal(post(t, addr, "/v1/elections/web/campaign", `{"candidate":"a","value":"10.0.0.1"}`, 201), &a); err != nil {
		t.Fatal(err)
	}
	expect("a", `"10.0.0.1"`)
	post(t, addr, "/v1/elections/web/proclaim", fmt.Sprintf(`{"token":%d,"value":"10.0.0.2"}`, a.Token), 200)
	expect("a", `"10.0.0.2"`)
	post(t, addr, "/v1/elections/web/revoke", `{}`, 204)
	expect("", "")

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("leader --watch after SIGINT: %v, want exit 0", err)
	}
}

// TestElect_AWaitOfAnHourWaitsInASessionOfItsOwn: a --wait longer than
// one request's waits in a session that elect makes for it, keeping its
// place in line, leads once the leader resigns, and ends the session
// with the command.
func TestElect_AWaitOfAnHourWaitsInASessionOfItsOwn(t *testing.T) {
	_, addr := startServer(t)
	var leader struct {
		Token int64 `json:"token"`
	}
	if err := json.Unmarshal(post(t, addr, "/v1/elections/billing/campaign", `{"candidate":"other","ttl":"1m"}`, 201), &leader); err != nil {
		t.Fatal(err)
	}
	cmd, stdout := startBaton(t, addr, "elect", "--candidate", "patient", "--ttl", "5s", "--wait", "1h", "billing", "--", "sh", "-c", `echo "led $BATON_TERM"`)
	poll.Until(t, 10*time.Second, "elect waits in line", func() bool {
		out, _, code := run(t, addr, "leader", "billing", "-o", "json")
		return code == 0 && strings.Contains(out, `"patient"`)
	})
	if out, _, _ := run(t, addr, "sessions", "list", "-o", "json"); !strings.Contains(out, `"patient"`) {
		t.Fatalf("sessions while waiting: %s, want elect's own", out)
	}
	req, _ := http.NewRequest(http.MethodDelete, addr+"/v1/elections/billing/leader?token="+strconv.FormatInt(leader.Token, 10), nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("resign: %v, %v", resp, err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "led 2\n" {
		t.Fatalf("command printed %q (%v), want it to lead in term 2", line, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("elect: %v", err)
	}
	if out, _, _ := run(t, addr, "sessions", "list", "-o", "json"); strings.Contains(out, `"patient"`) {
		t.Fatalf("sessions after the command: %s, want elect's own ended", out)
	}
}
