package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// Problem is an RFC 9457 problem detail, the body of every error answer.
type Problem struct {
	Type   string `json:"type" example:"urn:baton:problem:lock_held"`
	Title  string `json:"title" example:"Lock held"`
	Status int    `json:"status" example:"409"`
	Detail string `json:"detail,omitempty" example:"held by \"w1\""`
	// Code is stable and machine-readable.
	Code string `json:"code" example:"lock_held"`
	// Field names the request field at fault (400, and 413
	// value_too_large).
	Field string `json:"field,omitempty" example:"ttl"`
	// Holder is the current holder (lock_held).
	Holder *Lock `json:"holder,omitempty"`
	// MaxToken is the largest token the resource has seen (stale_token).
	MaxToken int64 `json:"max_token,omitempty" format:"int64" example:"4712"`
	// RetryAfter is how many seconds to wait before trying again; the
	// Retry-After header says the same.
	RetryAfter int64 `json:"retry_after,omitempty" example:"1"`
	// RequestID is the request's X-Request-ID, as the response header
	// says too: quote it when reporting a problem, it finds the log line.
	RequestID string `json:"request_id,omitempty" example:"4f1c2b9a0d3e8f7a6b5c4d3e2f1a0b9c"`
	// DelayedUntil is when lock-delay lets the lock be acquired again
	// (not_held of a free lock under lock-delay).
	DelayedUntil *Time `json:"delayed_until,omitempty" swaggertype:"string" format:"date-time"`
	// Limit is the cap that was reached (too_many_waiters,
	// too_many_locks_in_session, too_many_sessions, too_many_streams,
	// too_many_locks, too_many_fenced_values; value_too_large: bytes).
	Limit int `json:"limit,omitempty" example:"1000"`
}

// requestIDHeader is echo.HeaderXRequestID in its canonical form: Get
// with echo's spelling canonicalises it into a new string every call.
var requestIDHeader = http.CanonicalHeaderKey(echo.HeaderXRequestID)

// WWWAuthenticate is the challenge every 401 carries (RFC 6750).
const WWWAuthenticate = `Bearer realm="baton"`

// ProblemType is the type URI of a problem code.
func ProblemType(code string) string { return "urn:baton:problem:" + code }

// Error lets a *Problem travel as an error from handlers to ErrorHandler.
func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// noSpaceDetail is the detail of every insufficient_storage answer.
const noSpaceDetail = "the data store is full (etcd's NOSPACE alarm is raised): nothing was written, and no write will succeed " +
	"until an operator frees space; reads still work. Operators: run \"baton maintenance recover\" " +
	"(POST /v1/maintenance/recover), see docs/OPERATIONS.md"

// unavailableRetryAfter is what a 503 tells clients to wait: about one
// leader election.
const unavailableRetryAfter = time.Second

