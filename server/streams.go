package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
)

// StreamLimits cap the event streams one client holds open on this node,
// beside the node's own cap (lock.Config.MaxEventStreams): without them
// one client could take every slot, and every other client would get 503.
type StreamLimits struct {
	// PerAddress caps the streams of one client address (an IPv6 /64, as
	// the rate limits count); 0 means no cap.
	PerAddress int
	// PerCredential caps the streams of one credential (with auth on); 0
	// means no cap.
	PerCredential int
}

// Default stream caps: a quarter and a half of the node's default 1,000,
// far above what one process needs (the Go client and the dashboard open
// one stream each), low enough that two clients cannot starve the rest.
const (
	DefaultStreamsPerAddress    = 250
	DefaultStreamsPerCredential = 500
)

// DefaultStreamLimits returns the default stream caps.
func DefaultStreamLimits() StreamLimits {
	return StreamLimits{PerAddress: DefaultStreamsPerAddress, PerCredential: DefaultStreamsPerCredential}
}

// streamRetryAfter is the Retry-After of a stream refused by a cap.
const streamRetryAfter = 5 * time.Second

// streamCounts counts the streams open per key; a key at zero is deleted,
// so the map holds only clients with a stream open.
type streamCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// take counts one more stream of key unless that would pass limit.
func (s *streamCounts) take(key string, limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[key] >= limit {
		return false
	}
	s.n[key]++
	return true
}

func (s *streamCounts) give(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[key]--; s.n[key] <= 0 {
		delete(s.n, key)
	}
}

// limitStreams answers 429 too_many_streams, with the cap in `limit`, to a
// stream (a route whose row is marked Stream) whose client address or
// credential holds its cap of streams on this node already. It runs after
// authentication, which names the credential.
func limitStreams(l StreamLimits, routes routeTable) echo.MiddlewareFunc {
	byAddress := &streamCounts{n: map[string]int{}}
	byCredential := &streamCounts{n: map[string]int{}}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if r := routes.of(c); r == nil || !r.Stream {
				return next(c)
			}
			if l.PerAddress > 0 {
				addr := addressKey(c.RealIP())
				if !byAddress.take(addr, l.PerAddress) {
					return streamLimitError("client address", l.PerAddress)
				}
				defer byAddress.give(addr)
			}
			if id, _ := c.Get(CredentialKey).(string); id != "" && l.PerCredential > 0 {
				if !byCredential.take(id, l.PerCredential) {
					return streamLimitError("credential", l.PerCredential)
				}
				defer byCredential.give(id)
			}
			return next(c)
		}
	}
}

func streamLimitError(whose string, limit int) error {
	return &lock.LimitError{
		Err: ErrTooManyClientStreams, Limit: limit, RetryAfter: streamRetryAfter,
		Reason: fmt.Sprintf("this %s has %d event streams open on this node, its maximum; close one, or follow several locks in one stream", whose, limit),
	}
}
