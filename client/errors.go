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

	"github.com/baton-dev/baton/problem"
)

// Sentinel errors. Match them with errors.Is; the *Error behind them, found
// with errors.As, carries the server's details. Every problem code of
// package problem has a sentinel (Sentinel returns any of them); the
// common ones are named here.
var (
	// ErrHeld: someone else holds the lock, or lock-delay forbids taking
	// it (then RetryAfter says for how long). Error.Holder is the holder;
	// for a read/write lock, Error.RWHolders are the holds in the way; for
	// a lock set, Error.SetHolders the locks held by others (Holder is
	// the first).
	ErrHeld = Sentinel(problem.LockHeld)
	// ErrNotHeld: nobody holds the lock (with this token).
	ErrNotHeld = Sentinel(problem.NotHeld)
	// ErrElectionHeld: the election has a leader, and the campaign did
	// not get to lead (it had no Wait, or the wait ran out; under
	// lock-delay RetryAfter says for how long). Error.Leader is the
	// leader.
	ErrElectionHeld = Sentinel(problem.ElectionHeld)
	// ErrNoLeader: nobody leads the election (with this token).
	ErrNoLeader = Sentinel(problem.NoLeader)
	// ErrCandidateNotWaiting: a leadership transfer names a candidate
	// with no campaign waiting in line; the leader still leads.
	ErrCandidateNotWaiting = Sentinel(problem.CandidateNotWaiting)
	// ErrSemaphoreFull: every permit of the semaphore is held, and the
	// acquire did not get one (it had no Wait, or the wait ran out).
	// Error.Holders are the permits held.
	ErrSemaphoreFull = Sentinel(problem.SemaphoreFull)
	// ErrLimitMismatch: the semaphore's permits are held or waited for
	// under another limit than the acquire's; Error.Limit is the
	// semaphore's. Nothing was done.
	ErrLimitMismatch = Sentinel(problem.LimitMismatch)
	// ErrTokenMismatch: the lock is held, but by another token.
	ErrTokenMismatch = Sentinel(problem.TokenMismatch)
	// ErrStaleToken: a fenced write carried a token below one already
	// seen; Error.MaxToken is the largest.
	ErrStaleToken = Sentinel(problem.StaleToken)
	// ErrNotHolder: a fenced write named a lock its token does not hold.
	ErrNotHolder = Sentinel(problem.NotHolder)
	// ErrSessionNotFound: the session expired, was deleted or never existed.
	ErrSessionNotFound = Sentinel(problem.SessionNotFound)
	// ErrNotFound: no such fenced value.
	ErrNotFound = Sentinel(problem.NotFound)
	// ErrNotDelayed: ClearDelay found the lock under no lock-delay.
	ErrNotDelayed = Sentinel(problem.NotDelayed)
	// ErrUnknownToken: a fenced write carried a token greater than any
	// baton has issued; nothing was written.
	ErrUnknownToken = Sentinel(problem.UnknownToken)
	// ErrKeyNotFound: the key does not exist; Error.Revision is the
	// revision it was found missing at, to wait from (WaitKey).
	ErrKeyNotFound = Sentinel(problem.KeyNotFound)
	// ErrRevisionMismatch: a compare-and-set lost; Error.Revision is the
	// key's revision (0: it does not exist). Nothing was written.
	ErrRevisionMismatch = Sentinel(problem.RevisionMismatch)
	// ErrTooManyKeys: the put would make one key more than the cluster
	// may hold (Error.Limit); puts to existing keys still work.
	ErrTooManyKeys = Sentinel(problem.TooManyKeys)
	// ErrInvalid: the server rejected the request as malformed;
	// Error.Field names the field at fault.
	ErrInvalid = Sentinel(problem.InvalidRequest)
	// ErrUnavailable: no node could serve the call (no etcd leader or
	// quorum, node shutting down or unreachable). For a call that is not
	// idempotent, the outcome is unknown: it may have taken effect. Any
	// 5xx matches it, and so does every code retried Elsewhere.
	ErrUnavailable = Sentinel(problem.Unavailable)
	// ErrUnauthorized: the node runs with authentication and the call
	// carried no valid bearer token (Config.Token). Any 401 matches it.
	ErrUnauthorized = Sentinel(problem.Unauthorized)
	// ErrForbidden: the token is valid but its role does not allow the
	// call, or the hold or session belongs to another credential;
	// Error.Detail says which. Any 403 matches it.
	ErrForbidden = Sentinel(problem.Forbidden)

	// The caps. Error.Limit is the cap; Error.RetryAfter, when set, when
	// to try again. Nothing was done.

	// ErrTooManyWaiters: the lock's queue is full; try later.
	ErrTooManyWaiters = Sentinel(problem.TooManyWaiters)
	// ErrTooManyLocksInSession: the session holds as many locks as it may;
	// release one of them first.
	ErrTooManyLocksInSession = Sentinel(problem.TooManyLocksInSession)
	// ErrTooManySessions: the cluster holds as many sessions as it may.
	ErrTooManySessions = Sentinel(problem.TooManySessions)
	// ErrTooManyStreams: this client (address or credential), or the node,
	// has as many event streams open as it may.
	ErrTooManyStreams = Sentinel(problem.TooManyStreams)
	// ErrRateLimited: the client sent more requests than its rate limit
	// allows; wait Error.RetryAfter.
	ErrRateLimited = Sentinel(problem.RateLimited)
	// ErrTooManyLocks: the cluster holds as many locks as it may.
	ErrTooManyLocks = Sentinel(problem.TooManyLocks)
	// ErrTooManyFencedValues: the cluster holds as many fenced values as
	// it may; a write to an existing one still succeeds.
	ErrTooManyFencedValues = Sentinel(problem.TooManyFencedValues)
	// ErrValueTooLarge: the fenced value is larger than the node allows;
	// Error.Limit is the limit in bytes.
	ErrValueTooLarge = Sentinel(problem.ValueTooLarge)

	// ErrLockLost: a *Lock, a *Leadership or a *Permit is no longer
	// held, or may no longer be: see their Err for why. It is the client's own judgement,
	// no server code.
	ErrLockLost = errors.New("baton: lock lost")
)