// errorTable maps engine errors to answers. The first entry whose error
// matches (errors.Is) wins, so wrapped sentinels are found.
var errorTable = []struct {
	err    error
	status int
	code   string
	title  string
}{
	{lock.ErrInvalid, http.StatusBadRequest, "invalid_request", "Invalid request"},
	{lock.ErrHeld, http.StatusConflict, "lock_held", "Lock held"},
	{lock.ErrTokenMismatch, http.StatusConflict, "token_mismatch", "Token does not hold the lock"},
	{lock.ErrStaleToken, http.StatusConflict, "stale_token", "Stale fencing token"},
	{lock.ErrNotHolder, http.StatusConflict, "not_holder", "Token does not hold the lock"},
	{lock.ErrNotDelayed, http.StatusNotFound, "not_delayed", "Lock not delayed"},
	{lock.ErrNotHeld, http.StatusNotFound, "not_held", "Lock not held"},
	{lock.ErrSessionNotFound, http.StatusNotFound, "session_not_found", "Session not found"},
	{lock.ErrNotFound, http.StatusNotFound, "not_found", "Not found"},
	// Caps (lock.Config): 429 for what clears by itself as others finish
	// (try later), 409 for what only the caller can clear (its own
	// session's locks), 503 for this node's capacity (try another node).
	{lock.ErrTooManyWaiters, http.StatusTooManyRequests, "too_many_waiters", "Too many waiters for the lock"},
	{lock.ErrTooManyLocks, http.StatusConflict, "too_many_locks_in_session", "Too many locks in the session"},
	{lock.ErrTooManySessions, http.StatusTooManyRequests, "too_many_sessions", "Too many sessions"},
	{ErrTooManyClientStreams, http.StatusTooManyRequests, "too_many_streams", "Too many event streams"},
	{lock.ErrTooManySubscriptions, http.StatusServiceUnavailable, "too_many_streams", "Too many event streams"},
	{ErrRateLimited, http.StatusTooManyRequests, "rate_limited", "Too many requests"},
	{lock.ErrTooManyHeldLocks, http.StatusTooManyRequests, "too_many_locks", "Too many locks held"},
	{lock.ErrTooManyFencedValues, http.StatusTooManyRequests, "too_many_fenced_values", "Too many fenced values"},
	{lock.ErrValueTooLarge, http.StatusRequestEntityTooLarge, "value_too_large", "Fenced value too large"},
	{lock.ErrUnknownToken, http.StatusConflict, "unknown_token", "Token never issued"},
	// A full data store is no outage: retrying does not help, an operator
	// must free space (POST /v1/maintenance/recover). Before
	// ErrUnavailable, which etcd's code for it (ResourceExhausted) once
	// matched.
	{lock.ErrNoSpace, http.StatusInsufficientStorage, "insufficient_storage", "Data store full"},
	{lock.ErrStillFull, http.StatusConflict, "still_full", "Data store still full"},
	{lock.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "Service unavailable"},
	{lock.ErrClosed, http.StatusServiceUnavailable, "shutting_down", "Node shutting down"},
	// Authentication (server's auth middleware) and the engine's ownership
	// check: one code for both refusals, the detail says which.
	{auth.ErrUnauthorized, http.StatusUnauthorized, "unauthorized", "Unauthorized"},
	{auth.ErrForbidden, http.StatusForbidden, "forbidden", "Forbidden"},
	{lock.ErrNotOwner, http.StatusForbidden, "forbidden", "Forbidden"},
	// Browser safety (server's middleware): refused before any handler
	// runs, so nothing was done.
	{ErrUnsupportedMediaType, http.StatusUnsupportedMediaType, "unsupported_media_type", "Unsupported media type"},
	{ErrCrossOrigin, http.StatusForbidden, "cross_origin", "Cross-origin request refused"},
	{ErrHostNotAllowed, http.StatusMisdirectedRequest, "host_not_allowed", "Host not allowed"},
	// Fix (found by TestAcquire_ClientThatDisconnectsWhileWaitingLeavesNoTrace):
	// a client that leaves, a waiter giving up say, cancels its request's
	// context and the engine returns context.Canceled. API.md plans for
	// that; it is no server fault, so it must not answer 500 nor be logged
	// as unexpected. 499 is nginx's "client closed request"; nobody reads it.
	{context.Canceled, statusClientClosedRequest, "client_closed_request", "Client closed request"},
}

// ErrTooManyClientStreams means the client (an address or a credential)
// holds as many event streams on this node as it may; the error is a
// *lock.LimitError. It answers 429: the client clears it by closing one.
// The node's own cap (lock.ErrTooManySubscriptions) answers 503, as
// another node may have room.
var ErrTooManyClientStreams = errors.New("too many event streams from this client")

// ErrUnsupportedMediaType means a request that changes state carries a
// body without saying Content-Type: application/json. A web page can make
// a browser send a text/plain or form body to any site without asking
// first, never a JSON one; so the rule keeps pages of other sites from
// writing, whatever the body holds.
var ErrUnsupportedMediaType = errors.New("unsupported media type")

// ErrCrossOrigin means a browser marked a request that changes state as
// sent by a page of another origin (Sec-Fetch-Site, or an Origin that is
// not the Host asked for).
var ErrCrossOrigin = errors.New("cross-origin request refused")

// ErrHostNotAllowed means the request's Host is not one the node answers
// (server.Config.AllowedHosts): on a loopback node, a page whose DNS name
// was rebound to 127.0.0.1.
var ErrHostNotAllowed = errors.New("host not allowed")

// ErrRateLimited means the client (an address or a credential) sent more
// requests than its rate limit allows; the error is a *RateLimitedError.
var ErrRateLimited = errors.New("rate limited")

// RateLimitedError is a request refused by a rate limit, before it did
// anything.
type RateLimitedError struct {
	// Scope says whose limit: "address" or "credential".
	Scope string
	// RetryAfter is when the limiter will have a token for the request.
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("too many requests from this %s; retry in %d s", e.Scope, max(1, ceilSeconds(e.RetryAfter)))
}

// Unwrap makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// statusClientClosedRequest answers a request whose client went away.
const statusClientClosedRequest = 499

