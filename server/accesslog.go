package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
)

// maxLoggedPath bounds the path in a log line. Lock and resource names are
// at most 128 characters, so every real route fits; a client sending
// megabytes of path gets them cut.
const maxLoggedPath = 512

// accessLog writes one line per request, at info, once the answer is sent:
// for an event stream that is when the stream ends, so its duration is
// the stream's. It runs outside recover and the request metrics, so the
// status it logs is the one the client got, even after a panic.
//
// It logs the path but never the query string: none of baton's query
// parameters is a secret today (release's ?token= is a fencing token,
// which the audit trail records anyway), but a query is where a careless
// client or a future parameter would put one, and a log line is copied to
// places nobody controls. Nor any header but the request ID: the
// Authorization header's token never appears, only the credential ID the
// auth middleware derived from it.
func accessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				// Render now, so the status logged is the one sent.
				c.Error(err)
			}
			if !log.Enabled(context.Background(), slog.LevelInfo) {
				return nil // a node at --log-level warn pays for no line it drops
			}
			req, res := c.Request(), c.Response()
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			path := req.URL.Path
			if len(path) > maxLoggedPath {
				path = path[:maxLoggedPath] + "…"
			}
			attrs := []slog.Attr{
				slog.String("request_id", res.Header().Get(requestIDHeader)),
				slog.String("method", req.Method),
				slog.String("route", route),
				slog.String("path", path),
				slog.Int("status", res.Status),
				slog.Duration("duration", time.Since(start)),
				slog.Int64("bytes_out", res.Size),
				slog.String("remote", req.RemoteAddr),
			}
			if cred, ok := c.Get(CredentialKey).(string); ok && cred != "" {
				attrs = append(attrs, slog.String("credential", cred))
			}
			// Not the request's context: it is often cancelled by now, and
			// the line must be written all the same.
			log.LogAttrs(context.Background(), slog.LevelInfo, "http request", attrs...)
			return nil
		}
	}
}
