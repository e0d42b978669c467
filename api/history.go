package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"
	"github.com/baton-dev/baton/api/internal/sse"

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
//	@Failure		403	{object}	api.Problem	"forbidden: lock or name is outside the credential's rules (`prefixes`)"
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
	if o.Scope, err = scope.View(c, o.Lock, o.Name); err != nil {
		return err
	}
	evs, next, err := a.trail.History(c.Request().Context(), o)
	if err != nil {
		return err
	}
	out := History{Events: make([]Event, len(evs)), NextBefore: next}
	for i, e := range evs {
		out.Events[i] = toEvent(e)
		out.Events[i].Set = scope.Redact(c, e.Set)
	}
	return c.JSON(http.StatusOK, out)
}

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
//	@Failure		403	{object}	api.Problem	"forbidden: lock or name is outside the credential's rules (`prefixes`)"
//	@Security		BearerAuth
//	@Router			/v1/events [get]
func (a *API) events(c echo.Context) error {
	o, err := request.SubscribeOptions(c)
	if err != nil {
		return err
	}
	if o.Scope, err = scope.View(c, o.Lock, o.Name); err != nil {
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
	render := appendEv
	appendEv = func(b []byte, ev lock.Event) ([]byte, error) {
		ev.Set = scope.Redact(c, ev.Set)
		return render(b, ev)
	}
	sub, err := a.trail.Subscribe(ctx, o)
	if err != nil {
		return err
	}
	defer sub.Close()
	send, ok := sse.Open(c, a.eventWriteTimeout)
	if !ok {
		return nil
	}
	sse.Pump(ctx, sub, send, appendEv, a.heartbeat)
	return nil
}

func appendEvent(b []byte, ev lock.Event) []byte {
	data, _ := json.Marshal(toEvent(ev))
	b = fmt.Appendf(b, "id: %d\nevent: %s\ndata: ", ev.Revision, ev.Type)
	b = append(b, data...)
	return append(b, '\n', '\n')
}