// codeError is the sentinel of one problem code.
type codeError struct {
	code problem.Code
	msg  string
}

func (s *codeError) Error() string { return s.msg }

// sentinels holds one sentinel per code of package problem.
var sentinels = func() map[problem.Code]*codeError {
	m := map[problem.Code]*codeError{}
	for _, i := range problem.All() {
		m[i.Code] = &codeError{code: i.Code, msg: "baton: " + strings.ToLower(i.Title[:1]) + i.Title[1:]}
	}
	return m
}()

// Sentinel returns the sentinel error of a problem code, which
// errors.Is(err, Sentinel(code)) matches against an answer with that code,
// or nil for a code this client does not know (a newer server's; Error.Code
// still says it).
func Sentinel[S ~string](code S) error {
	if s, ok := sentinels[problem.Code(code)]; ok {
		return s
	}
	return nil
}

// Error is an error answer from a baton node: its RFC 9457 problem
// document. errors.Is matches it against the sentinels by its Code.
type Error struct {
	// Op names the call that got the answer (`revoke "wlock"`).
	Op string
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
	// Leader is the election's current leader (election_held), if known.
	Leader *LeaderInfo
	// Holders are the semaphore's permits held (semaphore_full).
	Holders []PermitInfo
	// RWHolders are a read/write lock's holds in the way (lock_held).
	RWHolders []RWHoldInfo
	// SetHolders are the locks held by others in the way of a lock set
	// (lock_held of AcquireSet).
	SetHolders []LockInfo
	// MaxToken is the largest token the resource has seen (stale_token).
	MaxToken int64
	// Revision is the key's revision (revision_mismatch; 0: it does not
	// exist), or the revision the key was found missing at
	// (key_not_found).
	Revision int64
	// PlaceKept says that a wait with keep_place ran out and the session
	// keeps its place in the queue (see MaxRequestWait).
	PlaceKept bool
	// Limit is the cap that was reached (too_many_waiters and the other
	// caps), or the semaphore's limit (limit_mismatch).
	Limit int
	// RetryAfter is how long the server asks to wait (lock-delay, 503).
	RetryAfter time.Duration
	// Role is the role the refused call needs (forbidden), and Prefixes
	// the prefixes of the credential's rules, for a credential scoped to
	// prefixes: the names it may act on.
	Role     string
	Prefixes []string
}

