package api

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/baton-dev/baton/api/internal/request"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/problem"
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
	// Leader is the current leader (election_held).
	Leader *Leader `json:"leader,omitempty"`
	// Holders are the permits held (semaphore_full), the holds of a
	// read/write lock in the way (lock_held of a read/write lock), or the
	// locks held by others (lock_held of a lock set).
	Holders []*Hold `json:"holders,omitempty"`
	// PlaceKept says that a wait with keep_place ran out and the session
	// keeps its place in the queue (lock_held, election_held,
	// semaphore_full).
	PlaceKept bool `json:"place_kept,omitempty" example:"true"`
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
	// too_many_locks, too_many_fenced_values, too_many_keys;
	// value_too_large: bytes), or the semaphore's limit (limit_mismatch).
	Limit int `json:"limit,omitempty" example:"1000"`
	// Revision is the key's revision (revision_mismatch; 0: the key does
	// not exist), or the revision at which the key was found missing
	// (key_not_found): a blocking read from it waits for the key's next
	// change.
	Revision *int64 `json:"revision,omitempty" format:"int64" example:"4712"`
	// Role is the role the refused call needs (forbidden by a role or
	// by a rule).
	Role string `json:"role,omitempty" example:"write" enums:"read,write,admin"`
	// Prefixes are the prefixes of the credential's rules (forbidden by
	// a credential scoped to prefixes): the names it may act on.
	Prefixes []string `json:"prefixes,omitempty" example:"payments.,shared."`
	// Quota names the credential's quota that was reached
	// (quota_exceeded); Limit is its value (for rate, requests a second,
	// rounded up).
	Quota string `json:"quota,omitempty" example:"holds" enums:"holds,waiters,sessions,streams,rate"`
}

// requestIDHeader is echo.HeaderXRequestID in its canonical form: Get
// with echo's spelling canonicalises it into a new string every call.
var requestIDHeader = http.CanonicalHeaderKey(echo.HeaderXRequestID)

// WWWAuthenticate is the challenge every 401 carries (RFC 6750).
const WWWAuthenticate = `Bearer realm="baton"`

// ProblemType is the type URI of a problem code.
func ProblemType[S ~string](code S) string { return problem.Type(code) }

// Error lets a *Problem travel as an error from handlers to ErrorHandler.
func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// noSpaceDetail is the detail of every insufficient_storage answer.
const noSpaceDetail = "the data store is full (etcd's NOSPACE alarm is raised): nothing was written, and no write will succeed " +
	"until an operator frees space; reads still work. Operators: run \"baton maintenance recover\" " +
	"(POST /v1/maintenance/recover), see docs/OPERATIONS.md"

// unavailableRetryAfter is what a 503 tells clients to wait: about one
// leader election.
const unavailableRetryAfter = time.Second

// ErrorRow maps an error to its answer. Code, status and title come from
// package problem, the vocabulary the client and the CLI read too.
type ErrorRow struct {
	// Err is matched with errors.Is, so wrapped sentinels are found.
	Err  error
	Code problem.Code
	// Status, when set, overrides the code's usual one.
	Status int
	// RetryAfter is the answer's Retry-After when the error itself says
	// none.
	RetryAfter time.Duration
	// Detail, when set, is the answer's detail in place of the error's
	// text: the text wraps etcd's messages, context for operators (who
	// get it in the log), not for clients.
	Detail string
}

