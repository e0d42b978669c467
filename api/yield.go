package api

import (
	"net/http"

	"github.com/baton-dev/baton/api/internal/request"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
)

// YieldRequest is the body of POST /v1/{kind}/{name}/yield.
type YieldRequest struct {
	// Owner names who asks, as an acquire's owner names a holder: 1-128
	// printable characters. Absent, it is the client's address.
	Owner *string `json:"owner,omitempty" minLength:"1" maxLength:"128" example:"batch-7"`
	// Reason says why, for the holders and the audit trail: at most
	// 1,024 bytes.
	Reason string `json:"reason,omitempty" maxLength:"1024" example:"nightly backup needs the lock"`
	// Token, when given, asks only the hold of that token (one permit of
	// a semaphore, one hold of a read/write lock); absent, every hold.
	Token *int64 `json:"token,omitempty" format:"int64" minimum:"1" example:"4711"`
}

// YieldRequested is the answer to a request to yield: what was asked of
// whom. Each hold asked gets a `yield_requested` event at `revision`.
type YieldRequested struct {
	Kind string `json:"kind" example:"lock" enums:"lock,election,semaphore,rwlock"`
	Name string `json:"name" example:"nightly-recon"`
	// Tokens are those of the holds asked to yield, in token order.
	Tokens      []int64 `json:"tokens" example:"4711"`
	Owner       string  `json:"owner" example:"batch-7"`
	Reason      string  `json:"reason,omitempty" example:"nightly backup needs the lock"`
	RequestedAt Time    `json:"requested_at" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
	// Revision is the etcd revision of the request's events: an event
	// stream resumed from before it sends them.
	Revision int64 `json:"revision" format:"int64" example:"4712"`
}

// requestYield serves the yield route of kind k.
func (a *API) requestYield(c echo.Context, k lock.EventKind) error {
	var req YieldRequest
	if err := request.Body(c, &req, true); err != nil {
		return err
	}
	yr := lock.YieldRequest{Kind: k, Name: request.PathParam(c, "name"), Owner: owner(c, req.Owner), Reason: req.Reason}
	if req.Token != nil {
		if *req.Token < 1 {
			return badRequest("token", "must be a positive fencing token")
		}
		yr.Token = *req.Token
	}
	y, err := a.eng.RequestYield(c.Request().Context(), yr)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, YieldRequested{Kind: string(y.Kind), Name: y.Name, Tokens: y.Tokens, Owner: y.Owner,
		Reason: y.Reason, RequestedAt: Time(y.RequestedAt), Revision: y.Revision})
}

// yieldLock godoc
//
//	@Summary		Ask a lock's holder to yield
//	@ID				yieldLock
//	@Description	Asks whoever holds the lock to release it, and ends nothing: the holder's event stream gets a `yield_requested` event with its token, who asked (`owner`, `credential`) and the `reason`, and the holder decides. Recorded only while that hold lasts: a hold that ends meanwhile is not asked.
//	@Tags			locks
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Lock name" minlength(1) maxlength(128)
//	@Param			request	body		api.YieldRequest	false	"Who asks, and why"
//	@Success		202		{object}	api.YieldRequested
//	@Failure		404		{object}	api.Problem	"not_held: nothing holds the lock (with `token`: nothing with that token)"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name}/yield [post]
func (a *API) yieldLock(c echo.Context) error { return a.requestYield(c, lock.KindLock) }

// yieldLeadership godoc
//
//	@Summary		Ask an election's leader to yield
//	@ID				yieldLeadership
//	@Description	Asks the leader to resign, and ends nothing: the leader's event stream gets a `yield_requested` event with its token, who asked and why, and the leader decides.
//	@Tags			elections
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Election name" minlength(1) maxlength(128)
//	@Param			request	body		api.YieldRequest	false	"Who asks, and why"
//	@Success		202		{object}	api.YieldRequested
//	@Failure		404		{object}	api.Problem	"no_leader"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name}/yield [post]
func (a *API) yieldLeadership(c echo.Context) error { return a.requestYield(c, lock.KindElection) }

// yieldPermits godoc
//
//	@Summary		Ask a semaphore's permit holders to yield
//	@ID				yieldPermits
//	@Description	Asks the holders of the semaphore's permits (with `token`, that permit's alone; else the oldest 128) to give them back, and ends nothing: each gets a `yield_requested` event with its token on its event stream, and decides.
//	@Tags			semaphores
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Semaphore name" minlength(1) maxlength(128)
//	@Param			request	body		api.YieldRequest	false	"Who asks, and why"
//	@Success		202		{object}	api.YieldRequested
//	@Failure		404		{object}	api.Problem	"not_held: no permit is held (with `token`: none with that token)"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/semaphores/{name}/yield [post]
func (a *API) yieldPermits(c echo.Context) error { return a.requestYield(c, lock.KindSemaphore) }

// yieldRW godoc
//
//	@Summary		Ask a read/write lock's holders to yield
//	@ID				yieldRW
//	@Description	Asks the holds of the read/write lock (with `token`, that hold alone; else the oldest 128, readers and writer) to release, and ends nothing: each gets a `yield_requested` event with its token and mode on its event stream, and decides.
//	@Tags			rwlocks
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Read/write lock name" minlength(1) maxlength(128)
//	@Param			request	body		api.YieldRequest	false	"Who asks, and why"
//	@Success		202		{object}	api.YieldRequested
//	@Failure		404		{object}	api.Problem	"not_held: nothing holds the lock (with `token`: nothing with that token)"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/rwlocks/{name}/yield [post]
func (a *API) yieldRW(c echo.Context) error { return a.requestYield(c, lock.KindRWLock) }
