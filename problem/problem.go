package problem

import "net/http"

// Code is a problem's stable, machine-readable code ("lock_held").
type Code string

// The codes. Each has exactly one entry in table below; a test fails for
// a constant that has none.
const (
	// Requests the server cannot take as sent.
	InvalidRequest       Code = "invalid_request"
	BodyTooLarge         Code = "body_too_large"
	ValueTooLarge        Code = "value_too_large"
	UnsupportedMediaType Code = "unsupported_media_type"
	RouteNotFound        Code = "route_not_found"
	MethodNotAllowed     Code = "method_not_allowed"

	// Locks, sessions, fenced values, elections, semaphores.
	LockHeld        Code = "lock_held"
	NotHeld         Code = "not_held"
	TokenMismatch   Code = "token_mismatch"
	StaleToken      Code = "stale_token"
	NotHolder       Code = "not_holder"
	UnknownToken    Code = "unknown_token"
	SessionNotFound Code = "session_not_found"
	NotFound        Code = "not_found"
	NotDelayed      Code = "not_delayed"
	ElectionHeld    Code = "election_held"
	NoLeader        Code = "no_leader"
	// CandidateNotWaiting: a leadership transfer names a candidate that
	// does not wait in line.
	CandidateNotWaiting Code = "candidate_not_waiting"
	SemaphoreFull       Code = "semaphore_full"
	LimitMismatch       Code = "limit_mismatch"

	// Keys of coordination data.
	KeyNotFound      Code = "key_not_found"
	RevisionMismatch Code = "revision_mismatch"

	// Caps: lock.Config's and the server's.
	TooManyWaiters        Code = "too_many_waiters"
	TooManyLocksInSession Code = "too_many_locks_in_session"
	TooManySessions       Code = "too_many_sessions"
	TooManyLocks          Code = "too_many_locks"
	TooManyFencedValues   Code = "too_many_fenced_values"
	TooManyKeys           Code = "too_many_keys"
	TooManyStreams        Code = "too_many_streams"
	RateLimited           Code = "rate_limited"
	// QuotaExceeded: the credential reached one of its quotas (the
	// problem's quota and limit say which).
	QuotaExceeded Code = "quota_exceeded"

	// Who may call.
	Unauthorized   Code = "unauthorized"
	Forbidden      Code = "forbidden"
	CrossOrigin    Code = "cross_origin"
	HostNotAllowed Code = "host_not_allowed"

	// The node's or the cluster's state.
	Unavailable         Code = "unavailable"
	ShuttingDown        Code = "shutting_down"
	InsufficientStorage Code = "insufficient_storage"
	NoSpace             Code = "nospace"
	StillFull           Code = "still_full"
	ClientClosedRequest Code = "client_closed_request"
	Internal            Code = "internal"
)

// Retry says what a caller may do about a problem.
type Retry uint8

const (
	// Final: the answer is about the request itself. Sending it again
	// gets the same answer until something else changes (the holder
	// releases, the caller fixes the request).
	Final Retry = iota
	// Later: the request was refused before it did anything, by a cap
	// that clears by itself as others finish. Any request, idempotent or
	// not, may be sent again after the answer's Retry-After.
	Later
	// Elsewhere: this node could not serve the request; another node, or
	// this one a moment later, may. The outcome may be unknown (the write
	// may have taken effect), so only idempotent requests are repeated.
	Elsewhere
)

func (r Retry) String() string {
	switch r {
	case Later:
		return "later"
	case Elsewhere:
		return "elsewhere"
	}
	return "final"
}

// Exit statuses of the baton CLI. A problem's Exit is one of them; exit
// codes above 10 are the CLI's own (a command's status under exec).
const (
	ExitOK          = 0
	ExitFailure     = 1  // anything not below
	ExitUsage       = 2  // the request (or the command line) is malformed
	ExitHeld        = 3  // someone else holds it
	ExitNotHeld     = 4  // not held, not found
	ExitStale       = 5  // a token that does not (or no longer) hold it
	ExitUnavailable = 6  // the service could not serve the call
	ExitDenied      = 7  // no valid credential, or not allowed
	ExitBusy        = 8  // a cap or rate limit was reached; try later
	ExitLost        = 10 // exec: the lock was lost while the command ran
)

// Info describes one code.
type Info struct {
	Code Code
	// Status is the HTTP status the server answers it with. A code may be
	// answered with another status where Info says so (too_many_streams:
	// 503 when the node, not the client, is at its cap).
	Status int
	// Title is the problem's short, constant summary.
	Title string
	Retry Retry
	// Exit is the CLI's exit status for it.
	Exit int
}

