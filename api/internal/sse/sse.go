// Package sse writes the API's text/event-stream answers (Server-Sent
// Events): the stream's head and each write under its own deadline
// (Open), the pump from a trail subscription with heartbeats (Pump), and
// the relay of any other channel, such as an election's observation
// (Relay).
package sse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// DefaultHeartbeat keeps idle streams alive through proxies that close
// connections without traffic.
const DefaultHeartbeat = 15 * time.Second

// DefaultWriteTimeout bounds each write to an event stream: a client
// that stops reading fills its socket buffers, the write blocks, and the
// stream is dropped when this passes, instead of pinning a goroutine and a
// subscription for as long as the connection lives.
const DefaultWriteTimeout = 10 * time.Second

// Open begins a text/event-stream answer, and returns the function
// that sends each part of it: ok is false when the client left already.
func Open(c echo.Context, writeTimeout time.Duration) (send func([]byte) error, ok bool) {
	w := c.Response()
	rc := http.NewResponseController(w.Writer)
	// The server's timeouts are for ordinary requests; a stream lives until
	// the client or the server ends it. The read deadline matters too: when
	// it passes, net/http cancels the request's context. Writes get a
	// deadline each instead (send), so a healthy stream lives on and a
	// client that stopped reading is dropped.
	_ = rc.SetReadDeadline(time.Time{})
	send = func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no buffering in nginx
	w.WriteHeader(http.StatusOK)
	return send, send([]byte("retry: 2000\n\n")) == nil
}

// Pump sends sub's events, each rendered by appendEv, and a heartbeat
// every beat while there are none, until the subscription ends, the
// client leaves, a write to it fails or appendEv fails (the client
// resumes from the last event it has).
func Pump(ctx context.Context, sub *trail.Subscription, send func([]byte) error, appendEv func([]byte, lock.Event) ([]byte, error), beatEvery time.Duration) {
	beat := time.NewTicker(beatEvery)
	defer beat.Stop()
	var buf []byte
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				// Tell the client why, as a comment: the stream's status
				// line is long gone. EventSource reconnects by itself.
				if err := sub.Err(); err != nil && !errors.Is(err, ctx.Err()) {
					_ = send(fmt.Appendf(nil, ": stream ended: %s\n\n", Sanitize(err)))
				}
				return
			}
			var err error
			buf, err = appendEv(buf[:0], ev)
			// Whatever else is ready goes in the same write, so the events
			// of one revision arrive together.
			for more := err == nil; more; {
				select {
				case ev, ok := <-sub.C:
					if !ok {
						more = false
						break
					}
					if buf, err = appendEv(buf, ev); err != nil {
						more = false
					}
				default:
					more = false
				}
			}
			if err != nil {
				// What was rendered of this revision is not sent: the
				// client resumes from the last revision it has whole.
				_ = send(fmt.Appendf(nil, ": stream ended: %s\n\n", Sanitize(err)))
				return
			}
			if send(buf) != nil {
				return // the client left, or stopped reading
			}
		case <-beat.C:
			if send([]byte(": heartbeat\n\n")) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// Follow sends each value of c, rendered by render, and a heartbeat every
// beatEvery while none comes, until c closes (err then says why, told to
// the client as a comment unless the client left), the client leaves, or
// a write to it fails.
func Follow[T any](ctx context.Context, c <-chan T, err func() error, send func([]byte) error, render func(T) []byte, beatEvery time.Duration) {
	beat := time.NewTicker(beatEvery)
	defer beat.Stop()
	for {
		select {
		case v, ok := <-c:
			if !ok {
				if err := err(); err != nil && ctx.Err() == nil {
					_ = send(fmt.Appendf(nil, ": stream ended: %s\n\n", Sanitize(err)))
				}
				return
			}
			if send(render(v)) != nil {
				return
			}
		case <-beat.C:
			if send([]byte(": heartbeat\n\n")) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// Sanitize keeps an error on one comment line and says nothing of etcd's
// internals beyond our own wording.
func Sanitize(err error) string {
	switch {
	case errors.Is(err, trail.ErrSlowSubscriber):
		return "client too slow; reconnect with Last-Event-ID"
	case errors.Is(err, lock.ErrClosed):
		return "node shutting down; reconnect"
	default:
		return "etcd unavailable; reconnect"
	}
}
