// Package auth holds baton's credentials and what they may do: the parsers
// of the --auth-file, the rules by name prefix that decide each request's
// names, and the Store that the HTTP server checks every request's token
// against and that SIGHUP reloads.
//
// An auth file in the line format has one credential a line, ROLE TOKEN
// [PREFIX…], with full-line comments (#) and blank lines allowed:
//
//	# operators
//	admin 4f1c0a3e9b2d7c6e5f8a1b0c9d2e3f4a
//	# services that take locks
//	write 9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d
//	# the billing team's service: names under billing. only
//	write 7f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c billing.
//	# dashboards and monitoring
//	read  0123456789abcdef0123456789abcdef
//
// A file named *.yaml, *.yml or *.json is a policy file instead
// (policyfile.go): named credentials, each with tokens, rules per prefix
// and quotas. A policy file's credentials may also be proved without a
// shared secret: by a client certificate whose name (URI, DNS or email
// SAN, or CommonName) a credential lists under certificates:
// (certificate.go), or by a bearer JWT, signed by a key of the JWKS file
// its jwt: section names, whose claim names the credential (jwt.go,
// jwks.go). Bearer and Certificate return the Identity a request proves,
// or a *ProofError saying what failed.
//
// Roles nest: admin may do what write may, and write what read may. A
// credential's Rules give a role per prefix, and of the rules that cover a
// name the longest prefix decides (policy.go); a line without prefixes is
// a rule on the empty prefix, every name. A token is at least MinTokenLen
// printable ASCII characters without whitespace, and appears once. Errors
// name the line or the credential, never the token or any other field of
// a line: a token written in the role's place must not end up in a log.
//
// The Store keeps SHA-256 digests of the tokens, never the tokens, and
// compares digests in constant time (crypto/subtle), so neither the content
// nor the length of a valid token leaks through the time a check takes.
// Each credential has a non-secret ID, its name in a policy file or, for a
// line, "cred-" and the first 12 hex digits of the token's SHA-256, that
// logs, rate limits and the lock engine's ownership checks use instead of
// the token.
//
//	st, err := auth.Load("/etc/baton/auth")
//	if err != nil { ... } // names the line at fault
//	id, err := st.Bearer(token, time.Now()) // or st.Certificate(verifiedLeaf)
//	if err != nil { ... } // 401, a *ProofError
//	if err := id.Cred.Rules.Check(name, auth.Write); err != nil { ... } // 403, a *ScopeError
//	...
//	_, err = st.Reload() // on SIGHUP: a bad file, or a bad JWKS, keeps the old credentials
package auth
