package cli_test

import (
	"strings"
	"testing"

	"github.com/baton-dev/baton/tests/testserver"
)

const (
	cliReadTok  = "cli-read-token-0123456789"
	cliWriteTok = "cli-write-token-0123456789"
)

// runWith runs baton with BATON_ADDR=addr and env.
func runWith(t *testing.T, env []string, addr string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runEnv(t, append([]string{"BATON_ADDR=" + addr}, env...), args...)
}

func TestCLI_AuthTokenFromTheFlagOrTheEnvironment(t *testing.T) {
	s := testserver.Start(t, testserver.WithAuth(t, "read "+cliReadTok+"\nwrite "+cliWriteTok+"\n"))
	addr := s.TS.URL
	if _, errs, code := runWith(t, nil, addr, "list"); code != 7 || !strings.Contains(errs, "unauthorized") {
		t.Fatalf("list without a token: code %d, stderr %q; want 7, unauthorized", code, errs)
	}
	if _, errs, code := runWith(t, nil, addr, "list", "--auth-token", cliReadTok); code != 0 {
		t.Fatalf("list --auth-token: code %d, %s", code, errs)
	}
	if _, errs, code := runWith(t, []string{"BATON_AUTH_TOKEN=" + cliReadTok}, addr, "acquire", "job"); code != 7 || !strings.Contains(errs, "write role") {
		t.Fatalf("acquire as a reader: code %d, stderr %q; want 7 naming the write role", code, errs)
	}
	// The flag wins over the environment.
	if _, errs, code := runWith(t, []string{"BATON_AUTH_TOKEN=" + cliReadTok}, addr, "acquire", "job", "--auth-token", cliWriteTok, "--ttl", "1m"); code != 0 {
		t.Fatalf("acquire --auth-token as a writer: code %d, %s", code, errs)
	}

	// exec hands its command the fencing token as BATON_TOKEN; a baton run
	// by the command still authenticates with BATON_AUTH_TOKEN.
	out, errs, code := runWith(t, []string{"BATON_AUTH_TOKEN=" + cliWriteTok}, addr,
		"exec", "exec-job", "--", "sh", "-c", `"$0" renew exec-job --token "$BATON_TOKEN" -o json && echo renewed-ok`, binary(t))
	if code != 0 || !strings.Contains(out, "renewed-ok") {
		t.Fatalf("renew from inside exec: code %d, stdout %q, stderr %q", code, out, errs)
	}
}
