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
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/internal/testjwt"
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

// TestCLI_AuthCheckTakesAJWTOnStdin: with a policy that takes JWTs, a
// JWT on stdin is checked as the node would, and a refused one says why.
func TestCLI_AuthCheckTakesAJWTOnStdin(t *testing.T) {
	dir := t.TempDir()
	k := testjwt.NewKey(t, "k1", jose.ES256)
	testjwt.WriteJWKS(t, filepath.Join(dir, "jwks.json"), k)
	policy := filepath.Join(dir, "policy.yaml")
	doc := "jwt: {jwks_file: jwks.json, audience: baton}\ncredentials:\n  - name: payments\n    rules: {\"payments.\": write}\n"
	if err := os.WriteFile(policy, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	good := k.Sign(t, testjwt.Claims("https://idp.test/", "baton", "payments", time.Hour))
	out, errs, code := runStdin(t, good+"\n", "auth", "check", "--auth-file", policy, "-", "payments.x")
	if code != 0 || !strings.Contains(out, "payments") || strings.Contains(out+errs, good) {
		t.Errorf("auth check with a JWT: code %d, out %q, err %q", code, out, errs)
	}
	expired := k.Sign(t, testjwt.Claims("https://idp.test/", "baton", "payments", -time.Hour))
	out, errs, code = runStdin(t, expired+"\n", "auth", "check", "--auth-file", policy, "-", "payments.x")
	if code != 1 || !strings.Contains(errs, "expired") || strings.Contains(out+errs, expired) {
		t.Errorf("auth check with an expired JWT: code %d, out %q, err %q; want 1 saying it expired", code, out, errs)
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