// Error is one line: the call, what the server said, and its status and
// code, as in `revoke "wlock": lock not held (404 not_held)`.
func (e *Error) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	var b strings.Builder
	if e.Op != "" {
		// The server's detail names the operation too, as the engine
		// wraps its errors: say it once.
		msg = strings.TrimPrefix(msg, e.Op+": ")
		b.WriteString(e.Op + ": ")
	}
	b.WriteString(oneLine(msg))
	fmt.Fprintf(&b, " (%d", e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	b.WriteString(")")
	return b.String()
}

// Is reports whether the answer means target, so that
// errors.Is(err, ErrHeld) works on errors from the wire. Any 5xx counts as
// ErrUnavailable: it comes from the node or a proxy, not from the request;
// so does every code retried Elsewhere. Any 401 counts as ErrUnauthorized
// and any 403 as ErrForbidden: a proxy in front of baton may answer these
// without a problem body.
func (e *Error) Is(target error) bool {
	s, ok := target.(*codeError)
	if !ok {
		return false
	}
	if string(s.code) == e.Code {
		return true
	}
	switch s.code {
	case problem.Unavailable:
		i, known := problem.Lookup(e.Code)
		return e.Status >= 500 || known && i.Retry == problem.Elsewhere
	case problem.Unauthorized:
		return e.Status == http.StatusUnauthorized
	case problem.Forbidden:
		return e.Status == http.StatusForbidden
	}
	return false
}

// wireProblem is the problem+json body the server sends.
type wireProblem struct {
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Status     int         `json:"status"`
	Detail     string      `json:"detail"`
	Code       string      `json:"code"`
	Field      string      `json:"field"`
	Holder     *wireLock   `json:"holder"`
	Leader     *wireLeader `json:"leader"`
	Holders    []wireHold  `json:"holders"`
	MaxToken   int64       `json:"max_token"`
	Revision   int64       `json:"revision"`
	PlaceKept  bool        `json:"place_kept"`
	RetryAfter int64       `json:"retry_after"`
	Limit      int         `json:"limit"`
	Role       string      `json:"role"`
	Prefixes   []string    `json:"prefixes"`
}

// oneLine folds every run of white space in s, line breaks included, into
// one space: an error's text is one line whatever the server sent, so
// that logs and the CLI's stderr keep one record per failure.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t\v\f") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
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
		e.Code, e.Detail, e.Field, e.MaxToken, e.Limit, e.PlaceKept = p.Code, p.Detail, p.Field, p.MaxToken, p.Limit, p.PlaceKept
		e.Revision, e.Role, e.Prefixes = p.Revision, p.Role, p.Prefixes
		if p.Title != "" {
			e.Title = p.Title
		}
		if p.Holder != nil {
			h := p.Holder.info()
			e.Holder = &h
		}
		if p.Leader != nil {
			e.Leader = p.Leader.info()
		}
		switch {
		case p.Code == string(problem.LockHeld) && len(p.Holders) > 0 && p.Holders[0].Mode == "":
			// A lock set's lock_held names the locks in the way: holds
			// with no mode.
			e.SetHolders = holdInfos(p.Holders, (*wireHold).lock)
		case p.Code == string(problem.LockHeld):
			// A lock's lock_held names its holder; a read/write lock's,
			// the holds in the way.
			e.RWHolders = holdInfos(p.Holders, (*wireHold).rwHold)
		default:
			e.Holders = holdInfos(p.Holders, (*wireHold).permit)
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
// A member of an unexpected type (a holder whose ttl does not parse, say)
// does not make the document no problem at all: what says what went wrong
// is kept whenever it reads (the code, title, detail and field), so that a
// lock_held from such a server still matches ErrHeld.
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

// seconds is n seconds, n > 0, as a Duration. An n too large for a
// Duration (above about 292 years, where n * time.Second would overflow
// into a negative wait) reads as the longest Duration.
func seconds(n int64) time.Duration {
	if n > int64(math.MaxInt64/time.Second) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Second
}
