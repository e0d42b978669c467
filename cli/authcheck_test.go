package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-dev/baton/auth"
)

// TestCLI_AuthCheckSaysWhichRuleDecides: baton auth check reads the file
// itself and names the deciding rule (the longest prefix), for a policy
// file's credential by name and a line's by its ID; a name no rule covers,
// or a role under --need, exits 7.
func TestCLI_AuthCheckSaysWhichRuleDecides(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	doc := "credentials:\n  - name: payments\n    tokens: [\"payments-token-0123456789\"]\n    rules: {\"payments.\": write, \"payments.audit.\": read}\n"
	lines := filepath.Join(dir, "auth")
	const lineTok = "billing-token-0123456789"
	for path, body := range map[string]string{policy: doc, lines: "write " + lineTok + " billing.\n"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--auth-file", policy, "payments", "payments.nightly"}, 0, `"payments.": write`},
		{[]string{"--auth-file", policy, "payments", "payments.audit.x"}, 0, `"payments.audit.": read`},
		{[]string{"--auth-file", policy, "--need", "write", "payments", "payments.audit.x"}, 7, `"payments.audit.": read`},
		{[]string{"--auth-file", policy, "payments", "search.x"}, 7, "none"},
		{[]string{"--auth-file", lines, auth.CredentialID(lineTok), "billing.ledger"}, 0, `"billing.": write`},
		{[]string{"--auth-file", policy, "nobody", "x"}, 1, ""},
	} {
		out, errs, code := run(t, "http://127.0.0.1:1", append([]string{"auth", "check"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("auth check %q: code %d, out %q, err %q; want code %d and %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
	// A token on stdin is found, and never printed.
	out, errs, code := runStdin(t, "payments-token-0123456789\n", "auth", "check", "-o", "json", "--auth-file", policy, "-", "payments.x")
	var d struct{ Credential, Role string }
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Credential != "payments" || d.Role != "write" || strings.Contains(out+errs, "payments-token") {
		t.Errorf("auth check - (token on stdin): code %d, out %q, err %q", code, out, errs)
	}
}

// runStdin runs the baton binary with stdin, without this process's
// BATON_ variables.
func runStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BATON_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run baton %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}
