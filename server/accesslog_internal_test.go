package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestAccessLog_LogsTheCredentialIDNeverTheToken checks the access log's
// side of the contract with the auth middleware: that one stores a
// non-secret credential ID under "baton.credential" (auth is another
// package's; this stand-in does only that, from a real request header).
func TestAccessLog_LogsTheCredentialIDNeverTheToken(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	e := echo.New()
	e.Use(requestID(), accessLog(log))
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if strings.HasPrefix(c.Request().Header.Get("Authorization"), "Bearer ") {
				c.Set(CredentialKey, "cred-0123456789ab")
			}
			return next(c)
		}
	})
	e.GET("/v1/locks/:name", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })

	req := httptest.NewRequest("GET", "/v1/locks/x", nil)
	req.Header.Set("Authorization", "Bearer the-secret-token")
	e.ServeHTTP(httptest.NewRecorder(), req)
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/locks/y", nil))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 requests:\n%s", len(lines), buf.String())
	}
	var with, without map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &with); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &without); err != nil {
		t.Fatal(err)
	}
	if with["credential"] != "cred-0123456789ab" {
		t.Errorf("line with a credential: %v, want credential cred-0123456789ab", with)
	}
	if _, ok := without["credential"]; ok {
		t.Errorf("line without a credential has one: %v", without)
	}
	if strings.Contains(buf.String(), "the-secret-token") {
		t.Errorf("the token reached the log:\n%s", buf.String())
	}
}

func TestSaneRequestID_AcceptsVisibleASCIIUpTo128(t *testing.T) {
	for id, want := range map[string]bool{
		"":                        false,
		"a":                       true,
		strings.Repeat("x", 128):  true,
		strings.Repeat("x", 129):  false,
		"!~":                      true,
		"tab\there":               false,
		"del\x7f":                 false,
		"space here":              false,
		"ünïcode":                 false,
		"00-4bf92f3577b34da6a3ce": true,
	} {
		if got := saneRequestID(id); got != want {
			t.Errorf("saneRequestID(%q) = %v, want %v", id, got, want)
		}
	}
}
