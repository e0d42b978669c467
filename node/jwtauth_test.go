package node_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/baton-dev/baton/internal/testjwt"
)

// getWith is the status and body of GET url with a bearer token.
func getWith(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestNode_ReloadRotatesTheJWKS: Reload (SIGHUP) reads the policy's JWKS
// file again; tokens of the key it drops are refused from then on, and a
// JWKS that cannot be used keeps the keys in force.
func TestNode_ReloadRotatesTheJWKS(t *testing.T) {
	cfg := testConfig(t)
	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	old, rotated := testjwt.NewKey(t, "2026-11", jose.ES256), testjwt.NewKey(t, "2026-12", jose.ES256)
	testjwt.WriteJWKS(t, jwks, old)
	writePolicy(t, &cfg, `jwt:
  jwks_file: `+jwks+`
  issuer: https://idp.test/
  audience: baton
credentials:
  - name: team-a
    rules: {"team-a.": read}
`)
	n := start(t, cfg)
	claims := testjwt.Claims("https://idp.test/", "baton", "team-a", time.Hour)
	oldTok, newTok := old.Sign(t, claims), rotated.Sign(t, claims)
	url := n.URL() + "/v1/locks"
	if st, body := getWith(t, url, oldTok); st != http.StatusOK {
		t.Fatalf("the old key's token before the rotation: %d %s", st, body)
	}
	if st, _ := getWith(t, url, newTok); st != http.StatusUnauthorized {
		t.Fatalf("the new key's token before the rotation: %d", st)
	}

	testjwt.WriteJWKS(t, jwks, rotated)
	if err := n.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if st, body := getWith(t, url, newTok); st != http.StatusOK {
		t.Errorf("the new key's token after the rotation: %d %s", st, body)
	}
	if st, body := getWith(t, url, oldTok); st != http.StatusUnauthorized || !strings.Contains(body, "not in the JWKS file") {
		t.Errorf("the old key's token after the rotation: %d %s; want 401 for an unknown key", st, body)
	}

	testjwt.WriteJSON(t, jwks, map[string]any{"keys": []jose.JSONWebKey{rotated.Private()}})
	if err := n.Reload(); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Errorf("Reload with a private key in the JWKS: %v", err)
	}
	if st, body := getWith(t, url, newTok); st != http.StatusOK {
		t.Errorf("the new key's token after a refused reload: %d %s", st, body)
	}
}
