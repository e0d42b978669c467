package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// batonBin is the real baton binary, built once: exec's signal handling
// and exit codes are only real in a real process.
var (
	buildOnce sync.Once
	batonBin  string
	buildErr  error
)

// run runs baton against the node at addr.
func run(t *testing.T, addr string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runEnv(t, []string{"BATON_ADDR=" + addr}, args...)
}

// runEnv runs the baton binary with env added to this process's (without
// its BATON_ variables) and returns its output and exit code.
func runEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BATON_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run baton %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "baton-cli-test-")
		if err != nil {
			buildErr = err
			return
		}
		batonBin = filepath.Join(dir, "baton")
		out, err := exec.Command("go", "build", "-o", batonBin, "..").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return batonBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if batonBin != "" {
		os.RemoveAll(filepath.Dir(batonBin))
	}
	os.Exit(code)
}

// startServer runs a real baton server (engine over embedded etcd).
func startServer(t *testing.T) (*lock.Engine, string) {
	t.Helper()
	m := testetcd.Start(t)
	eng, err := lock.New(context.Background(), m.Client(), lock.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	tr, err := trail.New(context.Background(), eng, trail.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Trail: tr}).Handler())
	t.Cleanup(ts.Close)
	return eng, ts.URL
}

func held(addr, name string) bool {
	resp, err := http.Get(addr + "/v1/locks/" + name)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

func TestCLI_AcquireStatusReleaseAndExitCodes(t *testing.T) {
	_, addr := startServer(t)
	out, errs, code := run(t, addr, "acquire", "job", "--owner", "me", "--ttl", "1m", "-o", "json")
	if code != 0 {
		t.Fatalf("acquire: code %d, %s", code, errs)
	}
	var l struct {
		Token int64  `json:"token"`
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil || l.Token <= 0 || l.Owner != "me" {
		t.Fatalf("acquire -o json: %q (%v)", out, err)
	}
	if _, errs, code := run(t, addr, "acquire", "job", "--owner", "other"); code != 3 || !strings.Contains(errs, `"me"`) {
		t.Fatalf("acquire of a held lock: code %d, stderr %q; want 3 naming the holder", code, errs)
	}
	if out, _, code := run(t, addr, "status", "job"); code != 0 || !strings.Contains(out, "owner") || !strings.Contains(out, strconv.FormatInt(l.Token, 10)) {
		t.Fatalf("status: code %d, %q", code, out)
	}
	if out, _, code := run(t, addr, "list"); code != 0 || !strings.Contains(out, "job") || !strings.HasPrefix(out, "NAME") {
		t.Fatalf("list: code %d, %q", code, out)
	}
	if _, _, code := run(t, addr, "release", "job", "--token", strconv.FormatInt(l.Token-1, 10)); code != 5 {
		t.Fatalf("release with a stale token: code %d, want 5", code)
	}
	if _, errs, code := run(t, addr, "release", "job", "--token", strconv.FormatInt(l.Token, 10)); code != 0 {
		t.Fatalf("release: code %d, %s", code, errs)
	}
	if _, _, code := run(t, addr, "status", "job"); code != 4 {
		t.Fatalf("status of a free lock: code %d, want 4", code)
	}
	if _, _, code := run(t, addr, "release", "job"); code != 2 {
		t.Fatalf("release without --token: code %d, want 2", code)
	}
	if _, _, code := run(t, addr, "status"); code != 2 {
		t.Fatalf("status without a name: code %d, want 2", code)
	}
	if out, _, code := run(t, addr, "history", "--lock", "job"); code != 0 || !strings.Contains(out, "released") || !strings.Contains(out, "acquired") {
		t.Fatalf("history: code %d, %q", code, out)
	}
}

func TestExec_PropagatesTheExitCodeAndReleases(t *testing.T) {
	_, addr := startServer(t)
	out, _, code := run(t, addr, "exec", "job", "--", "sh", "-c", `echo "$BATON_LOCK $BATON_TOKEN"; exit 7`)
	if code != 7 {
		t.Fatalf("exit code %d, want the command's 7", code)
	}
	f := strings.Fields(out)
	if len(f) != 2 || f[0] != "job" {
		t.Fatalf("command saw %q, want BATON_LOCK and BATON_TOKEN", out)
	}
	if tok, err := strconv.ParseInt(f[1], 10, 64); err != nil || tok <= 0 {
		t.Fatalf("BATON_TOKEN %q", f[1])
	}
	if held(addr, "job") {
		t.Fatal("lock still held after the command exited")
	}
}

func TestExec_TwoConcurrentExecsNeverOverlap(t *testing.T) {
	_, addr := startServer(t)
	logf := filepath.Join(t.TempDir(), "log")
	script := fmt.Sprintf(`echo "start $BATON_TOKEN" >> %[1]s; sleep 0.3; echo "end $BATON_TOKEN" >> %[1]s`, logf)
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, codes[i] = run(t, addr, "exec", "--wait", "30s", "shared", "--", "sh", "-c", script)
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("exec %d exited %d", i, c)
		}
	}
	b, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 8 {
		t.Fatalf("log %q", lines)
	}
	last := int64(0)
	for i := 0; i < len(lines); i += 2 {
		var s, e int64
		if _, err := fmt.Sscanf(lines[i], "start %d", &s); err != nil {
			t.Fatalf("line %d %q: want a start (runs overlapped): %q", i, lines[i], lines)
		}
		if _, err := fmt.Sscanf(lines[i+1], "end %d", &e); err != nil || e != s {
			t.Fatalf("line %d %q: want the end of token %d (runs overlapped): %q", i+1, lines[i+1], s, lines)
		}
		if s <= last {
			t.Fatalf("tokens did not increase: %q", lines)
		}
		last = s
	}
}

