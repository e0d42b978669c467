package api

import (
	"net/http"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
)

// RWLock is a read/write lock's state.
type RWLock struct {
	Name string `json:"name" example:"catalog"`
	// Mode is the holds': write (one hold) or read (any number).
	Mode string `json:"mode" example:"read" enums:"read,write"`
	// Holders are the holds, oldest first.
	Holders []*Hold `json:"holders"`
	// Waiters are the acquires waiting, first to be served first, each
	// with its mode; only GET /v1/rwlocks/{name} fills it in (the first
	// 1,000).
	Waiters []Waiter `json:"waiters,omitempty"`
}

// RWLockList is a page of read/write locks that are held.
type RWLockList struct {
	RWLocks    []*RWLock `json:"rwlocks"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// RWRequest is the body of POST /v1/rwlocks/{name}.
type RWRequest struct {
	// Mode is read (shared) or write (exclusive).
	Mode *string `json:"mode" example:"read" enums:"read,write"`
	// Owner labels the hold for people and the audit trail: 1-128
	// printable characters. Absent, it is the client's address.
	Owner *string `json:"owner,omitempty" minLength:"1" maxLength:"128" example:"w1"`
	// TTL is the lease of a hold without session: a duration from 2s to
	// 24h, 30s when absent. It must be absent with session.
	TTL     *string `json:"ttl,omitempty" example:"30s"`
	Session *string `json:"session,omitempty" example:"694d2279b4919071"`
	// Wait is how long to queue while others hold it: a duration up to 5m.
	// Absent or 0s, a held one answers 409 at once.
	Wait *string `json:"wait,omitempty" example:"10s"`
	// KeepPlace, with session and wait, keeps the session's place in the
	// queue when the wait runs out (409 with place_kept): the session's
	// next acquire waits from there, or finds the hold granted. A wait
	// longer than 5m is a run of such acquires.
	KeepPlace *bool `json:"keep_place,omitempty" example:"true"`
	// MinHold is the hold's at-least window (ShedLock's lockAtLeastFor):
	// a duration up to 24h. However early the hold ends, by release,
	// expiry or revoke, it keeps out what it kept out until acquired_at
	// + min_hold: a write hold every hold, a read hold the writers.
	MinHold *string `json:"min_hold,omitempty" example:"5m"`
	// Metadata is for people and the dashboard: at most 16 string pairs,
	// with keys not empty and keys and values 4 KiB (4,096 bytes) in all.
	Metadata map[string]string `json:"metadata,omitempty"`
}

func toRWLock(rw *lock.RWLock) *RWLock {
	return &RWLock{Name: rw.Name, Mode: string(rw.Mode), Holders: toHolds(rw.Holders)}
}

// acquireRW godoc
//
//	@Summary		Take a read or write hold of a read/write lock
//	@ID				acquireRW
//	@Description	Readers share the lock; a writer excludes everyone. Every hold has its own fencing token (from the same sequence as lock tokens), and a write hold's token is greater than the token of every hold that ended before it was granted; fenced writes may name `rwlock` to require exactly this write hold.
//	@Description	Strictly first come, first served across every node: a reader that comes while a writer waits queues behind it, so writers never starve, and the readers between two writers in line are granted together when the writer ahead of them releases (each in a transaction of its own, with its own token). With `wait`, the request waits in line for up to that long (at most 5m); without it, a lock held in the way answers 409 at once. `ttl` and `session` are as for locks. A write hold in a session that holds the write hold already answers 200 with it; every read request takes a hold of its own.
//	@Tags			rwlocks
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string			true	"Read/write lock name: 1-128 characters from A-Z a-z 0-9 . _ : -" minlength(1) maxlength(128)
//	@Param			request	body		api.RWRequest	true	"The mode, and how to hold the lock"
//	@Success		201		{object}	api.Hold
//	@Success		200		{object}	api.Hold	"The same session already holds the write hold (idempotent)"
//	@Failure		400		{object}	api.Problem	"invalid_request: the field named in `field` is wrong"
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the session belongs to another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"session_not_found"
//	@Failure		409		{object}	api.Problem	"lock_held, with `holders` (the holds in the way)"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		429		{object}	api.Problem	"rate_limited, too_many_waiters or too_many_locks (with `limit`)"
//	@Failure		503		{object}	api.Problem	"unavailable or shutting_down; the request may or may not have taken effect"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/rwlocks/{name} [post]
func (a *API) acquireRW(c echo.Context) error {
	var req RWRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Mode == nil {
		return badRequest("mode", "mode is required: read or write")
	}
	t, err := a.terms(req.TTL, req.Wait, req.Session, req.KeepPlace)
	if err != nil {
		return err
	}
	rr := lock.RWRequest{Name: request.PathParam(c, "name"), Mode: lock.RWMode(*req.Mode), Owner: owner(c, req.Owner), Metadata: req.Metadata,
		TTL: t.TTL, Wait: t.Wait, Session: t.Session, KeepPlace: t.KeepPlace}
	if rr.MinHold, err = request.Duration("min_hold", req.MinHold); err != nil {
		return err
	}
	l, fresh, err := a.eng.AcquireRW(c.Request().Context(), rr)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !fresh {
		status = http.StatusOK
	}
	return c.JSON(status, toHold(l))
}

// getRWLock godoc
//
//	@Summary		Get a read/write lock
//	@ID				getRWLock
//	@Description	Returns the mode, the holds (oldest first; the first 1,000) and the waiters, each with its mode, in the order they will be served (the first 1,000).
//	@Tags			rwlocks
//	@Produce		json
//	@Param			name	path		string	true	"Read/write lock name" minlength(1) maxlength(128)
//	@Success		200		{object}	api.RWLock
//	@Failure		404		{object}	api.Problem	"not_held: nothing holds it"
//	@Security		BearerAuth
//	@Router			/v1/rwlocks/{name} [get]
func (a *API) getRWLock(c echo.Context) error {
	rw, err := a.eng.RWLock(c.Request().Context(), request.PathParam(c, "name"))
	if err != nil {
		return err
	}
	out := toRWLock(rw)
	out.Waiters = toWaiters(rw.Waiters)
	return c.JSON(http.StatusOK, out)
}

// listRWLocks godoc
//
//	@Summary		List held read/write locks
//	@ID				listRWLocks
//	@Description	Read/write locks that are held, sorted by name, with their holds (not their waiters), a page at a time. Pass `next_cursor` as `cursor` for the next page; it is absent on the last page. A page holds at most 1,000 holds beyond its last lock's, so it may hold fewer locks than `limit`.
//	@Tags			rwlocks
//	@Produce		json
//	@Param			prefix	query		string	false	"Only read/write locks whose name starts with this"
//	@Param			limit	query		int		false	"Page size, 1-1000"	default(100) minimum(1) maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page"
//	@Success		200		{object}	api.RWLockList
//	@Security		BearerAuth
//	@Router			/v1/rwlocks [get]
func (a *API) listRWLocks(c echo.Context) error {
	o, err := request.ListOptions(c)
	if err != nil {
		return err
	}
	rws, next, err := scope.List(c, o, func(o lock.ListOptions) ([]*lock.RWLock, string, error) {
		return a.eng.RWLocks(c.Request().Context(), o)
	}, func(x *lock.RWLock) string { return x.Name })
	if err != nil {
		return err
	}
	out := RWLockList{RWLocks: make([]*RWLock, len(rws))}
	for i, rw := range rws {
		out.RWLocks[i] = toRWLock(rw)
	}
	out.NextCursor = request.EncodeCursor(next) // "" on the last page
	return c.JSON(http.StatusOK, out)
}

// renewRW godoc
//
//	@Summary		Renew a read or write hold
//	@ID				renewRW
//	@Description	Extends the lease of the hold that `token` holds, and returns the new `expires_at`. A hold in a session renews the whole session. The token never changes.
//	@Tags			rwlocks
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Read/write lock name" minlength(1) maxlength(128)
//	@Param			request	body		api.RenewRequest	true	"The hold's token"
//	@Success		200		{object}	api.Hold
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the hold was taken by another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"not_held: no hold of the lock has this token"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/rwlocks/{name}/renew [post]
func (a *API) renewRW(c echo.Context) error {
	var req RenewRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	l, err := a.eng.RenewRW(c.Request().Context(), request.PathParam(c, "name"), *req.Token)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toHold(l))
}

// releaseRW godoc
//
//	@Summary		Release a read or write hold
//	@ID				releaseRW
//	@Description	Ends the hold that `token` holds, audited as `released`. The oldest waiter is granted from the same etcd transaction when the lock is free for it: a writer when the last hold ends, a reader when the writer's does.
//	@Tags			rwlocks
//	@Param			name	path	string	true	"Read/write lock name" minlength(1) maxlength(128)
//	@Param			token	query	int		true	"The hold's token"	format(int64)
//	@Success		204
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the hold was taken by another credential; or cross_origin"
//	@Failure		404	{object}	api.Problem	"not_held: no hold of the lock has this token"
//	@Security		BearerAuth
//	@Router			/v1/rwlocks/{name} [delete]
func (a *API) releaseRW(c echo.Context) error {
	tok, err := request.Token(c, "/v1/rwlocks/{name}")
	if err != nil {
		return err
	}
	if err := a.eng.ReleaseRW(c.Request().Context(), request.PathParam(c, "name"), tok); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// revokeRW godoc
//
//	@Summary		Revoke a read or write hold (operator)
//	@ID				revokeRW
//	@Description	Ends the hold that `token` holds, audited as `revoked` with the reason. The waiters are served once the lock is free for them.
//	@Tags			rwlocks
//	@Accept			json
//	@Param			name	path	string					true	"Read/write lock name" minlength(1) maxlength(128)
//	@Param			request	body	api.HoldRevokeRequest	true	"The hold's token, and why"
//	@Success		204
//	@Failure		404	{object}	api.Problem	"not_held: no hold of the lock has this token"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/rwlocks/{name}/revoke [post]
func (a *API) revokeRW(c echo.Context) error {
	var req HoldRevokeRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required: the hold to revoke")
	}
	if err := a.eng.RevokeRW(c.Request().Context(), request.PathParam(c, "name"), *req.Token, req.Reason); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
