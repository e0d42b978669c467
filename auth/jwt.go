package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwtAlgorithms are the signature algorithms a bearer JWT may use:
// asymmetric ones only. "none" proves nothing, and with HMAC the JWKS file
// would be a secret that lets whoever reads it mint any credential's
// tokens.
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// Limits of the jwt: section and of a JWT.
const (
	// DefaultJWTLeeway is how far exp, nbf and iat may be off when the
	// policy sets no leeway: clocks drift.
	DefaultJWTLeeway = 30 * time.Second
	// MaxJWTLeeway bounds the leeway: more would stretch every token's
	// life by as much.
	MaxJWTLeeway = 5 * time.Minute
	// MaxJWTLen bounds a JWT: ID tokens with many claims outgrow
	// MaxTokenLen.
	MaxJWTLen = 16 << 10
)

// jwtVerifier checks bearer JWTs against the keys of a JWKS file and the
// policy file's jwt: section. It is immutable: a reload makes a new one.
type jwtVerifier struct {
	// keys are the JWKS file's signature keys by key ID.
	keys     map[string]jose.JSONWebKey
	issuer   string
	audience string
	claim    string
	leeway   time.Duration
}

// IsJWT reports whether token has a JWT's compact form: three base64url
// parts, the first a JSON object with an "alg". Random tokens (hex,
// base64url) never have it.
func IsJWT(token string) bool {
	head, rest, ok := strings.Cut(token, ".")
	if !ok || strings.Count(rest, ".") != 1 || len(token) > MaxJWTLen {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return false
	}
	var h struct {
		Alg *string `json:"alg"`
	}
	return json.Unmarshal(b, &h) == nil && h.Alg != nil
}

// JWTKeys is the number of keys bearer JWTs are checked against: 0
// without a jwt: section.
func (c *Credentials) JWTKeys() int {
	if c.jwt == nil {
		return 0
	}
	return len(c.jwt.keys)
}

// jwtFailure is a JWT that fails a check: reason for logs, detail for the
// client.
func jwtFailure(reason, detail string, args ...any) *ProofError {
	return &ProofError{Via: ViaJWT, Reason: reason, Detail: "the bearer JWT " + fmt.Sprintf(detail, args...)}
}

// identify checks token, a JWT, and returns the credential of c that its
// claim names. The checks, in order: an allowed algorithm; a key ID that
// names a key of the JWKS file (whose alg, if set, is the token's); the
// signature; exp present; exp, nbf and iat within the leeway of now; iss
// and aud when configured; the claim a string that names a credential.
func (v *jwtVerifier) identify(c *Credentials, token string, now time.Time) (Identity, error) {
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	var alg *jose.ErrUnexpectedSignatureAlgorithm
	switch {
	case errors.As(err, &alg):
		return Identity{}, jwtFailure("algorithm not allowed", "is signed with an algorithm baton does not accept; it accepts %s", algorithmList())
	case err != nil || len(tok.Headers) != 1:
		return Identity{}, jwtFailure("malformed", "is not a well-formed signed token (JWS compact form)")
	}
	h := tok.Headers[0]
	if h.KeyID == "" {
		return Identity{}, jwtFailure("no key ID", "names no key (kid): baton finds the key by it")
	}
	key, ok := v.keys[h.KeyID]
	if !ok {
		return Identity{}, jwtFailure("unknown key", "is signed by a key (kid) that is not in the JWKS file")
	}
	if key.Algorithm != "" && key.Algorithm != h.Algorithm {
		return Identity{}, jwtFailure("algorithm not the key's", "uses an algorithm that is not its key's (the JWKS gives the key an alg)")
	}
	var std jwt.Claims
	var all map[string]json.RawMessage
	if err := tok.Claims(key.Key, &std, &all); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return Identity{}, jwtFailure("bad signature", "has a signature that does not verify with its key")
		}
		return Identity{}, jwtFailure("malformed claims", "has claims that are not a JSON object of the registered types")
	}
	if std.Expiry == nil {
		return Identity{}, jwtFailure("no exp", "has no exp claim: baton accepts only tokens that expire")
	}
	if f := v.checkClaims(std, now); f != nil {
		return Identity{}, f
	}
	name, f := v.claimValue(all)
	if f != nil {
		return Identity{}, f
	}
	cred, ok := c.named[name]
	if !ok {
		return Identity{}, jwtFailure("no credential of that name", "names credential %q in its %s claim, which the policy file does not have", name, v.claim)
	}
	return Identity{Cred: cred, Via: ViaJWT, Expires: std.Expiry.Time().Add(v.leeway)}, nil
}

// checkClaims checks the registered claims against now and the
// configured issuer and audience.
func (v *jwtVerifier) checkClaims(std jwt.Claims, now time.Time) *ProofError {
	want := jwt.Expected{Issuer: v.issuer, Time: now}
	if v.audience != "" {
		want.AnyAudience = jwt.Audience{v.audience}
	}
	switch err := std.ValidateWithLeeway(want, v.leeway); {
	case err == nil:
		return nil
	case errors.Is(err, jwt.ErrExpired):
		return jwtFailure("expired", "expired at %s (exp, with a leeway of %s)", std.Expiry.Time().UTC().Format(time.RFC3339), v.leeway)
	case errors.Is(err, jwt.ErrNotValidYet):
		return jwtFailure("not yet valid", "is not valid before %s (nbf, with a leeway of %s)", std.NotBefore.Time().UTC().Format(time.RFC3339), v.leeway)
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return jwtFailure("issued in the future", "was issued in the future (iat, with a leeway of %s): check the issuer's clock", v.leeway)
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return jwtFailure("wrong issuer", "is from another issuer (iss) than the policy's")
	case errors.Is(err, jwt.ErrInvalidAudience):
		return jwtFailure("wrong audience", "is meant for another audience (aud) than the policy's %q", v.audience)
	}
	return jwtFailure("invalid claims", "has registered claims that do not hold")
}

// claimValue is the configured claim's value, which must be a string of
// a credential name's form.
func (v *jwtVerifier) claimValue(all map[string]json.RawMessage) (string, *ProofError) {
	raw, ok := all[v.claim]
	if !ok {
		return "", jwtFailure("no credential claim", "has no %s claim, which names its credential", v.claim)
	}
	var name string
	if json.Unmarshal(raw, &name) != nil || !credentialName.MatchString(name) {
		// Not quoted: the value was not meant for baton.
		return "", jwtFailure("no credential of that name", "has a %s claim that is not a credential's name", v.claim)
	}
	return name, nil
}

func algorithmList() string {
	s := make([]string, len(jwtAlgorithms))
	for i, a := range jwtAlgorithms {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// allowedAlgorithm reports whether a is one of jwtAlgorithms.
func allowedAlgorithm(a string) bool {
	return slices.Contains(jwtAlgorithms, jose.SignatureAlgorithm(a))
}
