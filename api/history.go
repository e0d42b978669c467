package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/baton-dev/baton/api/internal/request"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// history godoc
//
//	@Summary		Read the audit trail
//	@ID				getHistory
//	@Description	Every acquire, release, expiry, session expiry and revoke, newest first, exactly once. Filters combine; paging with `before` stays stable while new events arrive. Pass `next_before` as `before` for the next page; it is absent on the last page. A page never splits events of one revision, so it may exceed `limit` when more events than that share one. A page of the whole trail, of one lock (`lock`) or of one thing (`kind` with `name`) costs `limit` events however long the trail is; `owner`, `type`, `kind` alone, `from` and `to` are applied as the trail is read, at most 5,000 events per request, so a short or even empty page may carry `next_before`: follow it until it is absent.
//	@Tags			history
//	@Produce		json
//	@Param			lock	query		string	false	"Only this lock's events"
//	@Param			kind	query		string	false	"Only events about this kind of thing"	Enums(lock, election, semaphore, rwlock, fence, key)
//	@Param			name	query		string	false	"Only events about the thing of this name (with kind lock, or no kind: the same as lock)"
//	@Param			limit	query		int		false	"Page size, 1-1000"							default(100) minimum(1) maximum(1000)
//	@Param			before	query		int		false	"Only events recorded before this revision"	format(int64) minimum(1)
//	@Param			owner	query		string	false	"Only events of holds by this owner"
//	@Param			type	query		string	false	"Only these types, comma-separated: acquired, released, expired, revoked, session_expired, elected, resigned, proclaimed, fence_reset, delay_cleared, yield_requested, put, delete"
//	@Param			from	query		string	false	"Only events at or after this time (RFC 3339)"	format(date-time)
//	@Param			to		query		string	false	"Only events before this time (RFC 3339)"		format(date-time)
//	@Success		200		{object}	api.History
//	@Security		BearerAuth
//	@Router			/v1/history [get]
func (a *API) history(c echo.Context) error {
	q := request.Query(c)
	limit, _, err := request.Int(q, "limit", 1, trail.MaxListLimit)
	if err != nil {
		return err
	}
	before, _, err := request.Int(q, "before", 1, math.MaxInt64)
	if err != nil {
		return err
	}
	o := trail.HistoryOptions{
		Lock: q.Get("lock"), Kind: lock.EventKind(q.Get("kind")), Name: q.Get("name"),
		Limit: int(limit), Before: before, Owner: q.Get("owner"),
	}
	if t := q.Get("type"); t != "" {
		for _, part := range strings.Split(t, ",") {
			o.Types = append(o.Types, lock.EventType(strings.TrimSpace(part)))
		}
	}
	if o.From, err = request.Time(q, "from"); err != nil {
		return err
	}
	if o.To, err = request.Time(q, "to"); err != nil {
		return err
	}
	evs, next, err := a.trail.History(c.Request().Context(), o)
	if err != nil {
		return err
	}
	out := History{Events: make([]Event, len(evs)), NextBefore: next}
	for i, e := range evs {
		out.Events[i] = toEvent(e)
	}
	return c.JSON(http.StatusOK, out)
}

// defaultHeartbeat keeps idle streams alive through proxies that close
// connections without traffic.
const defaultHeartbeat = 15 * time.Second

// defaultEventWriteTimeout bounds each write to an event stream: a client
// that stops reading fills its socket buffers, the write blocks, and the
// stream is dropped when this passes, instead of pinning a goroutine and a
// subscription for as long as the connection lives.
const defaultEventWriteTimeout = 10 * time.Second

