package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/openapi"
)

// docsCSP lets the docs page load from and connect to this origin only, so
// "Try it out" cannot send requests anywhere else. Swagger UI draws its icons
// from data: URIs, and some of its views inject inline styles; scripts stay
// 'self' only, which is why the initializer is a file of its own. No site
// may frame the page: "Try it out" sends the operator's token, so a framing
// site could trick clicks into calls (frame-ancestors does not fall back to
// default-src, hence its own directive). The browser test fails on any
// violation of this policy.
const docsCSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"

// docsTypes fixes the content type by extension rather than leaving it to
// mime.TypeByExtension, which the host's mime.types can change.
var docsTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".png":  "image/png",
	"":      "text/plain; charset=utf-8", // LICENSE, NOTICE, VERSION
	".txt":  "text/plain; charset=utf-8",
}

// docsOurs are the files baton writes, which change with every build;
// the rest is vendored Swagger UI, which changes only on an upgrade.
var docsOurs = map[string]bool{"index.html": true, "swagger-initializer.js": true}

// docsFile is one embedded file, read at startup.
type docsFile struct {
	body        []byte
	contentType string
	etag        string
	cache       string
}

// docsRoutes serve the interactive API documentation (Swagger UI over
// /openapi.json) at /docs, from files embedded in the binary.
func docsRoutes() []api.Route {
	files := docsIndex(openapi.UI)
	headers := pageHeaders(docsCSP)
	index := func(c echo.Context) error { return files.serve(c, "index.html") }
	return []api.Route{
		{Method: http.MethodGet, Path: "/docs", Handler: headers(index), Open: true, AnyQuery: true},
		{Method: http.MethodGet, Path: "/docs/*", Handler: headers(func(c echo.Context) error {
			name := c.Param("*")
			if name == "" {
				return index(c)
			}
			return files.serve(c, name)
		}), Open: true, AnyQuery: true},
	}
}

// docsIndex reads the files under fsys (about 2 MB, held for the life of the
// server) with their headers. Hashing them once here gives every file a
// strong ETag, so a browser revalidating the 1.7 MB bundle gets a 304 instead
// of the bundle again (embedded files have no modification time to go by).
func docsIndex(fsys fs.FS) assets {
	files := make(assets)
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct, ok := docsTypes[path.Ext(name)]
		if !ok {
			ct = "application/octet-stream"
		}
		cache := "public, max-age=86400"
		if docsOurs[name] {
			cache = "no-cache"
		}
		files[name] = docsFile{
			body:        b,
			contentType: ct,
			etag:        `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`,
			cache:       cache,
		}
		return nil
	})
	if err != nil {
		// The files are embedded: only a broken build gets here.
		panic("server: reading the embedded docs: " + err.Error())
	}
	return files
}

// assets are embedded files by name, served with their type, ETag and
// caching rule.
type assets map[string]docsFile

// serve answers with the file name, or a 404 problem.
func (a assets) serve(c echo.Context, name string) error {
	f, ok := a[name]
	if !ok {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, f.contentType)
	h.Set("Etag", f.etag)
	h.Set("Cache-Control", f.cache)
	// ServeContent answers 304 to a matching If-None-Match, and ranges.
	http.ServeContent(c.Response(), c.Request(), name, time.Time{}, bytes.NewReader(f.body))
	return nil
}

// pageHeaders sets the security headers of the pages people open: the
// page's Content-Security-Policy (whose frame-ancestors 'none' keeps every
// other site from framing it, which could trick a click on a button that
// changes things), no content sniffing, and X-Frame-Options: DENY for
// browsers that know no frame-ancestors.
func pageHeaders(csp string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("Content-Security-Policy", csp)
			h.Set(echo.HeaderXContentTypeOptions, "nosniff")
			h.Set(echo.HeaderXFrameOptions, "DENY")
			return next(c)
		}
	}
}
