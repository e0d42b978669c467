package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"time"
)

// How a request proved its credential: Identity.Via and ProofError.Via.
const (
	ViaToken       = "token"       // a bearer token listed in the auth file
	ViaJWT         = "jwt"         // a bearer JWT of the policy file's jwt: issuer
	ViaCertificate = "certificate" // a client certificate the TLS layer verified
)

// Identity is the credential a request proved, and how.
type Identity struct {
	// Cred is shared and must not be changed.
	Cred *Credential
	// Via is ViaToken, ViaJWT or ViaCertificate.
	Via string
	// Expires is when the proof stops holding: a JWT's exp plus the
	// leeway, a certificate's NotAfter. It is zero for a token, which
	// holds until a reload removes it. Long requests (event streams) end
	// then.
	Expires time.Time
}

// ProofError is a proof of a credential that does not hold: an unknown
// token, a JWT that fails a check, a client certificate that names no
// credential. It unwraps to ErrUnauthorized. Neither field quotes a
// token.
type ProofError struct {
	// Via is what was offered: ViaToken, ViaJWT or ViaCertificate; ""
	// for nothing (no Authorization header, or a malformed one).
	Via string
	// Reason is a short phrase for logs: "unknown token", "expired",
	// "wrong audience", "unknown key", "no credential of that name"…
	Reason string
	// Detail is a sentence for the client: what failed and what to do.
	Detail string
	// Subject is the certificate's subject when Via is ViaCertificate,
	// for logs: the CA vouched for it.
	Subject string
}

func (e *ProofError) Error() string { return ErrUnauthorized.Error() + ": " + e.Detail }

// Unwrap makes errors.Is(err, ErrUnauthorized) hold.
func (e *ProofError) Unwrap() error { return ErrUnauthorized }

// InvalidToken reports whether a bearer token was at fault, for RFC
// 6750's error="invalid_token".
func (e *ProofError) InvalidToken() bool { return e.Via == ViaToken || e.Via == ViaJWT }

// Bearer returns the identity a bearer token proves. With a policy file's
// jwt: section, a token of a JWT's form (see IsJWT) is checked as a JWT
// and only as one; any other token is looked up among the listed tokens.
// now is the time a JWT's exp, nbf and iat are checked against.
func (c *Credentials) Bearer(token string, now time.Time) (Identity, error) {
	if c.jwt != nil && IsJWT(token) {
		return c.jwt.identify(c, token, now)
	}
	if cred, ok := c.lookup(token); ok {
		return Identity{Cred: cred, Via: ViaToken}, nil
	}
	return Identity{}, &ProofError{Via: ViaToken, Reason: "unknown token", Detail: "the bearer token is not valid"}
}

// lookup is Store.Lookup over c.
func (c *Credentials) lookup(token string) (*Credential, bool) {
	if token == "" || len(token) > MaxTokenLen {
		return nil, false
	}
	sum := sha256.Sum256([]byte(token))
	var found *Credential
	match := 0
	for _, e := range c.entries {
		if subtle.ConstantTimeCompare(sum[:], e.digest[:]) == 1 {
			found, match = e.cred, 1
		}
	}
	return found, match == 1
}

// Bearer is Credentials.Bearer over the credentials in force.
func (s *Store) Bearer(token string, now time.Time) (Identity, error) {
	return s.cur.Load().Bearer(token, now)
}