// table is every code, in the order of the constants.
var table = []Info{
	{InvalidRequest, http.StatusBadRequest, "Invalid request", Final, ExitUsage},
	{BodyTooLarge, http.StatusRequestEntityTooLarge, "Request body too large", Final, ExitUsage},
	{ValueTooLarge, http.StatusRequestEntityTooLarge, "Value too large", Final, ExitUsage},
	{UnsupportedMediaType, http.StatusUnsupportedMediaType, "Unsupported media type", Final, ExitUsage},
	{RouteNotFound, http.StatusNotFound, "No such route", Final, ExitFailure},
	{MethodNotAllowed, http.StatusMethodNotAllowed, "Method not allowed", Final, ExitFailure},

	{LockHeld, http.StatusConflict, "Lock held", Final, ExitHeld},
	{NotHeld, http.StatusNotFound, "Lock not held", Final, ExitNotHeld},
	{TokenMismatch, http.StatusConflict, "Token does not hold the lock", Final, ExitStale},
	{StaleToken, http.StatusConflict, "Stale fencing token", Final, ExitStale},
	{NotHolder, http.StatusConflict, "Token does not hold the named lock", Final, ExitStale},
	{UnknownToken, http.StatusConflict, "Token never issued", Final, ExitStale},
	{SessionNotFound, http.StatusNotFound, "Session not found", Final, ExitNotHeld},
	{NotFound, http.StatusNotFound, "Not found", Final, ExitNotHeld},
	{NotDelayed, http.StatusNotFound, "Lock not delayed", Final, ExitNotHeld},
	{ElectionHeld, http.StatusConflict, "Election has a leader", Final, ExitHeld},
	{NoLeader, http.StatusNotFound, "No leader", Final, ExitNotHeld},
	{CandidateNotWaiting, http.StatusConflict, "Candidate not waiting", Final, ExitNotHeld},
	{SemaphoreFull, http.StatusConflict, "Semaphore full", Final, ExitHeld},
	{LimitMismatch, http.StatusConflict, "Semaphore held under another limit", Final, ExitUsage},

	{KeyNotFound, http.StatusNotFound, "Key not found", Final, ExitNotHeld},
	{RevisionMismatch, http.StatusConflict, "Revision mismatch", Final, ExitStale},

	// 429 for what clears by itself as others finish (Later); 409 for
	// what only the caller can clear (its own session's locks).
	{TooManyWaiters, http.StatusTooManyRequests, "Too many waiters for the lock", Later, ExitBusy},
	{TooManyLocksInSession, http.StatusConflict, "Too many locks in the session", Final, ExitBusy},
	{TooManySessions, http.StatusTooManyRequests, "Too many sessions", Later, ExitBusy},
	{TooManyLocks, http.StatusTooManyRequests, "Too many locks held", Later, ExitBusy},
	{TooManyFencedValues, http.StatusTooManyRequests, "Too many fenced values", Later, ExitBusy},
	// The keys' cap is storage: a key stays until it is deleted.
	{TooManyKeys, http.StatusInsufficientStorage, "Too many keys", Final, ExitBusy},
	// 429 for the client's own cap; 503 for the node's, where another
	// node may have room.
	{TooManyStreams, http.StatusTooManyRequests, "Too many event streams", Later, ExitBusy},
	{RateLimited, http.StatusTooManyRequests, "Too many requests", Later, ExitBusy},
	{QuotaExceeded, http.StatusTooManyRequests, "Quota exceeded", Later, ExitBusy},

	{Unauthorized, http.StatusUnauthorized, "Unauthorized", Final, ExitDenied},
	{Forbidden, http.StatusForbidden, "Forbidden", Final, ExitDenied},
	{CrossOrigin, http.StatusForbidden, "Cross-origin request refused", Final, ExitDenied},
	{HostNotAllowed, http.StatusMisdirectedRequest, "Host not allowed", Final, ExitDenied},

	{Unavailable, http.StatusServiceUnavailable, "Service unavailable", Elsewhere, ExitUnavailable},
	{ShuttingDown, http.StatusServiceUnavailable, "Node shutting down", Elsewhere, ExitUnavailable},
	// Writes fail until an operator frees space; reads keep working.
	{InsufficientStorage, http.StatusInsufficientStorage, "Data store full", Final, ExitUnavailable},
	{StillFull, http.StatusConflict, "Data store still full", Final, ExitUnavailable},
	// /readyz's answer while the store is full: the node reads, never
	// writes, until an operator recovers.
	{NoSpace, http.StatusServiceUnavailable, "Data store full", Final, ExitUnavailable},
	// nginx's "client closed request": the caller left; nobody reads it.
	{ClientClosedRequest, 499, "Client closed request", Final, ExitFailure},
	{Internal, http.StatusInternalServerError, "Internal error", Final, ExitFailure},
}

var byCode = func() map[Code]Info {
	m := make(map[Code]Info, len(table))
	for _, i := range table {
		if _, dup := m[i.Code]; dup {
			panic("problem: code " + string(i.Code) + " listed twice")
		}
		m[i.Code] = i
	}
	return m
}()

// All returns every code's Info, in a fixed order.
func All() []Info { return append([]Info(nil), table...) }

// Lookup returns the Info of code. ok is false for a code this build does
// not know (a newer server's).
func Lookup[S ~string](code S) (info Info, ok bool) {
	info, ok = byCode[Code(code)]
	return info, ok
}

// Get returns the Info of a code of this package; it panics for a code
// the table lacks, which a test rules out.
func Get(code Code) Info {
	info, ok := byCode[code]
	if !ok {
		panic("problem: unknown code " + string(code))
	}
	return info
}

// Type is the RFC 9457 type URI of a code.
func Type[S ~string](code S) string { return "urn:baton:problem:" + string(code) }
