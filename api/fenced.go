package api

import (
	"net/http"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// putFenced godoc
//
//	@Summary		Write a fenced value
//	@ID				putFenced
//	@Description	Stores `value` unless `token` is below the largest token any earlier write to this resource carried; equal tokens are accepted, so a holder may write many times. With `lock`, the write also requires that `token` holds that lock at that moment; with `election`, that `token` leads that election; with `rwlock`, that `token` is that read/write lock's write hold. Check and write are one etcd transaction.
//	@Tags			fenced
//	@Accept			json
//	@Produce		json
//	@Param			resource	path		string				true	"Resource name, same rules as lock names" minlength(1) maxlength(128)
//	@Param			request		body		api.FencedRequest	true	"Token, value (any JSON) and optional lock, election or rwlock"
//	@Success		200			{object}	api.FencedValue
//	@Failure		409			{object}	api.Problem	"stale_token (with max_token), not_holder, or unknown_token (above the cluster's current revision: never issued)"
//	@Failure		413			{object}	api.Problem	"body_too_large, or value_too_large (with `limit` in bytes)"
//	@Failure		415			{object}	api.Problem	"unsupported_media_type"
//	@Failure		429			{object}	api.Problem	"rate_limited, or too_many_fenced_values (with `limit`): the write would make one resource too many"
//	@Failure		507			{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/fenced/{resource} [put]
func (a *API) putFenced(c echo.Context) error {
	var req FencedRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	var h lock.Holder
	switch {
	case req.Lock != "" && req.Election != "":
		return badRequest("election", "give one of lock, election and rwlock, not two")
	case (req.Lock != "" || req.Election != "") && req.RWLock != "":
		return badRequest("rwlock", "give one of lock, election and rwlock, not two")
	case req.Lock != "":
		h = lock.Holder{Kind: lock.KindLock, Name: req.Lock}
	case req.Election != "":
		h = lock.Holder{Kind: lock.KindElection, Name: req.Election}
	case req.RWLock != "":
		h = lock.Holder{Kind: lock.KindRWLock, Name: req.RWLock}
	}
	if h.Name != "" {
		if err := scope.Check(c, auth.Read, h.Name); err != nil {
			return err
		}
	}
	f, err := a.eng.PutFencedHeld(c.Request().Context(), request.PathParam(c, "resource"), *req.Token, req.Value, h)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toFenced(f))
}

// getFenced godoc
//
//	@Summary		Read a fenced value
//	@ID				getFenced
//	@Description	The value with the token of the write that stored it.
//	@Tags			fenced
//	@Produce		json
//	@Param			resource	path		string	true	"Resource name" minlength(1) maxlength(128)
//	@Success		200			{object}	api.FencedValue
//	@Failure		404			{object}	api.Problem	"not_found"
//	@Security		BearerAuth
//	@Router			/v1/fenced/{resource} [get]
func (a *API) getFenced(c echo.Context) error {
	f, err := a.eng.GetFenced(c.Request().Context(), request.PathParam(c, "resource"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toFenced(f))
}

// resetFenced godoc
//
//	@Summary		Reset a fenced register (operators)
//	@ID				resetFenced
//	@Description	Removes the resource's value and its largest-token record, so the next write with any issued token is accepted again: the way back for a register that a wrong token pushed past every real holder. Audited as `fence_reset` (kind `fence`) with the reason in `detail` and the caller's address as `owner`.
//	@Tags			fenced
//	@Produce		json
//	@Param			resource	path	string	true	"Resource name" minlength(1) maxlength(128)
//	@Param			reason		query	string	false	"Why, for the audit trail (at most 1,024 bytes)" maxlength(1024)
//	@Success		204
//	@Failure		404	{object}	api.Problem	"not_found: the resource holds no value"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/fenced/{resource} [delete]
func (a *API) resetFenced(c echo.Context) error {
	q := request.Query(c)
	if err := a.eng.ResetFenced(c.Request().Context(), request.PathParam(c, "resource"), q.Get("reason"), c.RealIP()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
