package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/problem"
)

// defaultIdleTimeout is how long a stream may stay silent before it is
// taken for dead: the server sends a comment every 15s, so three missed
// ones mean a connection that died without a word (a half-open TCP
// connection after a partition never errors by itself).
const defaultIdleTimeout = 45 * time.Second

// maxEventLine bounds one line of the stream.
const maxEventLine = 1 << 20

// EventsOptions select an event stream.
type EventsOptions struct {
	// Lock keeps one lock's events only.
	Lock string
	// Kind and Name keep the events of one kind of thing ("lock",
	// "election", …) and, with Name, of the thing of that name only.
	Kind, Name string
	// Since replays the events recorded after this revision first; 0
	// means the events from now on.
	Since int64
	// IdleTimeout is how long the stream may stay silent, heartbeats
	// included, before the client reconnects; 0 means 45s.
	IdleTimeout time.Duration
}

// Events streams the audit trail (GET /v1/events, Server-Sent Events):
// events in revision order, every one exactly once. When the stream
// breaks (a node stops, a proxy cuts it, the client reads too slowly) it
// reconnects by itself, to the next endpoint, with Last-Event-ID, and
// resumes without a gap or a duplicate.
//
// With Since 0, Events asks for the current revision before it returns,
// so every event recorded after Events returns is delivered (unless no
// node answers then; the stream then starts from whenever one does).
//
// The event channel is closed when the stream ends: when ctx ends, or
// when the server refuses the request itself with a 4xx (an invalid lock
// name, a missing or wrong bearer token), which no reconnection can mend.
// The error channel then yields why, once, and is closed. Read events
// promptly: a reader that falls far behind is disconnected by the server,
// and resumes.
func (c *Client) Events(ctx context.Context, o EventsOptions) (<-chan Event, <-chan error) {
	evc := make(chan Event, 16)
	s := &eventStream{c: c, o: o, out: evc, since: o.Since, haveBase: o.Since > 0}
	if !s.haveBase {
		_ = s.fetchBase(ctx) // the stream asks again, and reports a refusal
	}
	errc := c.stream(ctx, "events", o.IdleTimeout, s, func() { close(evc) })
	return evc, errc
}

// sseSource is one kind of Server-Sent Events stream, which sseStream
// keeps connected: what to ask for, and what to do with each message.
type sseSource interface {
	// prepare readies the next connection: false when it cannot be made
	// yet, with err saying why (a refusal ends the stream).
	prepare(ctx context.Context) (bool, error)
	// target is the next connection's path and query, and the
	// Last-Event-ID to send (0: none).
	target() (path string, q url.Values, lastID int64)
	// dispatch takes one message; an error ends the connection.
	dispatch(ctx context.Context, id, typ, data string) error
}

// sseStream keeps an sseSource connected: it reconnects, to the next
// endpoint, with a backoff, until ctx ends or a node refuses the request
// itself.
type sseStream struct {
	c        *Client
	what     string // names the stream in errors
	idle     time.Duration
	src      sseSource
	endpoint int
}

// stream runs src until ctx ends or it is refused, then calls closeOut
// and yields why on the returned channel, once.
func (c *Client) stream(ctx context.Context, what string, idle time.Duration, src sseSource, closeOut func()) <-chan error {
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	s := &sseStream{c: c, what: what, idle: idle, src: src, endpoint: int(c.preferred.Load())}
	errc := make(chan error, 1)
	go func() {
		err := s.run(ctx)
		closeOut()
		errc <- err
		close(errc)
	}()
	return errc
}

// eventStream is the state of Events across connections.
type eventStream struct {
	c   *Client
	o   EventsOptions
	out chan<- Event

	// since is where the next connection resumes: the server sends the
	// events recorded after it.
	since    int64
	haveBase bool
	// last is the revision of the latest event delivered, and seen the
	// events of that revision delivered so far. A connection may break in
	// the middle of one revision's events, so a reconnection asks for
	// that whole revision again and skips what was delivered.
	last int64
	seen map[eventKey]bool
}

// eventKey tells apart the events of one revision (one transaction).
type eventKey struct {
	typ, kind, name, lock, session string
	token                          int64
}

// fetchBase asks a node for the current revision. Its error matters
// only when it is the request's own fault (401, 403): see refused.
func (s *eventStream) fetchBase(ctx context.Context) error {
	ci, err := s.c.Cluster(ctx)
	if err == nil {
		s.since, s.haveBase = ci.Revision, true
	}
	return err
}

// refused reports whether err is a node's answer about the request itself
// (a 4xx whose code is Final in package problem: a bad lock name, no valid
// bearer token), which no reconnection can mend. A cap that clears by
// itself (too_many_streams, rate_limited) or a 408 is waited out.
func refused(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Status < 400 || e.Status >= 500 || e.Status == http.StatusRequestTimeout {
		return false
	}
	if i, ok := problem.Lookup(e.Code); ok {
		return i.Retry == problem.Final
	}
	return e.Status != http.StatusTooManyRequests
}

