package server

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzBearerToken feeds arbitrary Authorization headers to the parser the
// auth middleware uses. A header it accepts is exactly "Bearer" (in any
// case), spaces, and one token without blanks; a refusal says why without
// quoting anything the client sent.
func FuzzBearerToken(f *testing.F) {
	for _, seed := range []string{"Bearer 0c9d8e7f6a5b4c3d", "bearer  x", "Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "Bearer a b", "Bearer\ta", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		h := http.Header{}
		h.Set("Authorization", value)
		token, why := bearerToken(h)
		if why != "" {
			if token != "" {
				t.Fatalf("refused (%s) but returned a token", why)
			}
			for _, field := range strings.Fields(value) {
				if len(field) >= 8 && strings.Contains(why, field) {
					t.Fatalf("the reason %q quotes the header's %q", why, field)
				}
			}
			return
		}
		scheme, rest, ok := strings.Cut(value, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimLeft(rest, " ") != token {
			t.Fatalf("accepted %q as the token %q", value, token)
		}
		if token == "" || strings.ContainsAny(token, " \t") {
			t.Fatalf("accepted a blank or split token %q", token)
		}
	})
}
