package api

import (
	"errors"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/sse"
	"github.com/baton-dev/baton/lock"
)

// sessionStream godoc
//
//	@Summary		Hold a stream-bound session open
//	@ID				sessionStream
//	@Description	Keeps a session created with `"bind":"stream"` alive while this stream is open, as ZooKeeper's session lives with its connection. The node serving the stream keeps the session's lease alive; once no stream of the session has been open for its `grace`, on any node, the session ends with its holds (`session_expired`). A client may reopen the stream on any node within the grace. Server-sent events: `attached` first (the Session), a `heartbeat` every quarter of the grace (at most a second apart: a client that misses them for its grace should reopen the stream elsewhere), and `ended` when the session is over, after which the stream closes.
//	@Tags			sessions
//	@Produce		text/event-stream
//	@Param			id	path	string	true	"Session ID"
//	@Success		200	{string}	string	"event stream"
//	@Failure		400	{object}	api.Problem	"invalid_request: the session is not bound to a stream"
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the session was created by another credential"
//	@Failure		404	{object}	api.Problem	"session_not_found: expired, ended by its grace, or unknown"
//	@Security		BearerAuth
//	@Router			/v1/sessions/{id}/stream [get]
func (a *API) sessionStream(c echo.Context) error {
	ctx := c.Request().Context()
	st, err := a.eng.AttachSessionStream(ctx, request.PathParam(c, "id"))
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := a.eng.GetSession(ctx, st.ID())
	if err != nil {
		return err
	}
	send, ok := sse.Open(c, a.eventWriteTimeout)
	if !ok {
		return nil
	}
	// A client reconnects at once: the grace may be half a second.
	first := fmt.Appendf(nil, "retry: 100\n\nevent: attached\ndata: ")
	out := toSession(s)
	redactSession(c, out)
	first = appendSession(first, out)
	if send(append(first, '\n', '\n')) != nil {
		return nil
	}
	keep := time.NewTicker(lock.SessionKeepAliveEvery)
	defer keep.Stop()
	beat := time.NewTicker(min(st.Grace()/4, time.Second))
	defer beat.Stop()
	for {
		select {
		case <-keep.C:
			err := st.KeepAlive(ctx)
			if errors.Is(err, lock.ErrSessionNotFound) {
				_ = send(fmt.Appendf(nil, "event: ended\ndata: {\"id\":%q}\n\n", st.ID()))
				return nil
			}
			// Another failure (no quorum) is retried at the next tick:
			// the lease outlives the grace by one of them.
		case <-beat.C:
			if send([]byte("event: heartbeat\ndata: {}\n\n")) != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// sessionBind reads a session request's bind and grace.
func sessionBind(req SessionRequest) (bind string, grace time.Duration, err error) {
	if req.Bind != nil {
		if *req.Bind != lock.BindStream {
			return "", 0, badRequest("bind", "bind must be stream, or absent")
		}
		bind = *req.Bind
	}
	if grace, err = request.Duration("grace", req.Grace); err != nil {
		return "", 0, err
	}
	return bind, grace, nil
}
