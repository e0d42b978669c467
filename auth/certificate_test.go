package auth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/internal/testcerts"
)

const certPolicy = `credentials:
  - name: team-a
    certificates: ["cn:team-a", "uri:spiffe://example.org/ns/team-a/sa/worker"]
    rules: {"team-a.": write}
  - name: billing
    certificates: ["dns:Billing-Batch.example.com"]
    rules: {"billing.": write}
  - name: ops
    certificates: ["email:ops@example.com"]
    rules: {"": admin}
`

func TestCertificate_ANameOfTheRightKindNamesItsCredential(t *testing.T) {
	c, err := auth.ParsePolicy(strings.NewReader(certPolicy))
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	if c.Certificates() != 4 {
		t.Errorf("Certificates() = %d, want 4", c.Certificates())
	}
	ca := testcerts.NewCA(t, "test CA")
	for _, tc := range []struct {
		what string
		cert testcerts.Pair
		want string // "" for none
	}{
		{"its CommonName", ca.Client(t, "team-a"), "team-a"},
		{"its URI SAN, whatever its CommonName", ca.ClientNamed(t, "worker-7", "spiffe://example.org/ns/team-a/sa/worker"), "team-a"},
		{"its DNS SAN, in another case", ca.ClientNamed(t, "batch", "billing-batch.EXAMPLE.com"), "billing"},
		{"its email SAN", ca.ClientNamed(t, "someone", "ops@example.com"), "ops"},
		{"a name no credential lists", ca.Client(t, "nobody"), ""},
		{"a DNS name as CommonName, where a DNS SAN is listed", ca.Client(t, "billing-batch.example.com"), ""},
		{"a URI that is a prefix of a listed one", ca.ClientNamed(t, "x", "spiffe://example.org/ns/team-a"), ""},
	} {
		id, err := c.Certificate(tc.cert.Cert)
		if tc.want == "" {
			var pe *auth.ProofError
			if !errors.As(err, &pe) || !errors.Is(err, auth.ErrUnauthorized) || pe.Via != auth.ViaCertificate || pe.InvalidToken() ||
				pe.Reason != "certificate names no credential" || pe.Subject != tc.cert.Cert.Subject.String() || !strings.Contains(pe.Detail, "certificates:") {
				t.Errorf("%s: Certificate = %+v, %v; want a refusal naming the subject", tc.what, id, err)
			}
			continue
		}
		if err != nil || id.Cred.ID != tc.want || id.Via != auth.ViaCertificate || !id.Expires.Equal(tc.cert.Cert.NotAfter) {
			t.Errorf("%s: Certificate = %+v, %v; want %s until the certificate's NotAfter", tc.what, id, err, tc.want)
		}
	}
	// One certificate, two credentials' names: which one it proves would
	// be a guess.
	both := ca.ClientNamed(t, "team-a", "billing-batch.example.com")
	if _, err := c.Certificate(both.Cert); err == nil || !strings.Contains(err.Error(), `"billing", "team-a"`) {
		t.Errorf("a certificate naming two credentials: %v", err)
	}
}

func TestCertificate_TheLineFormatHasNoCertificates(t *testing.T) {
	c, err := auth.Parse(strings.NewReader("admin " + adminTok + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ca := testcerts.NewCA(t, "test CA")
	// Not even a certificate named as the credential's ID.
	if _, err := c.Certificate(ca.Client(t, auth.CredentialID(adminTok)).Cert); !errors.Is(err, auth.ErrUnauthorized) {
		t.Errorf("a certificate against the line format: %v", err)
	}
}

func TestParsePolicy_RefusesBadCertificateNames(t *testing.T) {
	for _, tc := range []struct{ name, entries, want string }{
		{"no kind", `["spiffe://example.org/a"]`, "KIND:VALUE"},
		{"unknown kind", `["ip:10.0.0.1"]`, "KIND:VALUE"},
		{"empty", `["cn:"]`, "1 to 2048 bytes"},
		{"control character", `["cn:a\tb"]`, "control"},
		{"twice in one credential", `["cn:a", "cn:a"]`, `listed by credential "a" too`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "credentials:\n  - name: a\n    certificates: " + tc.entries + "\n    rules: {\"\": read}\n"
			if _, err := auth.ParsePolicy(strings.NewReader(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want one with %q", err, tc.want)
			}
		})
	}
	// Across credentials, DNS names compare without case.
	doc := "credentials:\n  - name: a\n    certificates: [\"dns:x.example.com\"]\n    rules: {\"\": read}\n  - name: b\n    certificates: [\"dns:X.example.com\"]\n    rules: {\"\": read}\n"
	if _, err := auth.ParsePolicy(strings.NewReader(doc)); err == nil || !strings.Contains(err.Error(), `credential "b": certificates 1: "dns:X.example.com" is listed by credential "a" too`) {
		t.Errorf("a DNS name listed by two credentials: %v", err)
	}
}
