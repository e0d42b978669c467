package server

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/problem"
)

// The errors the server's middleware raises, refused before any handler
// runs, so nothing was done.

// ErrRateLimited means the client (an address or a credential) sent more
// requests than its rate limit allows; the error is a *RateLimitedError.
var ErrRateLimited = errors.New("rate limited")

// ErrTooManyClientStreams means the client (an address or a credential)
// holds as many event streams on this node as it may; the error is a
// *lock.LimitError. It answers 429: the client clears it by closing one.
// The node's own cap (lock.ErrTooManyStreams) answers 503, as another
// node may have room.
var ErrTooManyClientStreams = errors.New("too many event streams from this client")

// ErrCrossOrigin means a browser marked a request that changes state as
// sent by a page of another origin (Sec-Fetch-Site, or an Origin that is
// not the Host asked for).
var ErrCrossOrigin = errors.New("cross-origin request refused")

// ErrHostNotAllowed means the request's Host is not one the node answers
// (Config.AllowedHosts): on a loopback node, a page whose DNS name was
// rebound to 127.0.0.1.
var ErrHostNotAllowed = errors.New("host not allowed")

// errorRows are the answers to the errors above, beside api's table.
var errorRows = []api.ErrorRow{
	{Err: ErrRateLimited, Code: problem.RateLimited},
	{Err: ErrTooManyClientStreams, Code: problem.TooManyStreams},
	{Err: ErrCrossOrigin, Code: problem.CrossOrigin},
	{Err: ErrHostNotAllowed, Code: problem.HostNotAllowed},
}

// Codes returns every code the server can answer: api's and its own.
func Codes() []problem.Code { return api.Codes(errorRows...) }

// RateLimitedError is a request refused by a rate limit, before it did
// anything.
type RateLimitedError struct {
	// Scope says whose limit: "address" or "credential".
	Scope string
	// Wait is how long until the limiter has a token for the request.
	Wait time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("too many requests from this %s; retry in %d s", e.Scope, max(1, int64(math.Ceil(e.Wait.Seconds()))))
}

// RetryAfter is the answer's Retry-After.
func (e *RateLimitedError) RetryAfter() time.Duration { return e.Wait }

// Unwrap makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }
