package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/problem"
)

// Each of the server's own errors, wrapped or not, answers with its row's
// code; the typed ones say when to retry, in their own words.
func TestErrorRows_EachServerErrorAnswersItsCode(t *testing.T) {
	handle := api.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)), errorRows...)
	for _, tc := range []struct {
		err        error
		code       problem.Code
		status     int
		retryAfter string
	}{
		{&RateLimitedError{Scope: "address", Wait: 1500 * time.Millisecond}, problem.RateLimited, 429, "2"},
		{&lock.LimitError{Err: ErrTooManyClientStreams, Limit: 3, RetryAfter: time.Second, Reason: "close one"}, problem.TooManyStreams, 429, "1"},
		{fmt.Errorf("%w: another origin", ErrCrossOrigin), problem.CrossOrigin, 403, ""},
		{fmt.Errorf("%w: evil.example", ErrHostNotAllowed), problem.HostNotAllowed, 421, ""},
	} {
		rec := httptest.NewRecorder()
		handle(fmt.Errorf("context: %w", tc.err), echo.New().NewContext(httptest.NewRequest("GET", "/v1/locks", nil), rec))
		body := rec.Body.String()
		if rec.Code != tc.status || !strings.Contains(body, `"code":"`+string(tc.code)+`"`) || rec.Header().Get("Retry-After") != tc.retryAfter {
			t.Errorf("%v: %d Retry-After %q %s, want %d %s Retry-After %q", tc.err, rec.Code, rec.Header().Get("Retry-After"), body, tc.status, tc.code, tc.retryAfter)
		}
		if tc.retryAfter != "" && strings.Contains(body, "context:") {
			t.Errorf("%v: the detail quotes what wraps the error, not the error's own words: %s", tc.err, body)
		}
	}
}