// prepare: without a revision to resume from, a reconnection could not
// tell what it missed, so there is no stream until a node says where we
// are.
func (s *eventStream) prepare(ctx context.Context) (bool, error) {
	if s.haveBase {
		return true, nil
	}
	err := s.fetchBase(ctx)
	return s.haveBase, err
}

func (s *eventStream) target() (string, url.Values, int64) {
	q := url.Values{}
	for k, v := range map[string]string{"lock": s.o.Lock, "kind": s.o.Kind, "name": s.o.Name} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return "/v1/events", q, s.resumeFrom()
}

func (s *sseStream) run(ctx context.Context) error {
	failures := 0
	for {
		var retryAfter time.Duration
		connected := false
		// A refusal (a bad token, say) ends the stream: asking again
		// cannot mend it.
		ok, err := s.src.prepare(ctx)
		if ok {
			connected, retryAfter, err = s.connect(ctx)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if refused(err) {
			// Unless the token file has a new token (a JWT renewed
			// before the old one expired, which ended the stream).
			if errors.Is(err, ErrUnauthorized) && s.c.bearer.reload() {
				continue
			}
			return fmt.Errorf("%s: %w", s.what, err)
		}
		if connected {
			failures = 0
		} else {
			failures++
		}
		s.endpoint = (s.endpoint + 1) % len(s.c.endpoints)
		// Even after a stream that worked there is a short pause: a node
		// that accepts and at once drops the stream must not make us spin.
		if sleep(ctx, max(s.c.backoff(failures), min(retryAfter, maxRetryAfter))) != nil {
			return ctx.Err()
		}
	}
}

// connect runs one connection until it breaks. connected reports whether
// the server accepted it, so that a stream that worked resets the backoff.
func (s *sseStream) connect(ctx context.Context) (connected bool, retryAfter time.Duration, err error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The request timeout bounds the wait for the answer's head only; then
	// the idle timer watches the stream.
	watchdog := time.AfterFunc(s.c.timeout, cancel)
	defer watchdog.Stop()

	path, q, from := s.src.target()
	base := s.c.endpoints[s.endpoint]
	req, err := s.c.newRequest(cctx, base, http.MethodGet, path, q, nil)
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if from > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(from, 10))
	}
	resp, err := s.c.hc.Do(req)
	if err != nil {
		return false, 0, err
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e := decodeError(resp)
		return false, e.RetryAfter, e
	}
	s.c.preferred.Store(int64(s.endpoint))
	watchdog.Reset(s.idle)
	connected = true

	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxEventLine)
	var data strings.Builder
	var id, typ string
	for sc.Scan() {
		watchdog.Reset(s.idle)
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" { // a blank line ends a message
			if data.Len() > 0 {
				// A slow reader must not be taken for a dead stream.
				watchdog.Stop()
				err := s.src.dispatch(cctx, id, typ, data.String())
				watchdog.Reset(s.idle)
				if err != nil {
					return connected, 0, err
				}
			}
			data.Reset()
			id, typ = "", ""
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: heartbeat, or why the server ends the stream
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
		case "id":
			id = value
		case "event":
			typ = value
		}
	}
	if err := sc.Err(); err != nil {
		return connected, 0, fmt.Errorf("%w: %s: %s stream: %w", ErrUnavailable, base, s.what, err)
	}
	return connected, 0, fmt.Errorf("%w: %s: %s stream ended", ErrUnavailable, base, s.what)
}

// resumeFrom is the revision after which the next connection starts.
func (s *eventStream) resumeFrom() int64 {
	if s.last > 0 {
		return s.last - 1 // the last revision again: it may have been cut short
	}
	return s.since
}

// dispatch delivers one message unless it was delivered before.
func (s *eventStream) dispatch(ctx context.Context, id, typ, data string) error {
	var w wireEvent
	if err := json.Unmarshal([]byte(data), &w); err != nil {
		return fmt.Errorf("%w: event stream: bad event %.100q: %w", ErrUnavailable, data, err)
	}
	ev := w.event()
	if ev.Revision == 0 {
		ev.Revision, _ = strconv.ParseInt(id, 10, 64)
	}
	if ev.Type == "" {
		ev.Type = typ
	}
	k := eventKey{typ: ev.Type, kind: ev.Kind, name: ev.Name, lock: ev.Lock, session: ev.Session, token: ev.Token}
	if ev.Revision < s.last || ev.Revision == s.last && s.seen[k] || s.last == 0 && ev.Revision <= s.since {
		return nil // delivered already, or from before where we resumed
	}
	select {
	case s.out <- ev:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Only now: an event not handed over must be asked for again.
	if ev.Revision > s.last {
		s.last, s.seen = ev.Revision, map[eventKey]bool{}
	}
	s.seen[k] = true
	return nil
}