// errorTable maps the errors of the engine, of authentication and of
// this package to answers. The first row whose error matches wins.
// ErrorHandler's caller adds the rows of errors it raises itself (the
// server's middleware).
var errorTable = []ErrorRow{
	{Err: lock.ErrInvalid, Code: problem.InvalidRequest},
	{Err: lock.ErrHeld, Code: problem.LockHeld},
	{Err: lock.ErrElectionHeld, Code: problem.ElectionHeld},
	{Err: lock.ErrNoLeader, Code: problem.NoLeader},
	{Err: lock.ErrCandidateNotWaiting, Code: problem.CandidateNotWaiting},
	{Err: lock.ErrSemaphoreFull, Code: problem.SemaphoreFull},
	{Err: lock.ErrLimitMismatch, Code: problem.LimitMismatch},
	{Err: lock.ErrTokenMismatch, Code: problem.TokenMismatch},
	{Err: lock.ErrStaleToken, Code: problem.StaleToken},
	{Err: lock.ErrKeyNotFound, Code: problem.KeyNotFound},
	{Err: lock.ErrRevisionMismatch, Code: problem.RevisionMismatch},
	{Err: lock.ErrNotHolder, Code: problem.NotHolder},
	{Err: lock.ErrNotDelayed, Code: problem.NotDelayed},
	{Err: lock.ErrNotHeld, Code: problem.NotHeld},
	{Err: lock.ErrSessionNotFound, Code: problem.SessionNotFound},
	{Err: lock.ErrNotFound, Code: problem.NotFound},
	// Caps (lock.Config): 429 for what clears by itself as others finish
	// (try later), 409 for what only the caller can clear (its own
	// session's locks), 503 for this node's capacity (try another node).
	{Err: lock.ErrTooManyWaiters, Code: problem.TooManyWaiters},
	{Err: lock.ErrQuotaExceeded, Code: problem.QuotaExceeded},
	{Err: lock.ErrTooManyLocks, Code: problem.TooManyLocksInSession},
	{Err: lock.ErrTooManySessions, Code: problem.TooManySessions},
	{Err: lock.ErrTooManyStreams, Code: problem.TooManyStreams, Status: http.StatusServiceUnavailable},
	{Err: lock.ErrTooManyHeldLocks, Code: problem.TooManyLocks},
	{Err: lock.ErrTooManyFencedValues, Code: problem.TooManyFencedValues},
	{Err: lock.ErrTooManyKeys, Code: problem.TooManyKeys},
	{Err: lock.ErrValueTooLarge, Code: problem.ValueTooLarge},
	{Err: lock.ErrUnknownToken, Code: problem.UnknownToken},
	// A full data store is no outage: retrying does not help, an operator
	// must free space (POST /v1/maintenance/recover). Before
	// ErrUnavailable, so that an error wrapping both answers 507.
	{Err: lock.ErrNoSpace, Code: problem.InsufficientStorage, Detail: noSpaceDetail},
	{Err: lock.ErrStillFull, Code: problem.StillFull},
	{Err: lock.ErrUnavailable, Code: problem.Unavailable, RetryAfter: unavailableRetryAfter,
		Detail: "etcd could not serve the request in time (no leader or no quorum); the request may or may not have taken effect; retry"},
	{Err: lock.ErrClosed, Code: problem.ShuttingDown, RetryAfter: unavailableRetryAfter,
		Detail: "this node is shutting down; retry on another node"},
	// Authentication (server's auth middleware) and the engine's ownership
	// check: one code for both refusals, the detail says which.
	{Err: auth.ErrUnauthorized, Code: problem.Unauthorized},
	{Err: auth.ErrForbidden, Code: problem.Forbidden},
	{Err: lock.ErrNotOwner, Code: problem.Forbidden},
	// A body not sent as JSON (CheckMediaType, for the handlers and the
	// server's browser safety).
	{Err: ErrUnsupportedMediaType, Code: problem.UnsupportedMediaType},
	// A client that leaves (a waiter giving up, say) cancels its request's
	// context and the engine returns context.Canceled: no server fault, so
	// neither a 500 nor a log line.
	{Err: context.Canceled, Code: problem.ClientClosedRequest},
}

// newProblem is the answer of code, with its status and title from
// package problem.
func newProblem(code problem.Code, detail string) *Problem {
	i := problem.Get(code)
	return &Problem{Type: ProblemType(code), Title: i.Title, Status: i.Status, Code: string(code), Detail: detail}
}

