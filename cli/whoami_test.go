package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-dev/baton/tests/testserver"
)

const cliPaymentsTok = "cli-payments-token-0123456789"

// TestCLI_WhoamiSaysTheCredentialItsRulesAndQuotas: a scoped credential
// reads its name, its rules and its quotas with their usage, as a table
// and as JSON; a node without authentication says so.
func TestCLI_WhoamiSaysTheCredentialItsRulesAndQuotas(t *testing.T) {
	s := testserver.Start(t, testserver.WithPolicy(t, `
credentials:
  - name: payments
    tokens: ["`+cliPaymentsTok+`"]
    rules: {"payments.": write, "shared.": read}
    quotas: {holds: 5, streams: 2, rate: 50}
`))
	env := []string{"BATON_AUTH_TOKEN=" + cliPaymentsTok}
	if _, errs, code := runWith(t, env, s.TS.URL, "acquire", "payments.ledger", "--ttl", "1m"); code != 0 {
		t.Fatalf("acquire: code %d, %s", code, errs)
	}
	out, errs, code := runWith(t, env, s.TS.URL, "whoami")
	if code != 0 {
		t.Fatalf("whoami: code %d, %s", code, errs)
	}
	for _, want := range []string{"payments", `"payments.": write`, `"shared.": read`, "holds 1 of 5", "streams 2", "rate 50/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("whoami says %q; want %q in it", out, want)
		}
	}
	if strings.Contains(out, cliPaymentsTok) {
		t.Error("whoami prints the token")
	}

	out, errs, code = runWith(t, env, s.TS.URL, "whoami", "-o", "json")
	var w struct {
		Authentication bool
		Credential     string
		Rules          []struct{ Prefix, Role string }
		Usage          map[string]int
	}
	if code != 0 || json.Unmarshal([]byte(out), &w) != nil || !w.Authentication || w.Credential != "payments" || len(w.Rules) != 2 || w.Usage["holds"] != 1 {
		t.Fatalf("whoami -o json: code %d, %q, %s", code, out, errs)
	}

	if _, errs, code := runWith(t, nil, s.TS.URL, "whoami"); code != 7 || !strings.Contains(errs, "unauthorized") {
		t.Errorf("whoami without a token: code %d, %q; want 7, unauthorized", code, errs)
	}
	open := testserver.Start(t)
	out, errs, code = run(t, open.TS.URL, "whoami")
	if code != 0 || !strings.Contains(out, "authentication") || !strings.Contains(out, "off") || !strings.Contains(out, `"" (every name): admin`) {
		t.Errorf("whoami without authentication: code %d, %q, %s", code, out, errs)
	}
}