func TestExec_RevokingTheLockStopsTheCommand(t *testing.T) {
	_, addr := startServer(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "running")
	script := fmt.Sprintf(`trap 'echo got-TERM; exit 0' TERM; touch %s; while :; do sleep 0.05; done`, marker)
	type result struct {
		out, errs string
		code      int
	}
	done := make(chan result, 1)
	go func() {
		o, e, c := run(t, addr, "exec", "--kill-after", "5s", "job", "--", "sh", "-c", script)
		done <- result{o, e, c}
	}()
	poll.Until(t, 20*time.Second, "the command to run", func() bool { _, err := os.Stat(marker); return err == nil })
	resp, err := http.Post(addr+"/v1/locks/job/revoke", "application/json", strings.NewReader(`{"reason":"test"}`))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("revoke: %v %v", err, resp)
	}
	resp.Body.Close()
	select {
	case r := <-done:
		if r.code != 10 || !strings.Contains(r.out, "got-TERM") || !strings.Contains(r.errs, "lost") {
			t.Fatalf("after revoke: code %d, stdout %q, stderr %q; want 10, the command's TERM handler, and a message", r.code, r.out, r.errs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("exec still running 30 s after its lock was revoked")
	}
}

func TestExec_HeldLockExits3WithoutRunningTheCommand(t *testing.T) {
	_, addr := startServer(t)
	if _, _, code := run(t, addr, "acquire", "job", "--ttl", "1m"); code != 0 {
		t.Fatal("acquire")
	}
	marker := filepath.Join(t.TempDir(), "ran")
	_, errs, code := run(t, addr, "exec", "job", "--", "touch", marker)
	if code != 3 {
		t.Fatalf("code %d (%s), want 3", code, errs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran without the lock")
	}
}

func TestExec_ForwardsSignalsToTheCommand(t *testing.T) {
	_, addr := startServer(t)
	marker := filepath.Join(t.TempDir(), "ready")
	script := fmt.Sprintf(`trap 'echo got-USR1; exit 0' USR1; touch %s; while :; do sleep 0.05; done`, marker)
	cmd := exec.Command(binary(t), "exec", "job", "--", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "BATON_ADDR="+addr)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	poll.Until(t, 20*time.Second, "the command to run", func() bool { _, err := os.Stat(marker); return err == nil })
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "got-USR1") {
			t.Fatalf("after SIGUSR1: %v, output %q; want the command to handle it and exit 0", err, out.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("baton exec did not pass SIGUSR1 on")
	}
	if held(addr, "job") {
		t.Fatal("lock still held after the command exited")
	}
}

// TestExec_APausedHolderStopsItsCommandWhenItWakes is the GC-pause story:
// baton exec is frozen past its TTL, the lock expires on the server, and on
// waking exec must judge the lock lost by its own clock and stop the command.
func TestExec_APausedHolderStopsItsCommandWhenItWakes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a TTL: not in the fast tier")
	}
	_, addr := startServer(t)
	marker := filepath.Join(t.TempDir(), "ready")
	script := fmt.Sprintf(`trap 'echo got-TERM; exit 0' TERM; touch %s; while :; do sleep 0.05; done`, marker)
	cmd := exec.Command(binary(t), "exec", "--ttl", "2s", "--kill-after", "5s", "job", "--", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "BATON_ADDR="+addr)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	poll.Until(t, 20*time.Second, "the command to run", func() bool { _, err := os.Stat(marker); return err == nil })
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the lock to expire while exec is frozen", func() bool { return !held(addr, "job") })
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 10 || !strings.Contains(out.String(), "got-TERM") || !strings.Contains(errb.String(), "lost") {
			t.Fatalf("after waking: %v, stdout %q, stderr %q; want exit 10 after stopping the command", err, out.String(), errb.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("exec kept running its command after its lock expired")
	}
}

// TestCLI_JSONOutputHasTheAPIShape: scripts reading -o json see the member
// names and formats of the HTTP API.
func TestCLI_JSONOutputHasTheAPIShape(t *testing.T) {
	_, addr := startServer(t)
	out, errs, code := run(t, addr, "sessions", "create", "--owner", "svc", "--ttl", "1m", "-o", "json")
	var s map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s["id"] == "" || s["ttl"] != "1m0s" || s["owner"] != "svc" {
		t.Fatalf("sessions create -o json: code %d, %q %s", code, out, errs)
	}
	id, _ := s["id"].(string)
	if _, errs, code := run(t, addr, "acquire", "job", "--session", id); code != 0 {
		t.Fatalf("acquire in the session: %d %s", code, errs)
	}
	out, _, code = run(t, addr, "history", "-o", "json")
	var evs []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &evs) != nil || len(evs) != 1 || evs[0]["type"] != "acquired" || evs[0]["session"] != id {
		t.Fatalf("history -o json: code %d, %q", code, out)
	}
	if ts, _ := evs[0]["time"].(string); len(ts) != len("2026-11-29T16:09:11.866Z") {
		t.Fatalf("event time %q is not RFC 3339 UTC with milliseconds", ts)
	}
	out, _, code = run(t, addr, "status", "job", "-o", "json")
	var l map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || l["session"] != id || l["ttl"] != "1m0s" {
		t.Fatalf("status -o json: code %d, %q", code, out)
	}
	if _, errs, code := run(t, addr, "sessions", "get", "ffff"); code != 4 || strings.Contains(errs, "Usage:") {
		t.Fatalf("sessions get of an unknown session: code %d, stderr %q; want 4 without usage text", code, errs)
	}
}

