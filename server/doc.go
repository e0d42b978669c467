// Package server builds baton's HTTP server: the echo instance with its
// middleware, the API routes, /metrics, the OpenAPI document and /docs,
// the dashboard, and a graceful shutdown that drains requests in flight.
//
//	srv := server.New(server.Config{Engine: eng, Logger: logger})
//	go srv.Serve(listener)
//	...
//	srv.Shutdown(ctx)
package server
