// Package web holds baton's dashboard: one HTML page, its script and its
// stylesheet, written by hand (vanilla JavaScript and CSS, no framework, no
// build step) and embedded in the binary with go:embed, so that the
// dashboard works offline and `go run .` needs nothing else.
//
// The page is a client of the public HTTP API and nothing more: it reads
// GET /v1/locks, GET /v1/locks/{name} (for waiters), GET /v1/history and
// GET /v1/cluster, follows GET /v1/events (Server-Sent Events, read with
// fetch() so that it can send a bearer token) to update itself live, and
// calls POST /v1/locks/{name}/revoke. When the API answers 401 it asks for a
// token, which it keeps in sessionStorage only. It loads nothing from
// another origin and uses no inline script or style, so it runs under a
// strict Content-Security-Policy.
//
// index.html names its assets by absolute /ui/ paths; the server mounts
// Assets there and serves index.html at /:
//
//	e.GET("/", func(c echo.Context) error {
//		b, _ := fs.ReadFile(web.Assets, "index.html")
//		return c.HTMLBlob(http.StatusOK, b)
//	})
//	e.GET("/ui/*", echo.WrapHandler(http.StripPrefix("/ui/", http.FileServerFS(web.Assets))))
package web