func TestMember_BadInputIsAUsageErrorAndAnUnreachableEtcdIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"member", "add", "n4", "not-a-url"}, 2, "PEER-URL"},
		{[]string{"member", "add", "n4"}, 2, "takes 2 argument"},
		{[]string{"member", "list", "-o", "yaml"}, 2, "--output"},
		// Nothing listens there: the command gives up at its --timeout,
		// which is "unavailable", not a usage mistake.
		{[]string{"member", "list", "--etcd-endpoints", "http://127.0.0.1:1", "--timeout", "1s"}, 6, "did not answer"},
	} {
		_, stderr, code := run(t, "http://127.0.0.1:1", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("baton %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestCLI_TheDefaultOwnerTellsTwoProcessesOfOneHostApart: without
// --owner, a hold is labelled user@host:pid, so two commands run on one
// host (two cron jobs) do not look the same in lists and the trail.
func TestCLI_TheDefaultOwnerTellsTwoProcessesOfOneHostApart(t *testing.T) {
	_, addr := startServer(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	owners := make([]string, 2)
	for i := range owners {
		out, errs, code := run(t, addr, "acquire", fmt.Sprintf("default-owner-%d", i), "--ttl", "1m", "-o", "json")
		var l struct {
			Owner string `json:"owner"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
			t.Fatalf("acquire: code %d, %s%s", code, out, errs)
		}
		if !regexp.MustCompile(`^([^@]+@)?` + regexp.QuoteMeta(host) + `:\d+$`).MatchString(l.Owner) {
			t.Errorf("default owner %q, want [user@]%s:pid", l.Owner, host)
		}
		owners[i] = l.Owner
	}
	if owners[0] == owners[1] {
		t.Errorf("two processes got the same default owner %q", owners[0])
	}
}

// TestCLI_StatusOfALockNobodyHoldsNamesTheKindThatIsHeld: status asks for
// a lock; when none of that name is held but a semaphore or a read/write
// lock is, it says so and how to ask for it, still exiting 4.
func TestCLI_StatusOfALockNobodyHoldsNamesTheKindThatIsHeld(t *testing.T) {
	_, addr := startServer(t)
	permitToken(t, addr, "pool", `{"owner":"w","ttl":"1m","limit":2}`)
	rwToken(t, addr, "catalog", `{"owner":"r","ttl":"1m","mode":"read"}`)
	for _, tc := range []struct{ name, want string }{
		{"pool", "a semaphore pool has 1 permit held: baton status pool --semaphore"},
		{"catalog", "a read/write lock catalog is: baton status catalog --rwlock"},
		{"nothing", "not held"},
	} {
		_, errs, code := run(t, addr, "status", tc.name)
		if code != 4 || !strings.Contains(errs, tc.want) {
			t.Errorf("status %s: code %d, %q; want 4 and %q", tc.name, code, errs, tc.want)
		}
	}
}
