package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Match them with errors.Is; the *Error behind them, found
// with errors.As, carries the server's details.
var (
	// ErrHeld: someone else holds the lock, or lock-delay forbids taking
	// it (then RetryAfter says for how long). Error.Holder is the holder.
	ErrHeld = errors.New("baton: lock held")
	// ErrNotHeld: nobody holds the lock (with this token).
	ErrNotHeld = errors.New("baton: lock not held")
	// ErrTokenMismatch: the lock is held, but by another token.
	ErrTokenMismatch = errors.New("baton: token does not hold the lock")
	// ErrStaleToken: a fenced write carried a token below one already
	// seen; Error.MaxToken is the largest.
	ErrStaleToken = errors.New("baton: stale token")
	// ErrNotHolder: a fenced write named a lock its token does not hold.
	ErrNotHolder = errors.New("baton: token does not hold the named lock")
	// ErrSessionNotFound: the session expired, was deleted or never existed.
	ErrSessionNotFound = errors.New("baton: session not found")
	// ErrNotFound: no such fenced value.
	ErrNotFound = errors.New("baton: not found")
	// ErrInvalid: the server rejected the request as malformed;
	// Error.Field names the field at fault.
	ErrInvalid = errors.New("baton: invalid request")
	// ErrUnavailable: no node could serve the call (no etcd leader or
	// quorum, node shutting down or unreachable). For a call that is not
	// idempotent, the outcome is unknown: it may have taken effect.
	ErrUnavailable = errors.New("baton: unavailable")
	// ErrLockLost: a *Lock is no longer held, or may no longer be: see
	// Lock.Err for why.
	ErrLockLost = errors.New("baton: lock lost")
	// ErrUnauthorized: the node runs with authentication and the call
	// carried no valid bearer token (Config.Token). Any 401 matches it.
	ErrUnauthorized = errors.New("baton: unauthorized")
	// ErrForbidden: the token is valid but its role does not allow the
	// call, or the hold or session belongs to another credential;
	// Error.Detail says which. Any 403 matches it.
	ErrForbidden = errors.New("baton: forbidden")
)

// Error is an error answer from a baton node: its RFC 9457 problem
// document. errors.Is matches it against the sentinels by its Code.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the server's stable, machine-readable code ("lock_held").
	Code   string
	Title  string
	Detail string
	// Field names the request field at fault (invalid_request).
	Field string
	// Holder is the lock's current holder (lock_held), if known.
	Holder *LockInfo
	// MaxToken is the largest token the resource has seen (stale_token).
	MaxToken int64
	// RetryAfter is how long the server asks to wait (lock-delay, 503).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "baton: %d", e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	switch {
	case e.Detail != "":
		b.WriteString(": " + e.Detail)
	case e.Title != "":
		b.WriteString(": " + e.Title)
	}
	return b.String()
}

// codes maps the server's problem codes to the sentinels.
var codes = map[string]error{
	"lock_held":         ErrHeld,
	"not_held":          ErrNotHeld,
	"token_mismatch":    ErrTokenMismatch,
	"stale_token":       ErrStaleToken,
	"not_holder":        ErrNotHolder,
	"session_not_found": ErrSessionNotFound,
	"not_found":         ErrNotFound,
	"invalid_request":   ErrInvalid,
	"unavailable":       ErrUnavailable,
	"shutting_down":     ErrUnavailable,
	"unauthorized":      ErrUnauthorized,
	"forbidden":         ErrForbidden,
}

// Is reports whether the answer means target, so that
// errors.Is(err, ErrHeld) works on errors from the wire. Any 5xx counts as
// ErrUnavailable: it comes from the node or a proxy, not from the request;
// any 401 as ErrUnauthorized and any 403 as ErrForbidden.
func (e *Error) Is(target error) bool {
	switch {
	case target == ErrUnavailable && e.Status >= 500,
		// A proxy in front of baton may answer these without a problem body.
		target == ErrUnauthorized && e.Status == http.StatusUnauthorized,
		target == ErrForbidden && e.Status == http.StatusForbidden:
		return true
	}
	s, ok := codes[e.Code]
	return ok && s == target
}

// wireProblem is the problem+json body the server sends.
type wireProblem struct {
	Type       string    `json:"type"`
	Title      string    `json:"title"`
	Status     int       `json:"status"`
	Detail     string    `json:"detail"`
	Code       string    `json:"code"`
	Field      string    `json:"field"`
	Holder     *wireLock `json:"holder"`
	MaxToken   int64     `json:"max_token"`
	RetryAfter int64     `json:"retry_after"`
}

// decodeError reads an error answer. Whatever the body, the result says
// at least the status; a body that is not a problem document (a proxy's
// HTML page, say) is quoted, briefly, as the detail.
func decodeError(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var p wireProblem
	if isJSON(resp.Header.Get("Content-Type")) && decodeProblem(body, &p) && p.Code != "" {
		e.Code, e.Detail, e.Field, e.MaxToken = p.Code, p.Detail, p.Field, p.MaxToken
		if p.Title != "" {
			e.Title = p.Title
		}
		if p.Holder != nil {
			h := p.Holder.info()
			e.Holder = &h
		}
		if e.RetryAfter == 0 && p.RetryAfter > 0 {
			e.RetryAfter = seconds(p.RetryAfter)
		}
		return e
	}
	detail := strings.TrimSpace(string(body))
	if len(detail) > 200 {
		detail = detail[:200] + "…"
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
		detail = fmt.Sprintf("redirected to %.200q, which this client follows only when the method stays the same; use that URL as the endpoint", loc)
	}
	e.Detail = detail
	return e
}

// decodeProblem decodes a problem document into p, and reports whether it
// is one.
//
// Fix (found by FuzzClient_ServerAnswers): a problem with one member of
// an unexpected type (a holder whose ttl does not parse, say) was no
// problem at all, so its code was lost and a lock_held from such a server
// did not match ErrHeld. What says what went wrong is kept whenever it
// reads: the code, title, detail and field.
func decodeProblem(body []byte, p *wireProblem) bool {
	if json.Unmarshal(body, p) == nil {
		return true
	}
	var core struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Code   string `json:"code"`
		Field  string `json:"field"`
	}
	if json.Unmarshal(body, &core) != nil {
		return false
	}
	*p = wireProblem{Title: core.Title, Detail: core.Detail, Code: core.Code, Field: core.Field}
	return true
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil && n > 0 {
		return seconds(n)
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// seconds is n seconds, n > 0, as a Duration.
//
// Fix (found by FuzzClient_ServerAnswers): n * time.Second overflows for n
// above about 292 years' worth: "retry_after":9223372037 read as a wait
// of minus 292 years. Such an n now reads as the longest Duration.
func seconds(n int64) time.Duration {
	if n > int64(math.MaxInt64/time.Second) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Second
}
