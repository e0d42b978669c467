package server_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/internal/testjwt"
	"github.com/baton-dev/baton/tests/testserver"
)

// startWithJWT starts a server whose policy takes JWTs signed by key.
func startWithJWT(t *testing.T, leeway string, key *testjwt.Key, opts ...testserver.Option) (*testserver.Server, string) {
	t.Helper()
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	testjwt.WriteJWKS(t, jwks, key)
	return testserver.Start(t, append([]testserver.Option{testserver.WithPolicy(t, testjwt.Policy(jwks, "  leeway: "+leeway+"\n"))}, opts...)...), jwks
}

func teamAClaims(ttl time.Duration) map[string]any {
	return testjwt.Claims(testjwt.Issuer, testjwt.Audience, "team-a", ttl)
}

func TestJWT_ATokenActsAsTheCredentialItsClaimNames(t *testing.T) {
	key := testjwt.NewKey(t, "k1", jose.ES256)
	s, _ := startWithJWT(t, "30s", key)
	token := key.Sign(t, teamAClaims(time.Hour))
	testserver.WantStatus(t, s.DoAs(token, "POST", "/v1/locks/team-a.nightly", `{"owner":"w","ttl":"30s"}`), http.StatusCreated)
	p := testserver.WantProblem(t, s.DoAs(token, "POST", "/v1/locks/team-b.nightly", `{"owner":"w","ttl":"30s"}`), http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, `"team-b.nightly" is outside this credential's prefixes ("team-a.")`) {
		t.Errorf("403 detail %q", p.Detail)
	}
	// The hold is team-a's: the trail names the credential, not the token.
	body := string(s.DoAs(testjwt.OpsToken, "GET", "/v1/history?lock=team-a.nightly", "").Body)
	if !strings.Contains(body, `"credential":"team-a"`) || strings.Contains(body, token) {
		t.Errorf("history of the JWT's hold:\n%s", body)
	}
	// A listed token works beside JWTs.
	testserver.WantStatus(t, s.DoAs(testjwt.OpsToken, "GET", "/v1/locks", ""), http.StatusOK)
}

func TestJWT_ATokenThatFailsACheckIs401WithAnInvalidTokenChallenge(t *testing.T) {
	key, stranger := testjwt.NewKey(t, "k1", jose.ES256), testjwt.NewKey(t, "k2", jose.ES256)
	var logs testserver.LogBuffer
	s, _ := startWithJWT(t, "30s", key, testserver.WithLog(&logs))
	with := func(k string, v any) map[string]any {
		c := teamAClaims(time.Hour)
		c[k] = v
		return c
	}
	for _, tc := range []struct{ name, token, detail string }{
		{"expired", key.Sign(t, with("exp", time.Now().Add(-time.Hour).Unix())), "expired at"},
		{"wrong audience", key.Sign(t, with("aud", "another-service")), "another audience"},
		{"wrong issuer", key.Sign(t, with("iss", "https://evil.test/")), "another issuer"},
		{"unknown key", stranger.Sign(t, teamAClaims(time.Hour)), "not in the JWKS file"},
		{"alg none", testjwt.Unsigned(t, "k1", teamAClaims(time.Hour)), "algorithm baton does not accept"},
		{"tampered", testjwt.Tamper(t, key.Sign(t, teamAClaims(time.Hour)), with("sub", "ops")), "signature that does not verify"},
		{"no credential of that name", key.Sign(t, with("sub", "mallory")), `names credential "mallory"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.DoAs(tc.token, "GET", "/v1/locks", "")
			p := testserver.WantProblem(t, r, http.StatusUnauthorized, "unauthorized")
			if got, want := r.Header.Get("WWW-Authenticate"), `Bearer realm="baton", error="invalid_token"`; got != want {
				t.Errorf("WWW-Authenticate %q, want %q", got, want)
			}
			if !strings.Contains(p.Detail, tc.detail) || strings.Contains(p.Detail, tc.token) {
				t.Errorf("detail %q; want one with %q and without the token", p.Detail, tc.detail)
			}
			if out := logs.String(); strings.Contains(out, tc.token) || !strings.Contains(out, "via=jwt") {
				t.Errorf("the log quotes the token or does not say a JWT was refused:\n%s", out)
			}
		})
	}
}

// streamEnds opens /v1/events with token and reads its first line; the
// channel is closed when the stream ends.
func streamEnds(t *testing.T, s *testserver.Server, token string) <-chan struct{} {
	t.Helper()
	r := openEvents(t, s, token, "/v1/events")
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, r)
		close(done)
	}()
	return done
}

// TestJWT_AStreamEndsWhenItsTokenExpiresOrItsKeyGoes: a JWT's stream
// lives no longer than the JWT, nor past a reload that drops its key.
func TestJWT_AStreamEndsWhenItsTokenExpiresOrItsKeyGoes(t *testing.T) {
	key := testjwt.NewKey(t, "k1", jose.EdDSA)
	s, _ := startWithJWT(t, "0s", key)
	short := streamEnds(t, s, key.Sign(t, teamAClaims(2*time.Second)))
	long := streamEnds(t, s, key.Sign(t, teamAClaims(time.Hour)))
	select {
	case <-short:
	case <-time.After(15 * time.Second):
		t.Fatal("the stream of a JWT that expired in 2 s is still open after 15 s")
	}
	select {
	case <-long:
		t.Fatal("the stream of a JWT valid for an hour ended with another's expiry")
	default:
	}

	rotated := filepath.Join(t.TempDir(), "jwks.json")
	testjwt.WriteJWKS(t, rotated, testjwt.NewKey(t, "k2", jose.EdDSA))
	c, err := auth.ParsePolicy(strings.NewReader(testjwt.Policy(rotated, "  leeway: 0s\n")))
	if err != nil {
		t.Fatal(err)
	}
	s.Auth.Swap(c)
	select {
	case <-long:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream is still open 10 s after a reload dropped its JWT's key")
	}
}
