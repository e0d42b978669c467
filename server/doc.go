// Package server builds baton's HTTP server: the echo instance with its
// middleware, the API routes, /metrics, the OpenAPI document and /docs,
// the dashboard, and a graceful shutdown that drains requests in flight.
//
// With Config.Auth set, every /v1 route and /metrics need a credential
// whose role allows the call (each route's row of Server.Routes says which;
// api.Register refuses a row without a decision), and the request's credential reaches the
// lock engine's ownership checks (lock.Caller). The credential is proved
// by a bearer token (a listed token, or a JWT when the policy file has a
// jwt: section) or, without an Authorization header, by a client
// certificate that the TLS layer verified and the policy file lists:
//
//	store, err := auth.Load("/etc/baton/auth")
//	srv := server.New(server.Config{Engine: eng, Trail: tr, Logger: logger, Auth: store})
//	go srv.Serve(listener)
//	...
//	srv.Shutdown(ctx)
//
// Whatever the configuration, a request that changes state is refused
// before any handler runs when a browser marks it as sent for a page of
// another origin (403 cross_origin) or when its body is not sent as
// application/json (415 unsupported_media_type); Config.AllowedHosts
// (DefaultAllowedHosts for a listen address) limits the Host names
// answered (421 host_not_allowed). docs/SECURITY.md says why.
package server
