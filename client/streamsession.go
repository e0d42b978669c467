package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/baton-dev/baton/problem"
)

// StreamSession is a session bound to a stream, as ZooKeeper's is to
// its connection (OpenStreamSession): it lives while this client holds
// its stream open, on any node of Endpoints, and ends, with every hold
// in it, once no stream of it has been open for its grace. So the holds
// of a process that dies, or loses the network, go to the next waiter
// about a grace after, not a TTL after. Acquire in it with its ID as
// Session, as in any session.
//
// The client reopens the stream at once, on the next endpoint, when it
// breaks or goes silent for half the grace (the server sends heartbeats
// at least four times a grace); the session ends only when that fails
// for the whole grace.
type StreamSession struct {
	c      *Client
	info   Session
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// Default and least grace of a stream-bound session (the server's).
const (
	DefaultStreamGrace = 2 * time.Second
	MinStreamGrace     = 500 * time.Millisecond
)

// OpenStreamSession creates a session bound to a stream, with grace (0
// means DefaultStreamGrace; from MinStreamGrace to 1m), opens its
// stream and keeps it open until Close, or until the session ends
// (Done). owner labels it; empty means the client's address. It returns
// once the stream is open. Not retried, as CreateSession is not: a
// session made by a request whose answer was lost ends by itself after
// its grace.
func (c *Client) OpenStreamSession(ctx context.Context, owner string, grace time.Duration) (*StreamSession, error) {
	body := struct {
		Owner string `json:"owner,omitempty"`
		Bind  string `json:"bind"`
		Grace string `json:"grace,omitempty"`
	}{Owner: owner, Bind: "stream"}
	if grace != 0 {
		body.Grace = grace.String()
	}
	var w wireSession
	if _, err := c.do(ctx, request{op: "create stream session", method: http.MethodPost, path: "/v1/sessions", body: body}, &w); err != nil {
		return nil, err
	}
	s := &StreamSession{c: c, info: *w.session(), done: make(chan struct{})}
	sctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	src := &sessionSource{id: s.info.ID, attached: make(chan struct{})}
	idle := max(s.info.Grace/2, MinStreamGrace/2)
	errc := c.stream(sctx, "session "+s.info.ID+" stream", idle, src, func() {})
	go func() {
		err := <-errc
		s.mu.Lock()
		if sctx.Err() == nil {
			s.err = fmt.Errorf("baton: session %s ended: %w", s.info.ID, err)
		}
		s.mu.Unlock()
		close(s.done)
	}()
	select {
	case <-src.attached:
		return s, nil
	case <-s.done:
		return nil, s.Err()
	case <-ctx.Done():
		cancel()
		<-s.done
		return nil, ctx.Err()
	}
}

// ID is the session's: pass it as a hold's Session.
func (s *StreamSession) ID() string { return s.info.ID }

// Info is the session as created.
func (s *StreamSession) Info() Session { return s.info }

// Done is closed once the stream is no longer held: Close was called,
// or the session ended (Err says why).
func (s *StreamSession) Done() <-chan struct{} { return s.done }

// Err is why the session ended without Close (it wraps
// ErrSessionNotFound when a node said it is over), or nil.
func (s *StreamSession) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops holding the stream and deletes the session, releasing
// every hold in it at once rather than after the grace. Calling it
// again does nothing.
func (s *StreamSession) Close(ctx context.Context) error {
	select {
	case <-s.done:
		if s.Err() != nil {
			return nil // over already
		}
	default:
	}
	err := s.c.DeleteSession(ctx, s.info.ID)
	s.cancel()
	<-s.done
	if errors.Is(err, ErrSessionNotFound) {
		return nil
	}
	return err
}

// sessionSource keeps a stream-bound session's stream open: it asks for
// nothing but the stream, and ends when the server says the session is
// over.
type sessionSource struct {
	id       string
	attached chan struct{} // closed at the first attached message
	once     sync.Once
}

func (s *sessionSource) prepare(context.Context) (bool, error) { return true, nil }

func (s *sessionSource) target() (string, url.Values, int64) {
	return "/v1/sessions/" + pathEscape(s.id) + "/stream", nil, 0
}

func (s *sessionSource) dispatch(_ context.Context, _, typ, _ string) error {
	switch typ {
	case "attached":
		s.once.Do(func() { close(s.attached) })
	case "ended":
		// A refusal: no reconnection mends it.
		return &Error{Op: "session " + s.id + " stream", Status: http.StatusNotFound, Code: string(problem.SessionNotFound), Detail: "the session ended"}
	}
	return nil
}
