// Package api holds baton's HTTP handlers (labstack/echo v4), a file per
// resource (locks.go, sessions.go, fenced.go, history.go, ops.go): the
// request and response types of docs/API.md, their validation, the one
// table of routes (Routes: method, path, handler, role, query, stream)
// and the one table that maps errors to RFC 9457 problem+json answers.
//
// Handlers return errors; ErrorHandler renders every one of them, so a
// handler never writes an error body itself:
//
//	e := echo.New()
//	e.HTTPErrorHandler = api.ErrorHandler(logger)
//	a := api.New(engine, api.Options{})
//	a.Register(e, a.Routes())
//
// A new resource is a file of handlers (with their swag annotations) and
// its rows in Routes.
package api

// The general information of the OpenAPI document, read by swag (see
// package openapi, which generates the document from these annotations).
//
//	@title				baton API
//	@version			1
//	@description		A distributed lock service with fencing tokens, on etcd. Every grant carries a token that grows with every grant of any lock; resources protected by a lock reject writes that carry an older token. Errors are RFC 9457 problem details with a stable `code`.
//	@BasePath			/
//	@tag.name			locks
//	@tag.description	Acquire, renew, release and revoke locks with fencing tokens.
//	@tag.name			sessions
//	@tag.description	One lease shared by many locks.
//	@tag.name			elections
//	@tag.description	Campaign for leadership of a name, observe and proclaim; the leader's term is its fencing token.
//	@tag.name			semaphores
//	@tag.description	Up to a limit of permits of one name held at once, each with its own token.
//	@tag.name			rwlocks
//	@tag.description	Read/write locks: readers share, a writer excludes everyone, first come first served.
//	@tag.name			locksets
//	@tag.description	Several locks taken all or nothing, in one transaction, with one token.
//	@tag.name			fenced
//	@tag.description	A register that rejects writes carrying stale tokens.
//	@tag.name			kv
//	@tag.description	Keys of coordination data: compare-and-set, session-bound (ephemeral) keys, fenced writes, blocking reads and a stream of changes.
//	@tag.name			history
//	@tag.description	The audit trail.
//	@tag.name			operations
//	@tag.description	Health, readiness, cluster status and metrics.
//
//	@securityDefinitions.apikey	BearerAuth
//	@in							header
//	@name						Authorization
//	@description				When the node runs with --auth-file, every /v1 call and /metrics need "Authorization: Bearer TOKEN", and the token's role must allow the call: read (list and get locks, sessions and fenced values, history, events, cluster, metrics), write (also acquire, renew, release, sessions, fenced writes), admin (also revoke, and act on holds and sessions of other credentials). A missing or unknown token answers 401 `unauthorized`, a role too weak 403 `forbidden`. Without --auth-file no token is needed.
