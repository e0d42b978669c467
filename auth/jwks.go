package auth

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// jwtDoc is a policy file's jwt: section:
//
//	jwt:
//	  jwks_file: /etc/baton/jwks.json   # the issuer's public keys; relative to the policy file
//	  issuer: https://idp.example.com/  # iss must be this, when set
//	  audience: baton                   # aud must hold this, when set
//	  claim: sub                        # names the credential (default sub)
//	  leeway: 30s                       # for exp, nbf and iat (default 30s, at most 5m)
type jwtDoc struct {
	JWKSFile string `json:"jwks_file"`
	Issuer   string `json:"issuer"`
	Audience string `json:"audience"`
	Claim    string `json:"claim"`
	Leeway   string `json:"leeway"`
}

// Limits of a JWKS file.
const (
	maxJWKS    = 1 << 20
	minRSABits = 2048
)

// newJWTVerifier reads d and the JWKS file it names, a relative path
// being relative to dir, or says why it cannot.
func newJWTVerifier(d *jwtDoc, dir string) (*jwtVerifier, string) {
	if d.JWKSFile == "" {
		return nil, "jwks_file is required: the JSON Web Key Set file of the keys that sign the tokens"
	}
	v := &jwtVerifier{issuer: d.Issuer, audience: d.Audience, claim: cmp.Or(d.Claim, "sub"), leeway: DefaultJWTLeeway}
	if d.Leeway != "" {
		l, err := time.ParseDuration(d.Leeway)
		if err != nil || l < 0 || l > MaxJWTLeeway {
			return nil, fmt.Sprintf("leeway must be a duration from 0s to %s, such as 30s", MaxJWTLeeway)
		}
		v.leeway = l
	}
	path := d.JWKSFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	keys, err := loadJWKS(path)
	if err != nil {
		return nil, fmt.Sprintf("jwks_file %s: %v", path, err)
	}
	v.keys = keys
	return v, ""
}

// loadJWKS reads the signature keys of a JWKS file (RFC 7517) by key ID.
// Keys for encryption (use: enc) are skipped, as an identity provider's
// JWKS may hold them. It refuses, rather than skips, what would make
// tokens mean something else than the operator thinks: private and
// symmetric keys, keys without a kid or with one given twice, algorithms
// outside jwtAlgorithms, RSA keys under 2048 bits.
func loadJWKS(path string) (map[string]jose.JSONWebKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJWKS+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxJWKS {
		return nil, fmt.Errorf("longer than %d bytes", maxJWKS)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	keys := map[string]jose.JSONWebKey{}
	for i, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if k.Use == "enc" {
			continue
		}
		if reason := checkKey(k); reason != "" {
			return nil, fmt.Errorf("key %d (kid %q): %s", i+1, k.KeyID, reason)
		}
		if _, dup := keys[k.KeyID]; dup {
			return nil, fmt.Errorf("key %d: kid %q is given twice: a token names one key", i+1, k.KeyID)
		}
		keys[k.KeyID] = k
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("holds no signature key")
	}
	return keys, nil
}

// checkKey says what makes k unfit to check a token's signature.
func checkKey(k jose.JSONWebKey) string {
	switch key := k.Key.(type) {
	case []byte:
		return "a symmetric (oct) key: baton accepts asymmetric signatures only"
	case *rsa.PublicKey:
		if key.N.BitLen() < minRSABits {
			return fmt.Sprintf("an RSA key of %d bits; at least %d are needed", key.N.BitLen(), minRSABits)
		}
	case *ecdsa.PublicKey, ed25519.PublicKey:
	case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
		return "a private key: give its public half; the JWKS file needs no secret"
	default:
		return fmt.Sprintf("a key of type %T, which baton does not accept: use RSA, EC or Ed25519 (OKP)", key)
	}
	switch {
	case k.KeyID == "":
		return "no kid: a token names its key by it"
	case k.Use != "" && k.Use != "sig":
		return fmt.Sprintf("use %q: want sig", k.Use)
	case k.Algorithm != "" && !allowedAlgorithm(k.Algorithm):
		return fmt.Sprintf("alg %q is not one baton accepts (%s)", k.Algorithm, algorithmList())
	case !k.Valid():
		return "not a valid key"
	}
	return ""
}
