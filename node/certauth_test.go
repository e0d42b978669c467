package node_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/testcerts"
	"github.com/baton-dev/baton/node"
)

const (
	readerTok = "reader-token-0123456789abcdef"
	opsTok    = "ops-token-0123456789abcdef01"
)

// certPolicy names team-a by its client certificates' CommonName or
// SPIFFE ID; reader and ops have tokens only.
const certPolicy = `credentials:
  - name: team-a
    certificates: ["cn:team-a", "uri:spiffe://example.org/team-a"]
    rules: {"team-a.": write}
  - name: reader
    tokens: ["` + readerTok + `"]
    rules: {"": read}
  - name: ops
    tokens: ["` + opsTok + `"]
    rules: {"": admin}
`

// writePolicy writes doc as a policy file for cfg.
func writePolicy(t *testing.T, cfg *node.Config, doc string) {
	t.Helper()
	cfg.AuthFile = filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(cfg.AuthFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// answer is what a node answered: status, WWW-Authenticate, and the
// problem's detail.
type answer struct {
	status    int
	challenge string
	detail    string
}

// ask sends method path to n over a connection that presents cert (none
// when cert is nil), with Authorization: Bearer token unless token is "".
func ask(t *testing.T, n *node.Node, ca *testcerts.CA, cert *testcerts.Pair, token, method, path, body string) answer {
	t.Helper()
	tc := &tls.Config{RootCAs: ca.Pool()}
	if cert != nil {
		tc.Certificates = []tls.Certificate{cert.TLS(t)}
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, n.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p struct {
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(b, &p)
	return answer{resp.StatusCode, resp.Header.Get("WWW-Authenticate"), p.Detail}
}

// TestNode_AClientCertificateActsAsTheCredentialThatListsIt runs a node
// with --tls-client-ca and a policy file: a verified certificate without
// a token proves the credential that lists one of its names, whose rules
// then apply; a token, when sent, decides instead.
func TestNode_AClientCertificateActsAsTheCredentialThatListsIt(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	cfg := httpsConfig(t, ca)
	cfg.TLSClientCAFile = ca.File
	writePolicy(t, &cfg, certPolicy)
	n := start(t, cfg)
	teamA, spiffe, nobody := ca.Client(t, "team-a"), ca.ClientNamed(t, "worker-3", "spiffe://example.org/team-a"), ca.Client(t, "nobody")
	acquire := `{"owner":"w","ttl":"30s"}`

	for _, cert := range []*testcerts.Pair{&teamA, &spiffe} {
		if a := ask(t, n, ca, cert, "", "POST", "/v1/locks/team-a."+cert.Cert.Subject.CommonName, acquire); a.status != http.StatusCreated {
			t.Errorf("%s acquires in team-a.: %+v", cert.Cert.Subject, a)
		}
	}
	if a := ask(t, n, ca, &teamA, "", "POST", "/v1/locks/team-b.x", acquire); a.status != http.StatusForbidden || !strings.Contains(a.detail, `("team-a.")`) {
		t.Errorf("team-a's certificate outside its prefix: %+v, want 403 naming its prefix", a)
	}
	a := ask(t, n, ca, &nobody, "", "GET", "/v1/locks", "")
	if a.status != http.StatusUnauthorized || a.challenge != `Bearer realm="baton"` || !strings.Contains(a.detail, `subject "CN=nobody"`) || !strings.Contains(a.detail, "names no credential") {
		t.Errorf("a certificate no credential lists: %+v, want 401 naming its subject, without invalid_token", a)
	}
	// The token decides: team-a's certificate with reader's token reads
	// and may not write; with a wrong token, it is refused.
	if a := ask(t, n, ca, &teamA, readerTok, "POST", "/v1/locks/team-a.y", acquire); a.status != http.StatusForbidden || !strings.Contains(a.detail, "read role") {
		t.Errorf("team-a's certificate with reader's token: %+v, want 403 for the read role", a)
	}
	if a := ask(t, n, ca, &teamA, "wrong-token-0123456789abcdef", "GET", "/v1/locks", ""); a.status != http.StatusUnauthorized || !strings.Contains(a.challenge, "invalid_token") {
		t.Errorf("team-a's certificate with a wrong token: %+v, want 401 invalid_token", a)
	}
	if a := ask(t, n, ca, &nobody, opsTok, "POST", "/v1/locks/team-b.x", acquire); a.status != http.StatusCreated {
		t.Errorf("a token over a connection with a certificate nobody lists: %+v", a)
	}
	// The TLS layer still requires a certificate, token or not.
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	if resp, err := hc.Get(n.URL() + "/readyz"); err == nil {
		resp.Body.Close()
		t.Error("a connection without a client certificate was served")
	}

	// The Go client needs nothing but the certificate.
	c := newClient(t, n.URL(), client.TLSConfig{CAFile: ca.File, CertFile: teamA.CertFile, KeyFile: teamA.KeyFile})
	if _, err := c.AcquireOnce(ctxFor(t, time.Minute), "team-a.by-client", client.AcquireOptions{Owner: "w"}); err != nil {
		t.Fatalf("the Go client with team-a's certificate: %v", err)
	}
}

// TestNode_CertificatesProveNothingAgainstTheLineFormat: its credentials
// have no names to list certificates under.
func TestNode_CertificatesProveNothingAgainstTheLineFormat(t *testing.T) {
	ca := testcerts.NewCA(t, "baton test CA")
	cfg := httpsConfig(t, ca)
	cfg.TLSClientCAFile = ca.File
	cfg.AuthFile = filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(cfg.AuthFile, []byte("admin "+opsTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := start(t, cfg)
	ops := ca.Client(t, "ops")
	if a := ask(t, n, ca, &ops, "", "GET", "/v1/locks", ""); a.status != http.StatusUnauthorized {
		t.Errorf("a certificate against the line format: %+v, want 401", a)
	}
	if a := ask(t, n, ca, &ops, opsTok, "GET", "/v1/locks", ""); a.status != http.StatusOK {
		t.Errorf("a token with a certificate against the line format: %+v, want 200", a)
	}
}
