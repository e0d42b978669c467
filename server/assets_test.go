package server_test

import (
	"net/http"
	"path"
	"strings"
	"testing"

	"github.com/baton-dev/baton/tests/testserver"
)

// assetTypes are the Content-Types the dashboard's and the docs' static
// files are served with, by extension.
var assetTypes = map[string]string{".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png"}

// wantAsset fetches the static file ref, which must be under prefix, and
// checks what every static page's file answers with: 200, a non-empty
// body of its type, the page's CSP csp and an ETag with a Cache-Control
// to revalidate it by.
func wantAsset(t *testing.T, s *testserver.Server, ref, prefix, csp string) *testserver.Response {
	t.Helper()
	if !strings.HasPrefix(ref, prefix) {
		t.Fatalf("asset %q is not under %s on this server", ref, prefix)
	}
	r := s.Do("GET", ref, "")
	testserver.WantStatus(t, r, http.StatusOK)
	want, ok := assetTypes[path.Ext(ref)]
	if !ok {
		t.Fatalf("asset %q: unexpected kind of file", ref)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, want) {
		t.Errorf("%s: Content-Type %q, want %s", ref, ct, want)
	}
	if got := r.Header.Get("Content-Security-Policy"); got != csp {
		t.Errorf("%s: Content-Security-Policy %q, want %q", ref, got, csp)
	}
	if r.Header.Get("Etag") == "" || r.Header.Get("Cache-Control") == "" {
		t.Errorf("%s: ETag %q, Cache-Control %q: want both", ref, r.Header.Get("Etag"), r.Header.Get("Cache-Control"))
	}
	if len(r.Body) == 0 {
		t.Fatalf("%s: empty body", ref)
	}
	return r
}
