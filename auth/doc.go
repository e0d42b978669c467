// Package auth holds baton's bearer-token credentials: the parser of the
// --auth-file, and the Store that the HTTP server checks every request's
// token against and that SIGHUP reloads.
//
// An auth file has one credential a line, ROLE TOKEN, with full-line
// comments (#) and blank lines allowed:
//
//	# operators
//	admin 4f1c0a3e9b2d7c6e5f8a1b0c9d2e3f4a
//	# services that take locks
//	write 9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d
//	# dashboards and monitoring
//	read  0123456789abcdef0123456789abcdef
//
// Roles nest: admin may do what write may, and write what read may. A token
// is at least MinTokenLen printable ASCII characters without whitespace, and
// appears once. Errors name the line, never the token or any other field of
// it: a token written in the role's place must not end up in a log.
//
// The Store keeps SHA-256 digests of the tokens, never the tokens, and
// compares digests in constant time (crypto/subtle), so neither the content
// nor the length of a valid token leaks through the time a check takes.
// Each credential has a non-secret ID, "cred-" and the first 12 hex digits
// of the token's SHA-256, that logs, rate limits and the lock engine's
// ownership checks use instead of the token.
//
//	st, err := auth.Load("/etc/baton/auth")
//	if err != nil { ... } // names the line at fault
//	cred, ok := st.Check(token)
//	if !ok { ... } // 401
//	if !cred.Role.Allows(auth.Write) { ... } // 403
//	...
//	err = st.Reload() // on SIGHUP: a bad file keeps the old credentials
package auth
