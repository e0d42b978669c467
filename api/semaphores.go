package api

import (
	"net/http"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
)

// Hold is one of the holds of a thing that has several at once: a
// semaphore's permit (with its limit) or a read/write lock's hold (with
// its mode).
type Hold struct {
	Name  string `json:"name" example:"heavy-jobs"`
	Owner string `json:"owner" example:"w1"`
	// Token is the hold's own fencing token, from the same sequence as
	// lock tokens.
	Token int64 `json:"token" format:"int64" example:"4711"`
	// Limit is a permit's: its semaphore's, how many permits it has.
	Limit int `json:"limit,omitempty" example:"3"`
	// Mode is a read/write lock's hold's.
	Mode       string            `json:"mode,omitempty" example:"read" enums:"read,write"`
	Session    string            `json:"session,omitempty" example:"694d2279b4919071"`
	TTL        string            `json:"ttl" example:"30s"`
	AcquiredAt Time              `json:"acquired_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
	ExpiresAt  Time              `json:"expires_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:43.881Z"`
	MinHold    string            `json:"min_hold,omitempty" example:"5m0s"`
	Metadata   map[string]string `json:"metadata"`
}

// Semaphore is a semaphore's state.
type Semaphore struct {
	Name  string `json:"name" example:"heavy-jobs"`
	Limit int    `json:"limit" example:"3"`
	// Holders are the permits held, oldest first.
	Holders []*Hold `json:"holders"`
	// Waiters are the acquires waiting, first to be served first; only
	// GET /v1/semaphores/{name} fills it in (the first 1,000).
	Waiters []Waiter `json:"waiters,omitempty"`
}

// SemaphoreList is a page of semaphores that have permits held.
type SemaphoreList struct {
	Semaphores []*Semaphore `json:"semaphores"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// PermitRequest is the body of POST /v1/semaphores/{name}.
type PermitRequest struct {
	// Limit is how many permits the semaphore has, 1-10000: it must be
	// the limit its permits are held under, if any are.
	Limit *int `json:"limit" minimum:"1" maximum:"10000" example:"3"`
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
	// expiry or revoke, its seat stays taken until acquired_at + min_hold.
	MinHold *string `json:"min_hold,omitempty" example:"5m"`
	// Metadata is for people and the dashboard: at most 16 string pairs,
	// with keys not empty and keys and values 4 KiB (4,096 bytes) in all.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// HoldRevokeRequest is the body of POST /v1/semaphores/{name}/revoke
// and POST /v1/rwlocks/{name}/revoke.
type HoldRevokeRequest struct {
	Token *int64 `json:"token" format:"int64" example:"4711"`
	// Reason says why, for the audit trail: at most 1,024 bytes.
	Reason string `json:"reason,omitempty" maxLength:"1024" example:"holder wedged"`
}

func toHold(l *lock.Lock) *Hold {
	out := &Hold{
		Name: l.Name, Owner: l.Owner, Token: l.Token, Limit: l.Limit, Mode: string(l.Mode), Session: l.Session, TTL: l.TTL.String(),
		AcquiredAt: Time(l.AcquiredAt), ExpiresAt: Time(l.ExpiresAt), Metadata: l.Metadata,
	}
	if l.MinHold > 0 {
		out.MinHold = l.MinHold.String()
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	return out
}

func toHolds(ls []*lock.Lock) []*Hold {
	out := make([]*Hold, len(ls))
	for i, l := range ls {
		out[i] = toHold(l)
	}
	return out
}

func toSemaphore(s *lock.Semaphore) *Semaphore {
	return &Semaphore{Name: s.Name, Limit: s.Limit, Holders: toHolds(s.Holders)}
}

// acquirePermit godoc
//
//	@Summary		Take a permit of a semaphore
//	@ID				acquirePermit
//	@Description	Takes one of the semaphore's `limit` permits and returns it, with a fencing token of its own (from the same sequence as lock tokens). Each request takes a permit of its own, in a session too. The limit is stored with the semaphore: a request with another limit while permits are held answers 409 `limit_mismatch` with the semaphore's `limit`; the limit changes only while no permit is held, taken from the request first in line.
//	@Description	With `wait`, the request waits in line for up to that long (at most 5m), first come first served across every node, and a freed permit goes to the oldest waiter in the releasing transaction. Without it, a full semaphore answers 409 at once. `ttl` and `session` are as for locks: a permit lives as long as its lease, so a holder that dies gives its permit back when the lease ends.
//	@Tags			semaphores
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Semaphore name: 1-128 characters from A-Z a-z 0-9 . _ : -" minlength(1) maxlength(128)
//	@Param			request	body		api.PermitRequest	true	"The limit, and how to hold the permit"
//	@Success		201		{object}	api.Hold
//	@Failure		400		{object}	api.Problem	"invalid_request: the field named in `field` is wrong"
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the session belongs to another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"session_not_found"
//	@Failure		409		{object}	api.Problem	"semaphore_full, with `holders` (the permits held); or limit_mismatch, with the semaphore's `limit`"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		429		{object}	api.Problem	"rate_limited, too_many_waiters or too_many_locks (with `limit`)"
//	@Failure		503		{object}	api.Problem	"unavailable or shutting_down; the request may or may not have taken effect"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/semaphores/{name} [post]
func (a *API) acquirePermit(c echo.Context) error {
	var req PermitRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Limit == nil {
		return badRequest("limit", "limit is required: how many permits the semaphore has (1-10000)")
	}
	t, err := a.terms(req.TTL, req.Wait, req.Session, req.KeepPlace)
	if err != nil {
		return err
	}
	pr := lock.PermitRequest{Name: request.PathParam(c, "name"), Owner: owner(c, req.Owner), Limit: *req.Limit, Metadata: req.Metadata,
		TTL: t.TTL, Wait: t.Wait, Session: t.Session, KeepPlace: t.KeepPlace}
	if pr.MinHold, err = request.Duration("min_hold", req.MinHold); err != nil {
		return err
	}
	l, err := a.eng.AcquirePermit(c.Request().Context(), pr)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toHold(l))
}

// getSemaphore godoc
//
//	@Summary		Get a semaphore
//	@ID				getSemaphore
//	@Description	Returns the semaphore's limit, its permits held (oldest first) and its waiters, in the order they will be served (the first 1,000).
//	@Tags			semaphores
//	@Produce		json
//	@Param			name	path		string	true	"Semaphore name" minlength(1) maxlength(128)
//	@Success		200		{object}	api.Semaphore
//	@Failure		404		{object}	api.Problem	"not_held: no permit is held"
//	@Security		BearerAuth
//	@Router			/v1/semaphores/{name} [get]
func (a *API) getSemaphore(c echo.Context) error {
	s, err := a.eng.Semaphore(c.Request().Context(), request.PathParam(c, "name"))
	if err != nil {
		return err
	}
	out := toSemaphore(s)
	out.Waiters = toWaiters(s.Waiters)
	return c.JSON(http.StatusOK, out)
}

// listSemaphores godoc
//
//	@Summary		List semaphores with permits held
//	@ID				listSemaphores
//	@Description	Semaphores that have permits held, sorted by name, with their permits (not their waiters), a page at a time. Pass `next_cursor` as `cursor` for the next page; it is absent on the last page. A page holds at most 1,000 permits beyond its last semaphore's, so it may hold fewer semaphores than `limit`.
//	@Tags			semaphores
//	@Produce		json
//	@Param			prefix	query		string	false	"Only semaphores whose name starts with this"
//	@Param			limit	query		int		false	"Page size, 1-1000"	default(100) minimum(1) maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page"
//	@Success		200		{object}	api.SemaphoreList
//	@Security		BearerAuth
//	@Router			/v1/semaphores [get]
func (a *API) listSemaphores(c echo.Context) error {
	o, err := request.ListOptions(c)
	if err != nil {
		return err
	}
	ss, next, err := scope.List(c, o, func(o lock.ListOptions) ([]*lock.Semaphore, string, error) {
		return a.eng.Semaphores(c.Request().Context(), o)
	}, func(x *lock.Semaphore) string { return x.Name })
	if err != nil {
		return err
	}
	out := SemaphoreList{Semaphores: make([]*Semaphore, len(ss))}
	for i, s := range ss {
		out.Semaphores[i] = toSemaphore(s)
	}
	out.NextCursor = request.EncodeCursor(next) // "" on the last page
	return c.JSON(http.StatusOK, out)
}

// renewPermit godoc
//
//	@Summary		Renew a permit
//	@ID				renewPermit
//	@Description	Extends the lease of the permit that `token` holds, and returns the new `expires_at`. A permit in a session renews the whole session. The token never changes.
//	@Tags			semaphores
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Semaphore name" minlength(1) maxlength(128)
//	@Param			request	body		api.RenewRequest	true	"The permit's token"
//	@Success		200		{object}	api.Hold
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the permit was taken by another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"not_held: no permit of the semaphore has this token"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/semaphores/{name}/renew [post]
func (a *API) renewPermit(c echo.Context) error {
	var req RenewRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	l, err := a.eng.RenewPermit(c.Request().Context(), request.PathParam(c, "name"), *req.Token)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toHold(l))
}

// releasePermit godoc
//
//	@Summary		Give a permit back
//	@ID				releasePermit
//	@Description	Ends the permit that `token` holds, audited as `released`. The oldest waiter gets a permit from the same etcd transaction.
//	@Tags			semaphores
//	@Param			name	path	string	true	"Semaphore name" minlength(1) maxlength(128)
//	@Param			token	query	int		true	"The permit's token"	format(int64)
//	@Success		204
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the permit was taken by another credential; or cross_origin"
//	@Failure		404	{object}	api.Problem	"not_held: no permit of the semaphore has this token"
//	@Security		BearerAuth
//	@Router			/v1/semaphores/{name} [delete]
func (a *API) releasePermit(c echo.Context) error {
	tok, err := request.Token(c, "/v1/semaphores/{name}")
	if err != nil {
		return err
	}
	if err := a.eng.ReleasePermit(c.Request().Context(), request.PathParam(c, "name"), tok); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// revokePermit godoc
//
//	@Summary		Revoke a permit (operator)
//	@ID				revokePermit
//	@Description	Ends the permit that `token` holds, audited as `revoked` with the reason. The oldest waiter gets a permit once the holder's seat is free.
//	@Tags			semaphores
//	@Accept			json
//	@Param			name	path	string					true	"Semaphore name" minlength(1) maxlength(128)
//	@Param			request	body	api.HoldRevokeRequest	true	"The permit's token, and why"
//	@Success		204
//	@Failure		404	{object}	api.Problem	"not_held: no permit of the semaphore has this token"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/semaphores/{name}/revoke [post]
func (a *API) revokePermit(c echo.Context) error {
	var req HoldRevokeRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required: the permit to revoke")
	}
	if err := a.eng.RevokePermit(c.Request().Context(), request.PathParam(c, "name"), *req.Token, req.Reason); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
