package cli_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
)

// TestCLI_AnErrorIsOneLine: the call and the server's words, once each.
func TestCLI_AnErrorIsOneLine(t *testing.T) {
	_, addr := startServer(t)
	_, errs, code := run(t, addr, "revoke", "wlock")
	if want := "baton: revoke \"wlock\": lock not held (404 not_held)\n"; errs != want || code != 4 {
		t.Fatalf("stderr %q, exit %d; want %q and 4", errs, code, want)
	}
}

// TestCLI_JSONOutputPrintsTheProblemOnStdout: with -o json, a script
// reads what went wrong from stdout, as a JSON object with the exit code.
func TestCLI_JSONOutputPrintsTheProblemOnStdout(t *testing.T) {
	_, addr := startServer(t)
	if _, errs, code := run(t, addr, "acquire", "job", "--owner", "me", "--ttl", "1m"); code != 0 {
		t.Fatalf("acquire: %d %s", code, errs)
	}
	for _, tc := range []struct {
		args   []string
		exit   int
		code   string
		status float64
	}{
		{[]string{"status", "free", "-o", "json"}, 4, "not_held", 404},
		{[]string{"acquire", "job", "--owner", "other", "-o", "json"}, 3, "lock_held", 409},
		{[]string{"acquire", "job", "--ttl", "1s", "-o", "json"}, 2, "invalid_request", 400},
		{[]string{"status", "job", "-o", "json", "--addr", "http://127.0.0.1:1"}, 6, "unavailable", 0},
	} {
		out, errs, code := run(t, addr, tc.args...)
		var p map[string]any
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Errorf("baton %v: stdout %q is no JSON object (%v); stderr %q", tc.args, out, err, errs)
			continue
		}
		status, _ := p["status"].(float64)
		if code != tc.exit || p["code"] != tc.code || status != tc.status || p["exit_code"] != float64(tc.exit) || p["detail"] == "" || p["message"] == "" {
			t.Errorf("baton %v: exit %d, problem %v; want exit %d, code %s, status %v", tc.args, code, p, tc.exit, tc.code, tc.status)
		}
		if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "baton: ") {
			t.Errorf("baton %v: stderr %q, want the one-line message too", tc.args, errs)
		}
		if tc.code == "lock_held" {
			if h, _ := p["holder"].(map[string]any); h == nil || h["owner"] != "me" {
				t.Errorf("lock_held problem %v: want the holder", p)
			}
		}
	}
}

// TestCLI_ListShowsTheQueues: the README promises holders and queues.
func TestCLI_ListShowsTheQueues(t *testing.T) {
	_, addr := startServer(t)
	if _, errs, code := run(t, addr, "acquire", "job", "--owner", "holder", "--ttl", "1m"); code != 0 {
		t.Fatalf("acquire: %d %s", code, errs)
	}
	waited := make(chan int, 1)
	go func() {
		_, _, code := run(t, addr, "exec", "--owner", "next-in-line", "--wait", "1m", "job", "--", "true")
		waited <- code
	}()
	poll.Until(t, 20*time.Second, "a waiter to queue", func() bool {
		resp, err := http.Get(addr + "/v1/locks/job")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var l struct {
			Waiters []struct{ Owner string } `json:"waiters"`
			Token   int64                    `json:"token"`
		}
		return json.NewDecoder(resp.Body).Decode(&l) == nil && len(l.Waiters) == 1
	})
	out, errs, code := run(t, addr, "list")
	if code != 0 || !strings.Contains(out, "WAITERS") || !strings.Contains(out, "1 (next-in-line)") {
		t.Errorf("list: exit %d, %q (%s); want a WAITERS column with the waiter", code, out, errs)
	}
	out, _, _ = run(t, addr, "list", "-o", "json")
	var locks []struct {
		Token   int64                    `json:"token"`
		Waiters []struct{ Owner string } `json:"waiters"`
	}
	if err := json.Unmarshal([]byte(out), &locks); err != nil || len(locks) != 1 || len(locks[0].Waiters) != 1 || locks[0].Waiters[0].Owner != "next-in-line" {
		t.Errorf("list -o json: %q (%v); want the waiter", out, err)
	}
	if len(locks) == 1 {
		if _, errs, code := run(t, addr, "release", "job", "--token", strconv.FormatInt(locks[0].Token, 10)); code != 0 {
			t.Fatalf("release: %d %s", code, errs)
		}
	}
	if c := <-waited; c != 0 {
		t.Errorf("the waiting exec exited %d", c)
	}
}

// TestCLI_WatchColumnsLineUp: whatever the lengths of names and owners,
// every column starts where its heading does.
func TestCLI_WatchColumnsLineUp(t *testing.T) {
	_, addr := startServer(t)
	lines, head := startWatch(t, addr)
	for _, a := range [][]string{{"a", "o"}, {"a-much-longer-lock-name-than-usual", "w"}, {"b", "someone@a-long-host-name.example"}} {
		if _, errs, code := run(t, addr, "acquire", a[0], "--owner", a[1], "--ttl", "1m"); code != 0 {
			t.Fatalf("acquire: %d %s", code, errs)
		}
	}
	cols := []string{"TYPE", "LOCK", "OWNER", "TOKEN"}
	for i := range 3 {
		if !lines.Scan() {
			t.Fatalf("event %d: %v", i, lines.Err())
		}
		line := []rune(lines.Text())
		for _, col := range cols {
			at := len([]rune(head[:strings.Index(head, col)]))
			if at >= len(line) || line[at-1] != ' ' || line[at] == ' ' {
				t.Errorf("column %s starts at %d in the heading, but not in %q", col, at, string(line))
			}
		}
	}
}
