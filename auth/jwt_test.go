package auth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/internal/testjwt"
)

// loadPolicy writes doc as dir/policy.yaml and loads it.
func loadPolicy(t testing.TB, dir, doc string) *auth.Store {
	t.Helper()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := auth.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return st
}

// jwtStore is a store of jwtPolicy over a JWKS file, jwks.json beside
// the policy file, that lists keys.
func jwtStore(t testing.TB, keys ...*testjwt.Key) (st *auth.Store, jwksPath string) {
	t.Helper()
	dir := t.TempDir()
	jwksPath = filepath.Join(dir, "jwks.json")
	testjwt.WriteJWKS(t, jwksPath, keys...)
	// Relative: Load reads it beside the policy file.
	return loadPolicy(t, dir, testjwt.Policy("jwks.json", "")), jwksPath
}

func TestJWT_AValidTokenActsAsTheCredentialItsClaimNames(t *testing.T) {
	keys := []*testjwt.Key{testjwt.NewKey(t, "ec", jose.ES256), testjwt.NewKey(t, "ed", jose.EdDSA), testjwt.NewKey(t, "rsa", jose.PS256)}
	st, _ := jwtStore(t, keys...)
	for _, k := range keys {
		claims := testjwt.Claims(testjwt.Issuer, testjwt.Audience, "team-a", time.Hour)
		id, err := st.Bearer(k.Sign(t, claims), time.Now())
		if err != nil {
			t.Fatalf("%s: Bearer: %v", k.Alg, err)
		}
		wantExp := time.Unix(claims["exp"].(int64), 0).Add(auth.DefaultJWTLeeway)
		if id.Cred.ID != "team-a" || id.Via != auth.ViaJWT || !id.Expires.Equal(wantExp) {
			t.Errorf("%s: identity %s via %s until %v; want team-a via jwt until %v", k.Alg, id.Cred.ID, id.Via, id.Expires, wantExp)
		}
		if !id.Cred.Rules.Allows("team-a.x", auth.Write) || id.Cred.Rules.Allows("team-b.x", auth.Read) {
			t.Errorf("%s: team-a's rules do not decide its JWT's requests", k.Alg)
		}
	}
	// An audience list holding baton's passes too.
	claims := testjwt.Claims(testjwt.Issuer, testjwt.Audience, "team-a", time.Hour)
	claims["aud"] = []string{"other", testjwt.Audience}
	if _, err := st.Bearer(keys[0].Sign(t, claims), time.Now()); err != nil {
		t.Errorf("an aud list with baton's audience: %v", err)
	}
	// The listed token still works beside JWTs.
	if id, err := st.Bearer(testjwt.OpsToken, time.Now()); err != nil || id.Cred.ID != "ops" || id.Via != auth.ViaToken || !id.Expires.IsZero() {
		t.Errorf("Bearer(ops's token) = %+v, %v", id, err)
	}
}

func TestJWT_TheClaimIsConfigurable(t *testing.T) {
	k := testjwt.NewKey(t, "k1", jose.ES256)
	dir := t.TempDir()
	testjwt.WriteJWKS(t, filepath.Join(dir, "jwks.json"), k)
	st := loadPolicy(t, dir, testjwt.Policy("jwks.json", "  claim: baton_credential\n  leeway: 0s\n"))
	claims := testjwt.Claims(testjwt.Issuer, testjwt.Audience, "alice@example.com", time.Hour)
	claims["baton_credential"] = "ops"
	id, err := st.Bearer(k.Sign(t, claims), time.Now())
	if err != nil || id.Cred.ID != "ops" {
		t.Fatalf("Bearer = %+v, %v; want ops, named by baton_credential and not by sub", id, err)
	}
	if exp := time.Unix(claims["exp"].(int64), 0); !id.Expires.Equal(exp) {
		t.Errorf("Expires %v, want exp %v with no leeway", id.Expires, exp)
	}
}

// refusal is a token Bearer must refuse, and the reason it must give.
type refusal struct {
	name, token, reason string
}

