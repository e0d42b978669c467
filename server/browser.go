package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
)

// browserSafety refuses what a web page of another site can make the
// browser of anyone who reaches the node send, before any handler runs, so
// a refused request has done nothing:
//
//   - a request that changes state (any method but GET, HEAD and OPTIONS)
//     that the browser marks as coming from a page of another origin:
//     Sec-Fetch-Site other than same-origin or none, or, from browsers
//     without it, an Origin whose host is not the Host asked for. 403
//     cross_origin. net/http's CrossOriginProtection decides.
//   - a request that changes state and carries a body (any byte of one)
//     without Content-Type: application/json (api.CheckMediaType). 415
//     unsupported_media_type. A page can send text/plain, form and
//     multipart bodies anywhere without a CORS preflight, never a JSON
//     one; this holds for the routes whose body is optional too, where a
//     blank form body would otherwise pass for none.
//
// Clients that are not browsers (curl, the Go client, the CLI) send no
// Sec-Fetch-Site and no Origin, and pass. The dashboard and /docs are
// pages of the node itself: same-origin. A reverse proxy that rewrites
// Host changes nothing for browsers that send Sec-Fetch-Site (all of them
// since 2023).
//
// Requests that matched no route (404, 405) pass to their answer: they do
// nothing, and which routes exist is no secret.
func browserSafety(routes routeTable, log *slog.Logger) echo.MiddlewareFunc {
	cop := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			switch req.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				return next(c)
			}
			if routes.of(c) == nil {
				return next(c)
			}
			if err := cop.Check(req); err != nil {
				log.Info("request refused", "status", http.StatusForbidden, "method", req.Method, "route", c.Path(), "remote", c.RealIP(),
					"reason", "cross_origin", "origin", clip(req.Header.Get("Origin")), "sec_fetch_site", clip(req.Header.Get("Sec-Fetch-Site")))
				return fmt.Errorf("%w: %s", ErrCrossOrigin, crossOriginDetail(req))
			}
			if carriesBody(req) {
				if err := api.CheckMediaType(req.Header); err != nil {
					return err
				}
			}
			return next(c)
		}
	}
}

// crossOriginDetail says why a browser's request was taken for another
// origin's.
func crossOriginDetail(req *http.Request) string {
	const rest = "; this node takes requests that change state only from its own pages (the dashboard, /docs) and from clients that are not browsers"
	if s := req.Header.Get("Sec-Fetch-Site"); s != "" {
		return fmt.Sprintf("the browser sent this request for a page of another origin (Sec-Fetch-Site: %s)%s", clip(s), rest)
	}
	return fmt.Sprintf("the browser sent this request for a page of origin %q, not this node's own (Host %q)%s", clip(req.Header.Get("Origin")), clip(req.Host), rest)
}

// clip bounds a header value quoted in a log line or a problem.
func clip(s string) string {
	const max = 256
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// carriesBody reports whether req has a body of at least one byte. A body
// of unknown length (chunked) is peeked at, and the byte read is put back.
// A body that cannot be read counts as one: it must say it is JSON, and
// the handler that reads it reports the failure.
func carriesBody(req *http.Request) bool {
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		return false
	case req.ContentLength > 0:
		return true
	}
	var b [1]byte
	n, err := io.ReadFull(req.Body, b[:])
	if n == 1 {
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b[:]), req.Body), req.Body}
		return true
	}
	return err != io.EOF
}