// toProblem turns any error into the answer to send. known is false for
// errors nobody planned for, which deserve a log line.
func toProblem(err error) (p *Problem, known bool) {
	if errors.As(err, &p) {
		return p, true
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return echoProblem(he), true
	}
	for _, row := range errorTable {
		if !errors.Is(err, row.err) {
			continue
		}
		p = &Problem{Type: ProblemType(row.code), Title: row.title, Status: row.status, Code: row.code, Detail: err.Error()}
		var ie *lock.InvalidError
		if errors.As(err, &ie) {
			p.Field, p.Detail = ie.Field, ie.Error()
		}
		var held *lock.HeldError
		if errors.As(err, &held) {
			p.Holder = toLock(held.Holder)
			p.Detail = held.Error()
			if held.RetryAfter > 0 {
				p.RetryAfter = ceilSeconds(held.RetryAfter)
			}
		}
		var delayed *lock.DelayedError
		if errors.As(err, &delayed) {
			until := Time(delayed.Until)
			p.DelayedUntil, p.RetryAfter = &until, max(1, ceilSeconds(time.Until(delayed.Until)))
		}
		var stale *lock.StaleTokenError
		if errors.As(err, &stale) {
			p.MaxToken = stale.MaxToken
		}
		var le *lock.LimitError
		if errors.As(err, &le) {
			p.Limit, p.Detail, p.Field = le.Limit, le.Reason, le.Field
			if le.RetryAfter > 0 {
				p.RetryAfter = ceilSeconds(le.RetryAfter)
			}
		}
		var rl *RateLimitedError
		if errors.As(err, &rl) {
			p.Detail = rl.Error()
			p.RetryAfter = max(1, ceilSeconds(rl.RetryAfter))
		}
		if row.code == "insufficient_storage" {
			p.Detail = noSpaceDetail
		}
		if row.code == "unavailable" || row.code == "shutting_down" {
			p.RetryAfter = ceilSeconds(unavailableRetryAfter)
			// The wrapped etcd message is context for operators, not for
			// clients: say what happened in our words.
			p.Detail = "etcd could not serve the request in time (no leader or no quorum); the request may or may not have taken effect; retry"
			if row.code == "shutting_down" {
				p.Detail = "this node is shutting down; retry on another node"
			}
		}
		return p, true
	}
	return &Problem{
		Type: ProblemType("internal"), Title: "Internal error", Status: http.StatusInternalServerError,
		Code: "internal", Detail: "an unexpected error occurred; it has been logged",
	}, false
}

func echoProblem(he *echo.HTTPError) *Problem {
	code := "http_" + strconv.Itoa(he.Code)
	switch he.Code {
	case http.StatusNotFound:
		code = "route_not_found"
	case http.StatusMethodNotAllowed:
		code = "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		code = "body_too_large"
	case http.StatusUnsupportedMediaType:
		code = "unsupported_media_type"
	}
	detail := http.StatusText(he.Code)
	if s, ok := he.Message.(string); ok {
		detail = s
	}
	return &Problem{Type: ProblemType(code), Title: http.StatusText(he.Code), Status: he.Code, Code: code, Detail: detail}
}

func ceilSeconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }

// ErrorHandler renders every error a handler returns as problem+json and
// logs only the errors nobody planned for.
func ErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p, known := toProblem(err)
		// The request-ID middleware has set the response header by now;
		// a copy, because toProblem may hand back a shared *Problem.
		if id := c.Response().Header().Get(requestIDHeader); id != "" {
			cp := *p
			cp.RequestID, p = id, &cp
		}
		if !known {
			log.Error("unexpected error", "method", c.Request().Method, "path", c.Request().URL.Path, "request_id", p.RequestID, "err", err)
		} else if p.Status >= 500 {
			log.Warn("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "request_id", p.RequestID, "code", p.Code, "err", err)
		}
		if p.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.FormatInt(p.RetryAfter, 10))
		}
		if p.Status == http.StatusUnauthorized && c.Response().Header().Get(echo.HeaderWWWAuthenticate) == "" {
			// RFC 9110: a 401 names the scheme that would work.
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, WWWAuthenticate)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(p.Status)
			return
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		_ = c.JSON(p.Status, p)
	}
}

// badRequest is a 400 naming the field at fault.
func badRequest(field, detail string) *Problem {
	return &Problem{
		Type: ProblemType("invalid_request"), Title: "Invalid request", Status: http.StatusBadRequest,
		Code: "invalid_request", Field: field, Detail: detail,
	}
}
