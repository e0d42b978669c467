package api

import (
	"net/http"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// ListedSession is a session as GET /v1/sessions lists it: a Session
// without `locks`. A session's locks are its lease's attached keys, which
// etcd hands back all at once, so listing them would make one page of
// sessions read every lock of every session on it; GET
// /v1/sessions/{id} returns them.
type ListedSession struct {
	ID        string `json:"id" example:"694d2279b4919071"`
	Owner     string `json:"owner" example:"worker-1"`
	TTL       string `json:"ttl" example:"30s"`
	CreatedAt Time   `json:"created_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
	ExpiresAt Time   `json:"expires_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:43.881Z"`
}

// SessionList is a page of live sessions.
type SessionList struct {
	Sessions   []ListedSession `json:"sessions"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// createSession godoc
//
//	@Summary		Create a session
//	@ID				createSession
//	@Description	A session is one lease that many locks share (like Chubby's and Consul's): renew it and they all live; let it expire, or delete it, and they all end. Its `id` is the etcd lease ID in hex.
//	@Tags			sessions
//	@Accept			json
//	@Produce		json
//	@Param			request	body		api.SessionRequest	false	"TTL (default 30s, from 2s to 24h) and owner (default: the client's address); or bind stream, with its grace"
//	@Success		201		{object}	api.Session
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		429		{object}	api.Problem	"rate_limited, or too_many_sessions (with `limit`)"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/sessions [post]
func (a *API) createSession(c echo.Context) error {
	var req SessionRequest
	if err := request.Body(c, &req, true); err != nil {
		return err
	}
	ttl, err := request.TTL(req.TTL, a.eng.Config().MinTTL)
	if err != nil {
		return err
	}
	bind, grace, err := sessionBind(req)
	if err != nil {
		return err
	}
	if err := scope.Check(c, auth.Write, owner(c, req.Owner)); err != nil {
		return err
	}
	var s *lock.Session
	switch {
	case bind != "" && req.TTL != nil:
		return badRequest("ttl", "ttl must be absent with bind stream: the session lives while its stream is open, and grace says how long after")
	case bind != "":
		s, err = a.eng.CreateStreamSession(c.Request().Context(), owner(c, req.Owner), grace)
	case req.Grace != nil:
		return badRequest("grace", "grace needs bind stream: a session that lives by its ttl has no grace")
	default:
		s, err = a.eng.CreateSession(c.Request().Context(), owner(c, req.Owner), ttl)
	}
	if err != nil {
		return err
	}
	return writeSession(c, http.StatusCreated, toSession(s))
}

// listSessions godoc
//
//	@Summary		List sessions
//	@ID				listSessions
//	@Description	Live sessions sorted by owner, then ID, a page at a time; `prefix` keeps those whose owner starts with it. Pass `next_cursor` as `cursor` for the next page; it is absent on the last page.
//	@Description	Cost: one etcd range read of at most `limit`+1 values from an owner index (one key per session, under the session's lease), plus one lease lookup per session listed. Sessions of owners outside `prefix` cost nothing; etcd counts, in memory, the index entries of the matching owners' sessions after the cursor (about 1 ms per 10,000). A listed session has no `locks` member: GET /v1/sessions/{id} returns them, so a page never reads every lock of its sessions.
//	@Description	A session created before this node's version (which added the owner index) is listed from its first renew through POST /v1/sessions/{id}/renew.
//	@Tags			sessions
//	@Produce		json
//	@Param			prefix	query		string	false	"Only sessions whose owner starts with this" maxlength(128)
//	@Param			limit	query		int		false	"Page size, 1-1000"	default(100) minimum(1) maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page"
//	@Success		200		{object}	api.SessionList
//	@Security		BearerAuth
//	@Router			/v1/sessions [get]
func (a *API) listSessions(c echo.Context) error {
	// The engine checks the cursor's shape (owner, NUL, ID).
	o, err := request.ListOf(c, lock.CheckOwnerPrefix, func(after string) bool { return after != "" })
	if err != nil {
		return err
	}
	var sessions []*lock.Session
	next, err := scope.Page(c, o.Prefix, o.After, o.Limit, func(prefix, after string, limit int) (int, string, string, error) {
		ss, next, err := a.eng.ListSessions(c.Request().Context(), lock.SessionListOptions{Prefix: prefix, After: after, Limit: limit})
		if err != nil {
			return 0, "", "", err
		}
		sessions = append(sessions, ss...)
		last := ""
		if len(ss) > 0 {
			last = ss[len(ss)-1].Owner + "\x00" + ss[len(ss)-1].ID
		}
		return len(ss), last, next, nil
	})
	if err != nil {
		return err
	}
	out := SessionList{Sessions: make([]ListedSession, len(sessions))}
	for i, s := range sessions {
		out.Sessions[i] = ListedSession{
			ID: s.ID, Owner: s.Owner, TTL: s.TTL.String(), CreatedAt: Time(s.CreatedAt), ExpiresAt: Time(s.ExpiresAt),
		}
	}
	out.NextCursor = request.EncodeCursor(next) // "" on the last page
	return c.JSON(http.StatusOK, out)
}

// getSession godoc
//
//	@Summary		Get a session
//	@ID				getSession
//	@Description	The session with its expiry and the locks it holds.
//	@Tags			sessions
//	@Produce		json
//	@Param			id	path		string	true	"Session ID"
//	@Success		200	{object}	api.Session
//	@Failure		404	{object}	api.Problem	"session_not_found"
//	@Failure		403	{object}	api.Problem	"forbidden: the session's owner is outside the credential's rules (`prefixes`)"
//	@Security		BearerAuth
//	@Router			/v1/sessions/{id} [get]
func (a *API) getSession(c echo.Context) error {
	s, err := a.eng.GetSession(c.Request().Context(), request.PathParam(c, "id"))
	if err != nil {
		return err
	}
	if err := scope.Check(c, auth.Read, s.Owner); err != nil {
		return err
	}
	return writeSession(c, http.StatusOK, toSession(s))
}

// renewSession godoc
//
//	@Summary		Renew a session
//	@ID				renewSession
//	@Description	Extends the session's lease by its TTL, and with it every lock of the session.
//	@Tags			sessions
//	@Produce		json
//	@Param			id	path		string	true	"Session ID"
//	@Success		200	{object}	api.Session
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the session belongs to another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404	{object}	api.Problem	"session_not_found: expired or unknown"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/sessions/{id}/renew [post]
func (a *API) renewSession(c echo.Context) error {
	if err := request.Body(c, &struct{}{}, true); err != nil {
		return err
	}
	s, err := a.eng.RenewSession(c.Request().Context(), request.PathParam(c, "id"))
	if err != nil {
		return err
	}
	return writeSession(c, http.StatusOK, toSession(s))
}

// deleteSession godoc
//
//	@Summary		Delete a session
//	@ID				deleteSession
//	@Description	Releases every lock of the session, each recorded as `released`, then ends the session.
//	@Tags			sessions
//	@Produce		json
//	@Param			id	path	string	true	"Session ID"
//	@Success		204
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the session belongs to another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404	{object}	api.Problem	"session_not_found"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/sessions/{id} [delete]
func (a *API) deleteSession(c echo.Context) error {
	if err := a.eng.DeleteSession(c.Request().Context(), request.PathParam(c, "id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
