package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// resetFenced godoc
//
//	@Summary		Reset a fenced register (operators)
//	@ID				resetFenced
//	@Description	Removes the resource's value and its largest-token record, so the next write with any issued token is accepted again: the way back for a register that a wrong token pushed past every real holder. Audited as `fence_reset` (kind `fence`) with the reason in `detail` and the caller's address as `owner`.
//	@Tags			fenced
//	@Produce		json
//	@Param			resource	path	string	true	"Resource name"
//	@Param			reason		query	string	false	"Why, for the audit trail (at most 1,024 bytes)"
//	@Success		204
//	@Failure		400	{object}	api.Problem	"invalid_request"
//	@Failure		401	{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403	{object}	api.Problem	"forbidden: needs the admin role; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404	{object}	api.Problem	"not_found: the resource holds no value"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		421	{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429	{object}	api.Problem	"rate_limited"
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Header			429	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/fenced/{resource} [delete]
func (a *API) resetFenced(c echo.Context) error {
	q := queryOf(c)
	if err := a.eng.ResetFenced(c.Request().Context(), pathParam(c, "resource"), q.Get("reason"), c.RealIP()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
