package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/labstack/echo/v4"
)

// maxRequestIDLen bounds a client's X-Request-ID: long enough for a UUID,
// a W3C traceparent or a load balancer's trace ID, short enough that a
// client cannot bloat every log line.
const maxRequestIDLen = 128

// requestID gives every request an ID, in the X-Request-ID header of both
// the request (for what runs after it) and the response, and so in the
// access log and in problem+json bodies (api.ErrorHandler reads the
// response header). A client's own ID is kept when it is sane (1 to 128
// visible ASCII characters), so that a proxy's or a caller's trace ID
// carries through; anything else, a newline that could forge log lines
// say, is replaced by a fresh random one.
func requestID() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// The header maps are used directly with the canonical key:
			// Header.Get and Set canonicalise echo's "X-Request-ID" into a
			// new string on every call.
			req := c.Request()
			ids := req.Header[requestIDHeader]
			switch {
			case len(ids) == 0 || !saneRequestID(ids[0]):
				ids = []string{newRequestID()}
				req.Header[requestIDHeader] = ids
			case len(ids) > 1:
				ids = ids[:1:1] // the first, as Header.Get read it
				req.Header[requestIDHeader] = ids
			}
			// One slice for both headers: neither is changed in place
			// (Set and Add replace or grow it), and it saves an
			// allocation per request.
			c.Response().Header()[requestIDHeader] = ids
			return next(c)
		}
	}
}

// requestIDHeader is echo.HeaderXRequestID in its canonical form, the
// key net/http stores it under.
var requestIDHeader = http.CanonicalHeaderKey(echo.HeaderXRequestID)

// saneRequestID reports whether id is 1 to maxRequestIDLen visible ASCII
// characters (no space, no control character, nothing beyond ASCII).
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '!' || id[i] > '~' {
			return false
		}
	}
	return true
}

// newRequestID is 16 random bytes in hex: unique enough to find one line
// among all of a cluster's logs.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
