package server

import (
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/web"
)

// dashboardCSP lets the dashboard load from, and connect to, this origin
// only: its script and stylesheet are files of their own (no inline script
// or style anywhere), and its one image is the icon. It has a Revoke
// button: no site may frame it. The browser test fails on any violation of
// this policy.
const dashboardCSP = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'"

// dashboardTypes adds what docsTypes lacks.
var dashboardTypes = map[string]string{".svg": "image/svg+xml"}

// dashboardRoutes serve the dashboard (package web) at / and its assets
// under web.Prefix, from files embedded in the binary. Every file is ours
// and changes with a build, so browsers revalidate each load (a 304 by
// ETag) rather than cache it.
func dashboardRoutes() []api.Route {
	files := docsIndex(web.Assets)
	for name, f := range files {
		if ct, ok := dashboardTypes[path.Ext(name)]; ok {
			f.contentType = ct
		}
		f.cache = "no-cache"
		files[name] = f
	}
	headers := pageHeaders(dashboardCSP)
	return []api.Route{
		{Method: http.MethodGet, Path: "/", Handler: headers(func(c echo.Context) error { return files.serve(c, "index.html") }), Open: true, AnyQuery: true},
		{Method: http.MethodGet, Path: web.Prefix + "*", Handler: headers(func(c echo.Context) error {
			name := c.Param("*")
			if name == "index.html" || strings.Contains(name, "/") {
				return echo.ErrNotFound // the page itself lives at / only
			}
			return files.serve(c, name)
		}), Open: true, AnyQuery: true},
	}
}