// Codes returns every code the error table, with extra rows, and the
// router's own errors can answer, so that tests can hold the clients to
// knowing them all.
func Codes(extra ...ErrorRow) []problem.Code {
	seen := map[problem.Code]bool{}
	var out []problem.Code
	add := func(c problem.Code) {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, row := range slices.Concat(errorTable, extra) {
		add(row.Code)
	}
	for _, c := range []int{http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType} {
		add(problem.Code(echoProblem(echo.NewHTTPError(c)).Code))
	}
	add(problem.Internal)
	add(problem.NoSpace) // /readyz's
	return out
}

// ErrUnsupportedMediaType means a request that changes state carries a
// body without saying Content-Type: application/json (package request
// says why that is the rule); CheckMediaType checks it.
var ErrUnsupportedMediaType = request.ErrUnsupportedMediaType

// MaxBodyBytes caps request bodies; larger ones get 413 (a key's put
// takes its value besides).
const MaxBodyBytes = request.MaxBodyBytes

// CheckMediaType returns an ErrUnsupportedMediaType error unless h says
// Content-Type: application/json, once.
func CheckMediaType(h http.Header) error { return request.CheckMediaType(h) }

// retryAfterError is an error that says when to try again (the server's
// rate limit): its answer's detail is its own text, without what wraps
// it, and its wait is the Retry-After.
type retryAfterError interface {
	error
	RetryAfter() time.Duration
}

// toProblem turns any error into the answer to send, by the first row of
// table that matches. known is false for errors nobody planned for, which
// deserve a log line.
func toProblem(err error, table []ErrorRow) (p *Problem, known bool) {
	if errors.As(err, &p) {
		return p, true
	}
	var re *request.Error
	if errors.As(err, &re) {
		p = newProblem(re.Code, re.Detail)
		p.Field = re.Field
		return p, true
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return echoProblem(he), true
	}
	for _, row := range table {
		if !errors.Is(err, row.Err) {
			continue
		}
		p = newProblem(row.Code, err.Error())
		if row.Status != 0 {
			p.Status = row.Status
		}
		addDetails(p, err)
		if row.Detail != "" {
			p.Detail = row.Detail
		}
		if p.RetryAfter == 0 && row.RetryAfter > 0 {
			p.RetryAfter = ceilSeconds(row.RetryAfter)
		}
		return p, true
	}
	return newProblem(problem.Internal, "an unexpected error occurred; it has been logged"), false
}

// addDetails copies into p what the error's type says beyond its
// sentinel: the field at fault, the holder, the caps, when to retry.
func addDetails(p *Problem, err error) {
	var ie *lock.InvalidError
	if errors.As(err, &ie) {
		p.Field, p.Detail = ie.Field, ie.Error()
	}
	var held *lock.HeldError
	if errors.As(err, &held) {
		switch held.Kind {
		case lock.KindElection:
			p.Leader = toLeader(held.Holder)
		case lock.KindSemaphore, lock.KindRWLock:
			p.Holders = toHolds(held.Holders)
		default:
			if held.Holders != nil { // a lock set's: the locks in the way
				p.Holders = toHolds(held.Holders)
			} else {
				p.Holder = toLock(held.Holder)
			}
		}
		p.Detail, p.PlaceKept = held.Error(), held.PlaceKept
		if held.RetryAfter > 0 {
			p.RetryAfter = ceilSeconds(held.RetryAfter)
		}
	}
	var delayed *lock.DelayedError
	if errors.As(err, &delayed) {
		until := Time(delayed.Until)
		p.DelayedUntil, p.RetryAfter = &until, max(1, ceilSeconds(time.Until(delayed.Until)))
	}
	var mismatch *lock.LimitMismatchError
	if errors.As(err, &mismatch) {
		p.Limit = mismatch.Limit
	}
	var stale *lock.StaleTokenError
	if errors.As(err, &stale) {
		p.MaxToken = stale.MaxToken
	}
	var rm *lock.RevisionMismatchError
	if errors.As(err, &rm) {
		p.Revision = &rm.Revision
	}
	var nf *lock.KeyNotFoundError
	if errors.As(err, &nf) {
		p.Revision = &nf.Revision
	}
	var le *lock.LimitError
	if errors.As(err, &le) {
		p.Limit, p.Detail, p.Field, p.Quota = le.Limit, le.Reason, le.Field, le.Quota
		if le.RetryAfter > 0 {
			p.RetryAfter = ceilSeconds(le.RetryAfter)
		}
	}
	var se *auth.ScopeError
	if errors.As(err, &se) {
		p.Role, p.Prefixes = se.Need.String(), se.Prefixes()
	}
	var roleErr *auth.RoleError
	if errors.As(err, &roleErr) {
		p.Role = roleErr.Need.String()
	}
	var ra retryAfterError
	if errors.As(err, &ra) {
		p.Detail = ra.Error()
		p.RetryAfter = max(1, ceilSeconds(ra.RetryAfter()))
	}
}

func echoProblem(he *echo.HTTPError) *Problem {
	detail := http.StatusText(he.Code)
	if s, ok := he.Message.(string); ok {
		detail = s
	}
	var code problem.Code
	switch he.Code {
	case http.StatusNotFound:
		code = problem.RouteNotFound
	case http.StatusMethodNotAllowed:
		code = problem.MethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		code = problem.BodyTooLarge
	case http.StatusUnsupportedMediaType:
		code = problem.UnsupportedMediaType
	default:
		// A status echo answers that has no code of ours: keep the
		// status, and a code that says so.
		c := "http_" + strconv.Itoa(he.Code)
		return &Problem{Type: ProblemType(c), Title: http.StatusText(he.Code), Status: he.Code, Code: c, Detail: detail}
	}
	return newProblem(code, detail)
}

func ceilSeconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }

// ErrorHandler renders every error a handler or a middleware returns as
// problem+json and logs only the errors nobody planned for. extra are the
// rows of the errors the caller raises itself, after the table's own.
func ErrorHandler(log *slog.Logger, extra ...ErrorRow) echo.HTTPErrorHandler {
	table := slices.Concat(errorTable, extra)
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p, known := toProblem(err, table)
		// The request-ID middleware has set the response header by now;
		// a copy, because toProblem may hand back a shared *Problem.
		if id := c.Response().Header().Get(requestIDHeader); id != "" {
			cp := *p
			cp.RequestID, p = id, &cp
		}
		// The holder in the way is the caller's to read; its lock set's
		// other members may not be (toProblem made the holder anew).
		redactLock(c, p.Holder)
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
	p := newProblem(problem.InvalidRequest, detail)
	p.Field = field
	return p
}
