package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKV_ConfigWithCompareAndSet: put, get, compare-and-set and rm, as
// an operator keeps a configuration.
func TestKV_ConfigWithCompareAndSet(t *testing.T) {
	_, addr := startServer(t)
	out, errs, code := run(t, addr, "kv", "put", "config/db", `{"host":"db-1"}`, "--create", "-o", "json")
	var k struct {
		Revision int64 `json:"revision"`
		Version  int64 `json:"version"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &k) != nil || k.Version != 1 {
		t.Fatalf("put --create: code %d, %q %s", code, out, errs)
	}
	if _, errs, code := run(t, addr, "kv", "put", "config/db", `{"host":"db-2"}`, "--create"); code != 5 || !strings.Contains(errs, "revision_mismatch") {
		t.Fatalf("second put --create: code %d, %s; want revision_mismatch (5)", code, errs)
	}
	if out, errs, code := run(t, addr, "kv", "put", "config/db", `{"host":"db-2"}`, "--if-revision", strconv.FormatInt(k.Revision, 10)); code != 0 || !strings.Contains(out, "version 2") {
		t.Fatalf("put --if-revision: code %d, %q %s", code, out, errs)
	}
	if out, _, code := run(t, addr, "kv", "get", "config/db"); code != 0 || strings.TrimSpace(out) != `{"host":"db-2"}` {
		t.Fatalf("get: code %d, %q", code, out)
	}
	if _, errs, code := run(t, addr, "kv", "put", "config/flag", "on"); code != 2 || !strings.Contains(errs, "--string") {
		t.Fatalf("put of bare text: code %d, %s; want a usage error naming --string", code, errs)
	}
	if _, _, code := run(t, addr, "kv", "put", "config/flag", "on", "--string"); code != 0 {
		t.Fatalf("put --string: code %d", code)
	}
	out, _, code = run(t, addr, "kv", "ls", "config/")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], "config/db") || !strings.Contains(lines[2], `"on"`) {
		t.Fatalf("ls: code %d, %q", code, out)
	}
	if _, _, code := run(t, addr, "kv", "rm", "config/db"); code != 0 {
		t.Fatalf("rm: code %d", code)
	}
	if _, errs, code := run(t, addr, "kv", "get", "config/db"); code != 4 || !strings.Contains(errs, "key_not_found") {
		t.Fatalf("get after rm: code %d, %s; want key_not_found (4)", code, errs)
	}
}

// TestKV_WatchSeesAMemberRegisterAndVanish: a service registry of
// session-bound members, watched from a second process while one member
// registers and its session ends.
func TestKV_WatchSeesAMemberRegisterAndVanish(t *testing.T) {
	eng, addr := startServer(t)
	ctx := context.Background()
	_, stdout := startBaton(t, addr, "kv", "watch", "services/api/")
	lines := bufio.NewScanner(stdout)
	// The watch starts at the revision it read once connected: register
	// until its first line shows (a put before that is not streamed).
	s, err := eng.CreateSession(ctx, "api-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	go func() {
		for lines.Scan() {
			got <- lines.Text()
		}
		close(got)
	}()
	deadline := time.After(20 * time.Second)
	for registered := false; !registered; {
		if _, errs, code := run(t, addr, "kv", "put", "services/api/m1", `{"addr":"10.0.0.1:80"}`, "--session", s.ID); code != 0 {
			t.Fatalf("register: code %d, %s", code, errs)
		}
		select {
		case line := <-got:
			if !strings.Contains(line, "put") || !strings.Contains(line, "services/api/m1") || !strings.Contains(line, "10.0.0.1:80") {
				t.Fatalf("watch printed %q, want m1's put", line)
			}
			registered = true
		case <-time.After(500 * time.Millisecond):
		case <-deadline:
			t.Fatal("the watch printed nothing")
		}
	}
	if err := eng.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case line := <-got:
			if strings.Contains(line, "put") {
				continue // a register the loop above sent twice
			}
			if !strings.Contains(line, "delete") || !strings.Contains(line, "services/api/m1") {
				t.Fatalf("watch printed %q, want m1's delete", line)
			}
			return
		case <-deadline:
			t.Fatal("the watch did not see the member vanish")
		}
	}
}

// TestMembers_ListsTheSessionBoundKeysOfAGroup: a group's members are
// its keys bound to sessions; a plain key under the prefix is none.
func TestMembers_ListsTheSessionBoundKeysOfAGroup(t *testing.T) {
	eng, addr := startServer(t)
	s, err := eng.CreateSession(context.Background(), "api-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"kv", "put", "services/api/m1", `"10.0.0.1:80"`, "--session", s.ID},
		{"kv", "put", "services/api/config", `{"port":80}`},
	} {
		if _, errs, code := run(t, addr, args...); code != 0 {
			t.Fatalf("%v: code %d, %s", args, code, errs)
		}
	}
	out, errs, code := run(t, addr, "members", "services/api/")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "1 member(s)") || !strings.Contains(lines[1], "m1") || !strings.Contains(lines[1], s.ID) {
		t.Fatalf("members: code %d, %q %s; want m1 alone", code, out, errs)
	}
}
