package server

import (
	"crypto/rand"
	"encoding/hex"

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
			id := c.Request().Header.Get(echo.HeaderXRequestID)
			if !saneRequestID(id) {
				id = newRequestID()
			}
			c.Request().Header.Set(echo.HeaderXRequestID, id)
			c.Response().Header().Set(echo.HeaderXRequestID, id)
			return next(c)
		}
	}
}

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