func jwtRefusals(t *testing.T, k, stranger *testjwt.Key) []refusal {
	good := func() map[string]any { return testjwt.Claims(testjwt.Issuer, testjwt.Audience, "team-a", time.Hour) }
	with := func(key string, v any) map[string]any {
		c := good()
		if v == nil {
			delete(c, key)
		} else {
			c[key] = v
		}
		return c
	}
	now := time.Now()
	// The classic confusion: the public key's JWK as an HMAC secret.
	pub, err := json.Marshal(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	impostor := testjwt.NewKey(t, k.KID, jose.ES256)
	return []refusal{
		{"expired", k.Sign(t, with("exp", now.Add(-time.Minute).Unix())), "expired"},
		{"not yet valid", k.Sign(t, with("nbf", now.Add(time.Minute).Unix())), "not yet valid"},
		{"issued in the future", k.Sign(t, with("iat", now.Add(time.Minute).Unix())), "issued in the future"},
		{"without exp", k.Sign(t, with("exp", nil)), "no exp"},
		{"wrong audience", k.Sign(t, with("aud", "another-service")), "wrong audience"},
		{"no audience", k.Sign(t, with("aud", nil)), "wrong audience"},
		{"wrong issuer", k.Sign(t, with("iss", "https://evil.test/")), "wrong issuer"},
		{"unknown key", stranger.Sign(t, good()), "unknown key"},
		{"another key under a known kid", impostor.Sign(t, good()), "bad signature"},
		{"alg none", testjwt.Unsigned(t, k.KID, good()), "algorithm not allowed"},
		{"HS256 keyed with the public key", testjwt.SignHS256(t, k.KID, pub, good()), "algorithm not allowed"},
		{"tampered", testjwt.Tamper(t, k.Sign(t, good()), with("sub", "ops")), "bad signature"},
		{"a claim naming no credential", k.Sign(t, with("sub", "mallory")), "no credential of that name"},
		{"a claim that is not a name", k.Sign(t, with("sub", "team-a and more")), "no credential of that name"},
		{"a registered claim of the wrong type", k.Sign(t, with("sub", 42)), "malformed claims"},
		{"no claim", k.Sign(t, with("sub", nil)), "no credential claim"},
		{"signature stripped", strings.Join(strings.Split(k.Sign(t, good()), ".")[:2], ".") + ".", "bad signature"},
		{"claims not base64url", strings.Split(k.Sign(t, good()), ".")[0] + ".!!!.c2ln", "malformed"},
	}
}

func TestJWT_RefusesWhatFailsACheckAndSaysWhatFailed(t *testing.T) {
	k, stranger := testjwt.NewKey(t, "k1", jose.ES256), testjwt.NewKey(t, "k9", jose.ES256)
	st, _ := jwtStore(t, k)
	// The issuer's own clock: leeway passes a token a little off.
	skewed := testjwt.Claims(testjwt.Issuer, testjwt.Audience, "team-a", time.Hour)
	skewed["iat"] = time.Now().Add(auth.DefaultJWTLeeway / 2).Unix()
	if _, err := st.Bearer(k.Sign(t, skewed), time.Now()); err != nil {
		t.Errorf("iat within the leeway: %v", err)
	}
	for _, tc := range jwtRefusals(t, k, stranger) {
		t.Run(tc.name, func(t *testing.T) {
			id, err := st.Bearer(tc.token, time.Now())
			var pe *auth.ProofError
			if !errors.As(err, &pe) || !errors.Is(err, auth.ErrUnauthorized) || id.Cred != nil {
				t.Fatalf("Bearer = %+v, %v; want a *ProofError", id, err)
			}
			if pe.Via != auth.ViaJWT || pe.Reason != tc.reason || !pe.InvalidToken() {
				t.Errorf("via %q, reason %q; want jwt, %q", pe.Via, pe.Reason, tc.reason)
			}
			for _, part := range strings.Split(tc.token, ".") {
				if len(part) >= 8 && strings.Contains(err.Error(), part) {
					t.Errorf("the error %q quotes the token", err)
				}
			}
		})
	}
}

func TestJWT_AJWTIsCheckedOnlyAsAJWTWhenThePolicyTakesThem(t *testing.T) {
	k := testjwt.NewKey(t, "k1", jose.ES256)
	token := k.Sign(t, testjwt.Claims(testjwt.Issuer, testjwt.Audience, "team-a", time.Hour))
	for _, tc := range []struct {
		tok  string
		want bool
	}{
		{token, true},
		{testjwt.Unsigned(t, "k1", map[string]any{"sub": "x"}), true},
		{testjwt.OpsToken, false},
		{"abc.def.ghi", false},          // dots, but no JOSE header
		{"eyJmb28iOjF9.e30.sig", false}, // a JSON header without alg
		{strings.Replace(token, ".", "", 1), false},
	} {
		if got := auth.IsJWT(tc.tok); got != tc.want {
			t.Errorf("IsJWT(%.20s…) = %v, want %v", tc.tok, got, tc.want)
		}
	}
	// Without a jwt: section a JWT is a token like any other: listed, it
	// is accepted by its digest; with one, listing it is refused.
	doc := fmt.Sprintf("credentials:\n  - name: legacy\n    tokens: [%q]\n    rules: {\"\": read}\n", token)
	c, err := auth.ParsePolicy(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("a JWT listed as a token without jwt: %v", err)
	}
	if id, err := c.Bearer(token, time.Now()); err != nil || id.Via != auth.ViaToken {
		t.Errorf("Bearer of a listed JWT without jwt: = %+v, %v", id, err)
	}
	dir := t.TempDir()
	testjwt.WriteJWKS(t, filepath.Join(dir, "jwks.json"), k)
	_, err = auth.ParsePolicy(strings.NewReader(fmt.Sprintf("jwt: {jwks_file: %q}\n", filepath.Join(dir, "jwks.json")) + doc))
	if err == nil || !strings.Contains(err.Error(), "JWT's form") || strings.Contains(err.Error(), token) {
		t.Errorf("a JWT listed as a token with jwt: %v", err)
	}
}

func TestParsePolicy_RefusesABadJWTSectionOrJWKS(t *testing.T) {
	dir := t.TempDir()
	k := testjwt.NewKey(t, "k1", jose.ES256)
	jwks := func(name string, v any) string {
		path := filepath.Join(dir, name)
		testjwt.WriteJSON(t, path, v)
		return path
	}
	good := jwks("good.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.Public()}})
	noKid, hmacAlg, enc := k.Public(), k.Public(), k.Public()
	noKid.KeyID, hmacAlg.Algorithm, enc.Use = "", "HS256", "enc"
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weakPub := jose.JSONWebKey{Key: small.Public(), KeyID: "weak", Algorithm: "RS256"}
	for _, tc := range []struct{ name, section, want string }{
		{"unknown field", fmt.Sprintf("{jwks_file: %q, audiance: baton}", good), "unknown field"},
		{"no jwks_file", "{issuer: x}", "jwks_file is required"},
		{"bad leeway", fmt.Sprintf("{jwks_file: %q, leeway: soon}", good), "leeway"},
		{"leeway too long", fmt.Sprintf("{jwks_file: %q, leeway: 1h}", good), "leeway"},
		{"missing file", fmt.Sprintf("{jwks_file: %q}", filepath.Join(dir, "nope.json")), "no such file"},
		{"not JSON", fmt.Sprintf("{jwks_file: %q}", jwks("garbage.json", "not a key set")), "not a JSON Web Key Set"},
		{"private key", fmt.Sprintf("{jwks_file: %q}", jwks("private.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.Private()}})), "private key"},
		{"symmetric key", fmt.Sprintf("{jwks_file: %q}", jwks("oct.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "h", Algorithm: "HS256"}}})), "symmetric"},
		{"kid twice", fmt.Sprintf("{jwks_file: %q}", jwks("twice.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.Public(), testjwt.NewKey(t, "k1", jose.EdDSA).Public()}})), "given twice"},
		{"no kid", fmt.Sprintf("{jwks_file: %q}", jwks("nokid.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{noKid}})), "no kid"},
		{"an HMAC alg", fmt.Sprintf("{jwks_file: %q}", jwks("hsalg.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{hmacAlg}})), "not one baton accepts"},
		{"a weak RSA key", fmt.Sprintf("{jwks_file: %q}", jwks("weak.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{weakPub}})), "at least 2048"},
		{"encryption keys only", fmt.Sprintf("{jwks_file: %q}", jwks("enc.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{enc}})), "no signature key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "jwt: " + tc.section + "\ncredentials:\n  - name: a\n    rules: {\"\": read}\n"
			_, err := auth.ParsePolicy(strings.NewReader(doc))
			var pe *auth.ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want a *ParseError with %q", err, tc.want)
			}
		})
	}
}

func TestStore_ReloadRotatesTheJWKSAndKeepsTheOldOnABadOne(t *testing.T) {
	k1, k2 := testjwt.NewKey(t, "2026-01", jose.ES256), testjwt.NewKey(t, "2026-02", jose.EdDSA)
	st, jwksPath := jwtStore(t, k1)
	claims := testjwt.Claims(testjwt.Issuer, testjwt.Audience, "team-a", time.Hour)
	old, rotated := k1.Sign(t, claims), k2.Sign(t, claims)
	if _, err := st.Bearer(old, time.Now()); err != nil {
		t.Fatalf("k1's token before the rotation: %v", err)
	}
	testjwt.WriteJWKS(t, jwksPath, k2)
	if _, err := st.Reload(); err != nil {
		t.Fatalf("Reload with the rotated JWKS: %v", err)
	}
	if _, err := st.Bearer(rotated, time.Now()); err != nil {
		t.Errorf("k2's token after the rotation: %v", err)
	}
	var pe *auth.ProofError
	if _, err := st.Bearer(old, time.Now()); !errors.As(err, &pe) || pe.Reason != "unknown key" {
		t.Errorf("k1's token after the rotation: %v; want unknown key", err)
	}
	// A JWKS that cannot be used keeps the policy in force, and the error
	// names the file and the key.
	testjwt.WriteJSON(t, jwksPath, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k1.Private()}})
	if _, err := st.Reload(); err == nil || !strings.Contains(err.Error(), jwksPath) || !strings.Contains(err.Error(), `kid "2026-01"`) {
		t.Errorf("Reload with a private key in the JWKS: %v; want an error naming the file and the key", err)
	}
	if _, err := st.Bearer(rotated, time.Now()); err != nil {
		t.Errorf("k2's token after a failed reload: %v", err)
	}
	if st.Current().JWTKeys() != 1 {
		t.Errorf("JWTKeys = %d after a failed reload, want the 1 in force", st.Current().JWTKeys())
	}
}

// FuzzBearer feeds arbitrary bearer tokens, JWT-shaped or not, to a
// policy that takes JWTs: a refusal never quotes the token, and nothing
// proves ops but its listed token. (Another encoding of the signed seed
// may pass as team-a: base64url decoding ignores a last character's
// spare bits, and the signature covers the decoded bytes.)
func FuzzBearer(f *testing.F) {
	k := testjwt.NewKey(f, "k1", jose.ES256)
	st, _ := jwtStore(f, k)
	good := k.Sign(f, testjwt.Claims(testjwt.Issuer, testjwt.Audience, "team-a", 24*time.Hour))
	for _, seed := range []string{good, testjwt.Tamper(f, good, map[string]any{"sub": "ops"}), testjwt.Unsigned(f, "k1", map[string]any{"sub": "ops"}), testjwt.OpsToken, "a.b.c", "eyJhbGciOiJFUzI1NiJ9..", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		id, err := st.Bearer(token, time.Now())
		if err == nil {
			if id.Cred.ID == "ops" && token != testjwt.OpsToken || id.Cred.ID == "team-a" && id.Via != auth.ViaJWT {
				t.Fatalf("Bearer accepted a token nobody signed or listed, as %s via %s", id.Cred.ID, id.Via)
			}
			return
		}
		if len(token) >= auth.MinTokenLen && strings.Contains(err.Error(), token) {
			t.Fatalf("the error %q quotes the token", err)
		}
	})
}
