package server

import (
	"bytes"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/web"
)

// dashboardCSP lets the dashboard load from, and connect to, this origin
// only: its script and stylesheet are files of their own (no inline script
// or style anywhere), and its one image is the icon. The browser test fails
// on any violation of this policy.
const dashboardCSP = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'"

// dashboardTypes adds what docsTypes lacks.
var dashboardTypes = map[string]string{".svg": "image/svg+xml"}

// registerDashboard serves the dashboard (package web) at / and its assets
// under web.Prefix, from files embedded in the binary. Every file is ours
// and changes with a build, so browsers revalidate each load (a 304 by
// ETag) rather than cache it.
func registerDashboard(e *echo.Echo) {
	files := docsIndex(web.Assets)
	for name, f := range files {
		if ct, ok := dashboardTypes[path.Ext(name)]; ok {
			f.contentType = ct
		}
		f.cache = "no-cache"
		files[name] = f
	}
	serve := func(c echo.Context, name string) error {
		f, ok := files[name]
		if !ok {
			return echo.ErrNotFound
		}
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, f.contentType)
		h.Set("Etag", f.etag)
		h.Set("Cache-Control", f.cache)
		http.ServeContent(c.Response(), c.Request(), name, time.Time{}, bytes.NewReader(f.body))
		return nil
	}
	headers := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("Content-Security-Policy", dashboardCSP)
			h.Set(echo.HeaderXContentTypeOptions, "nosniff")
			// The page has a Revoke button: no other site may frame it
			// and trick a click.
			h.Set(echo.HeaderXFrameOptions, "DENY")
			return next(c)
		}
	}
	e.GET("/", func(c echo.Context) error { return serve(c, "index.html") }, headers)
	e.GET(web.Prefix+"*", func(c echo.Context) error {
		name := c.Param("*")
		if name == "index.html" || strings.Contains(name, "/") {
			return echo.ErrNotFound // the page itself lives at / only
		}
		return serve(c, name)
	}, headers)
}
