package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
)

// holdToken takes a hold over HTTP, POSTing body to path (a semaphore's
// or a read/write lock's), and returns its token.
func holdToken(t *testing.T, addr, path, body string) int64 {
	t.Helper()
	var h struct {
		Token int64 `json:"token"`
	}
	if err := json.Unmarshal(post(t, addr, path, body, 201), &h); err != nil || h.Token <= 0 {
		t.Fatalf("hold %s: %v, token %d", path, err, h.Token)
	}
	return h.Token
}

// startBaton starts baton with args against addr, to run until it exits
// or the test ends, and returns it with its stdout.
func startBaton(t *testing.T, addr string, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(os.Environ(), "BATON_ADDR="+addr)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); cancel() })
	return cmd, stdout
}

// startWatch runs "baton watch" with args against addr until the test
// ends, and returns its output once it printed its headings: the stream
// starts at the revision watch read, so events made from then on show.
func startWatch(t *testing.T, addr string, args ...string) (lines *bufio.Scanner, head string) {
	t.Helper()
	_, stdout := startBaton(t, addr, append([]string{"watch"}, args...)...)
	lines = bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "REVISION") {
		t.Fatalf("first line %q (%v), want the headings", lines.Text(), lines.Err())
	}
	return lines, lines.Text()
}

// revokeStopsTheCommand runs baton with args, followed by a command that
// says it runs (with its BATON_TOKEN) and waits for SIGTERM; once it
// runs, revoke ends what it holds, given that token. It checks that the
// command got SIGTERM within a second of the revoke (the next renew is
// 10 s away) and that baton exited 10, and returns baton's stderr.
func revokeStopsTheCommand(t *testing.T, addr string, args []string, revoke func(token string)) string {
	t.Helper()
	dir := t.TempDir()
	running, termed := filepath.Join(dir, "running"), filepath.Join(dir, "termed")
	script := fmt.Sprintf(`trap 'touch %s; exit 0' TERM; echo "$BATON_TOKEN" > %s.tmp; mv %s.tmp %s; while :; do sleep 0.05; done`,
		termed, running, running, running)
	type result struct {
		errs string
		code int
	}
	done := make(chan result, 1)
	go func() {
		_, e, c := run(t, addr, append(args, "--", "sh", "-c", script)...)
		done <- result{e, c}
	}()
	var tok string
	poll.Until(t, 20*time.Second, "the command to run", func() bool {
		b, err := os.ReadFile(running)
		tok = strings.TrimSpace(string(b))
		return err == nil && tok != ""
	})
	sent := time.Now()
	revoke(tok)
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
	return r.errs
}

// revokeByToken checks "baton revoke --FLAG NAME" of the hold token, one
// of two NAME has: a usage error without --token, the end of that hold
// with it (said as "NOUN TOKEN of NAME"), not_held the second time, and
// the trail's record of the two acquires and the revoke, with its reason.
func revokeByToken(t *testing.T, addr, flag, name, noun string, token int64) {
	t.Helper()
	if _, _, code := run(t, addr, "revoke", "--"+flag, name); code != 2 {
		t.Fatalf("revoke --%s without --token: code %d, want 2", flag, code)
	}
	tok := strconv.FormatInt(token, 10)
	if out, errs, code := run(t, addr, "revoke", "--"+flag, name, "--token", tok, "--reason", "drill"); code != 0 || !strings.Contains(out, noun+" "+tok+" of "+name) {
		t.Fatalf("revoke --%s: code %d, %q (stderr %q)", flag, code, out, errs)
	}
	if _, _, code := run(t, addr, "revoke", "--"+flag, name, "--token", tok); code != 4 {
		t.Fatalf("revoke of a revoked %s: code %d, want 4", noun, code)
	}
	out, errs, code := run(t, addr, "history", "--"+flag, name)
	if code != 0 || strings.Count(out, flag+":"+name) != 3 || !strings.Contains(out, "revoked") || !strings.Contains(out, "drill") {
		t.Fatalf("history --%s: code %d, %q (stderr %q); want two acquired and the revoke", flag, code, out, errs)
	}
}
