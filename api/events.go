package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
)

// defaultHeartbeat keeps idle streams alive through proxies that close
// connections without traffic.
const defaultHeartbeat = 15 * time.Second

// events godoc
//
//	@Summary		Stream events (Server-Sent Events)
//	@ID				streamEvents
//	@Description	The audit trail, live, as `text/event-stream`: each message has `id:` = the event's revision, `event:` = its type, `data:` = the Event as JSON. With `since` (or the `Last-Event-ID` header a reconnecting EventSource sends), the events recorded after that revision are replayed first, then live ones follow with no gap and no duplicate; events of one revision are sent together. A comment line every 15 s keeps idle streams open. A client that reads too slowly is disconnected, and resumes with `Last-Event-ID`.
//	@Tags			history
//	@Produce		text/event-stream
//	@Param			lock			query		string		false	"Only this lock's events"
//	@Param			since			query		int			false	"Replay events recorded after this revision first"						format(int64)
//	@Param			Last-Event-ID	header		int			false	"Same as since; wins over it (EventSource sends it when it reconnects)"	format(int64)
//	@Success		200				{string}	string		"An endless text/event-stream"
//	@Failure		400				{object}	api.Problem	"invalid_request"
//	@Failure		401				{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		503				{object}	api.Problem	"unavailable or shutting_down"
//	@Header			503				{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/events [get]
func (a *API) events(c echo.Context) error {
	q, err := query(c, "lock", "since")
	if err != nil {
		return err
	}
	since, _, err := intParam(q, "since", 0, 1<<62)
	if err != nil {
		return err
	}
	if h := strings.TrimSpace(c.Request().Header.Get("Last-Event-ID")); h != "" {
		n, err := strconv.ParseInt(h, 10, 64)
		if err != nil || n < 0 {
			return badRequest("Last-Event-ID", "the Last-Event-ID header must be a revision (an integer, 0 or more)")
		}
		since = n
	}
	ctx := c.Request().Context()
	sub, err := a.eng.Subscribe(ctx, lock.SubscribeOptions{Since: since, Lock: q.Get("lock")})
	if err != nil {
		return err
	}
	defer sub.Close()

	w := c.Response()
	rc := http.NewResponseController(w.Writer)
	// The server's timeouts are for ordinary requests; a stream lives until
	// the client or the server ends it. The read deadline matters too: when
	// it passes, net/http cancels the request's context.
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no buffering in nginx
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return nil
	}
	_ = rc.Flush()

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
					fmt.Fprintf(w, ": stream ended: %s\n\n", sanitize(err))
					_ = rc.Flush()
				}
				return nil
			}
			buf = appendEvent(buf[:0], ev)
			// Whatever else is ready goes in the same write, so the events
			// of one revision arrive together.
			for more := true; more; {
				select {
				case ev, ok := <-sub.C:
					if !ok {
						more = false
						break
					}
					buf = appendEvent(buf, ev)
				default:
					more = false
				}
			}
			if _, err := w.Write(buf); err != nil {
				return nil
			}
			_ = rc.Flush()
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return nil
			}
			_ = rc.Flush()
		case <-ctx.Done():
			return nil
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
	case errors.Is(err, lock.ErrSlowSubscriber):
		return "client too slow; reconnect with Last-Event-ID"
	case errors.Is(err, lock.ErrClosed):
		return "node shutting down; reconnect"
	default:
		return "etcd unavailable; reconnect"
	}
}