// events godoc
//
//	@Summary		Stream events (Server-Sent Events)
//	@ID				streamEvents
//	@Description	The audit trail, live, as `text/event-stream`: each message has `id:` = the event's revision, `event:` = its type, `data:` = the Event as JSON. With `since` (or the `Last-Event-ID` header a reconnecting EventSource sends), the events recorded after that revision (exclusive: `since=0` replays every retained event) are replayed first, then live ones follow with no gap and no duplicate; events of one revision are sent together. A comment line every 15 s keeps idle streams open. A client that reads too slowly (it falls a buffer of events behind, or one write to it waits 10 s) is disconnected, and resumes with `Last-Event-ID`.
//	@Tags			history
//	@Produce		text/event-stream
//	@Param			lock			query		string		false	"Only this lock's events"
//	@Param			kind			query		string		false	"Only events about this kind of thing"	Enums(lock, election, semaphore, rwlock, fence, key)
//	@Param			name			query		string		false	"Only events about the thing of this name (with kind lock, or no kind: the same as lock)"
//	@Param			since			query		int			false	"Replay events recorded after this revision first (exclusive: 0 replays every retained event); without it only live events come"	format(int64)
//	@Param			Last-Event-ID	header		int			false	"Same as since; wins over it (EventSource sends it when it reconnects)"	format(int64)
//	@Success		200				{string}	string		"An endless text/event-stream"
//	@Failure		429				{object}	api.Problem	"rate_limited, or too_many_streams (with `limit`): this client address or credential holds its maximum of streams on this node"
//	@Failure		503				{object}	api.Problem	"unavailable, shutting_down, or too_many_streams (with `limit`): this node serves its maximum of streams"
//	@Security		BearerAuth
//	@Router			/v1/events [get]
func (a *API) events(c echo.Context) error {
	o, err := request.SubscribeOptions(c)
	if err != nil {
		return err
	}
	return a.serveEvents(c, o, func(b []byte, ev lock.Event) ([]byte, error) { return appendEvent(b, ev), nil })
}

// serveEvents answers with the stream of the trail's events o selects,
// each rendered by appendEv. The trail caps the subscriptions of this
// node (too_many_streams) and the events each one buffers (a reader that
// falls behind is dropped, and resumes with Last-Event-ID).
func (a *API) serveEvents(c echo.Context, o trail.SubscribeOptions, appendEv func([]byte, lock.Event) ([]byte, error)) error {
	o.Buffer = a.eventBuffer
	ctx := c.Request().Context()
	sub, err := a.trail.Subscribe(ctx, o)
	if err != nil {
		return err
	}
	defer sub.Close()
	send, ok := a.openStream(c)
	if !ok {
		return nil
	}
	a.streamWith(ctx, sub, send, appendEv)
	return nil
}

// openStream begins a text/event-stream answer, and returns the function
// that sends each part of it: ok is false when the client left already.
func (a *API) openStream(c echo.Context) (send func([]byte) error, ok bool) {
	w := c.Response()
	rc := http.NewResponseController(w.Writer)
	// The server's timeouts are for ordinary requests; a stream lives until
	// the client or the server ends it. The read deadline matters too: when
	// it passes, net/http cancels the request's context. Writes get a
	// deadline each instead (send), so a healthy stream lives on and a
	// client that stopped reading is dropped.
	_ = rc.SetReadDeadline(time.Time{})
	send = func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(a.eventWriteTimeout))
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

// streamWith sends sub's events, each rendered by appendEv, and a
// heartbeat while there are none, until the subscription ends, the
// client leaves, a write to it fails or appendEv fails (the client
// resumes from the last event it has).
func (a *API) streamWith(ctx context.Context, sub *trail.Subscription, send func([]byte) error, appendEv func([]byte, lock.Event) ([]byte, error)) {
	beat := time.NewTicker(a.heartbeat)
	defer beat.Stop()
	var buf []byte
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				// Tell the client why, as a comment: the stream's status
				// line is long gone. EventSource reconnects by itself.
				if err := sub.Err(); err != nil && !errors.Is(err, ctx.Err()) {
					_ = send(fmt.Appendf(nil, ": stream ended: %s\n\n", sanitize(err)))
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
				_ = send(fmt.Appendf(nil, ": stream ended: %s\n\n", sanitize(err)))
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

func appendEvent(b []byte, ev lock.Event) []byte {
	data, _ := json.Marshal(toEvent(ev))
	b = fmt.Appendf(b, "id: %d\nevent: %s\ndata: ", ev.Revision, ev.Type)
	b = append(b, data...)
	return append(b, '\n', '\n')
}

// sanitize keeps an error on one comment line and says nothing of etcd's
// internals beyond our own wording.
func sanitize(err error) string {
	switch {
	case errors.Is(err, trail.ErrSlowSubscriber):
		return "client too slow; reconnect with Last-Event-ID"
	case errors.Is(err, lock.ErrClosed):
		return "node shutting down; reconnect"
	default:
		return "etcd unavailable; reconnect"
	}
}
