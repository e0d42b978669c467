package testjwt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Key is a private signing key with its key ID and algorithm.
type Key struct {
	KID  string
	Alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// NewKey makes a key for alg: ES256 (P-256), ES384 (P-384), EdDSA
// (Ed25519) or an RSA algorithm (2048 bits).
func NewKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) *Key {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.ES384:
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("testjwt: no key for %s", alg)
	}
	if err != nil {
		t.Fatalf("testjwt: generate a %s key: %v", alg, err)
	}
	return &Key{KID: kid, Alg: alg, priv: priv}
}

// Public is the key's public half as a JWKS lists it, with kid, alg and
// use "sig".
func (k *Key) Public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.KID, Algorithm: string(k.Alg), Use: "sig"}
}

// Private is the key's private half as a JWK: what a JWKS file must not
// hold.
func (k *Key) Private() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv, KeyID: k.KID, Algorithm: string(k.Alg), Use: "sig"}
}

// Sign is a compact JWT of claims signed by k, naming k's kid.
func (k *Key) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	return sign(t, jose.SigningKey{Algorithm: k.Alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.KID}}, claims)
}

// SignHS256 is a compact JWT of claims signed with HMAC-SHA256 and
// secret, naming kid: what a verifier that takes a public key as an HMAC
// secret would accept.
func SignHS256(t testing.TB, kid string, secret []byte, claims map[string]any) string {
	t.Helper()
	return sign(t, jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: secret, KeyID: kid}}, claims)
}

func sign(t testing.TB, key jose.SigningKey, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatalf("testjwt: signer: %v", err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatalf("testjwt: sign: %v", err)
	}
	return tok
}

// Unsigned is a JWT of claims with alg "none" naming kid, and no
// signature.
func Unsigned(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	return part(t, map[string]any{"alg": "none", "kid": kid, "typ": "JWT"}) + "." + part(t, claims) + "."
}

// Tamper replaces the claims of a signed token, keeping its header and
// signature.
func Tamper(t testing.TB, token string, claims map[string]any) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("testjwt: not a compact JWT")
	}
	parts[1] = part(t, claims)
	return strings.Join(parts, ".")
}

func part(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Claims are a token's usual claims: iss, aud and sub as given, iat now
// and exp ttl from now. A test changes or deletes some to make a bad one.
func Claims(iss, aud, sub string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{"iss": iss, "aud": aud, "sub": sub, "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
}

// WriteJWKS writes a JWKS of the keys' public halves at path, replacing
// it atomically as an operator should, so a reload never reads half a
// file.
func WriteJWKS(t testing.TB, path string, keys ...*Key) {
	t.Helper()
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.Public())
	}
	WriteJSON(t, path, set)
}

// WriteJSON writes v as JSON at path, atomically.
func WriteJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("testjwt: marshal: %v", err)
	}
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// The issuer, audience and operator's token of Policy.
const (
	Issuer   = "https://idp.test/"
	Audience = "baton"
	OpsToken = "ops-token-0123456789abcdef"
)

// Policy is a policy file whose jwt: section reads the JWKS at jwks (a
// path) and wants Issuer and Audience, with the settings of extra (YAML
// lines under jwt:, each ending in a newline), and whose credentials are
// team-a, proved by JWTs only (write on "team-a."), and ops, by OpsToken
// too (admin on every name).
func Policy(jwks, extra string) string {
	return fmt.Sprintf(`jwt:
  jwks_file: %q
  issuer: %q
  audience: %q
%scredentials:
  - name: team-a
    rules: {"team-a.": write}
  - name: ops
    tokens: [%q]
    rules: {"": admin}
`, jwks, Issuer, Audience, extra, OpsToken)
}
