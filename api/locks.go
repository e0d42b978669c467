package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
)

// acquire godoc
//
//	@Summary		Acquire a lock
//	@ID				acquireLock
//	@Description	Takes the lock and returns it with its fencing token: the etcd revision at which this hold began, greater than every earlier token of this lock and never lower than any token granted before, of any lock (grants of other locks committed in one etcd transaction share a value). Pass the token to whatever the lock protects.
//	@Description	Without `session`, the lock gets a lease of its own of `ttl` (default 30s, from 2s to 24h); with `session`, it lives as long as the session and `ttl` must be absent.
//	@Description	With `wait`, the request queues for up to that long (at most 5m), first come first served across every node; a client that disconnects leaves no trace. Without it, a held lock answers 409 at once.
//	@Description	`lock_delay`: after this hold ends by expiry or revoke (not by a release), nobody may acquire the lock for that long. Every field is optional; `owner` defaults to the client's address.
//	@Tags			locks
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Lock name: 1-128 characters from A-Z a-z 0-9 . _ : -" minlength(1) maxlength(128)
//	@Param			request	body		api.AcquireRequest	false	"How to acquire"
//	@Success		201		{object}	api.Lock			"Newly acquired"
//	@Success		200		{object}	api.Lock			"Already held by the same session (idempotent)"
//	@Failure		400		{object}	api.Problem			"invalid_request: the field named in `field` is wrong"
//	@Failure		403		{object}	api.Problem			"forbidden: needs the write role, or the session belongs to another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404		{object}	api.Problem			"session_not_found"
//	@Failure		409		{object}	api.Problem			"lock_held: with `holder`, and `retry_after` under lock-delay; or too_many_locks_in_session (with `limit`)"
//	@Failure		413		{object}	api.Problem			"body_too_large"
//	@Failure		415		{object}	api.Problem			"unsupported_media_type"
//	@Failure		429		{object}	api.Problem			"rate_limited, too_many_waiters or too_many_locks (with `limit`)"
//	@Failure		503		{object}	api.Problem			"unavailable or shutting_down; the acquire may or may not have taken effect"
//	@Failure		507		{object}	api.Problem			"insufficient_storage: the data store is full; nothing was written"
//	@Header			409		{integer}	Retry-After			"Seconds until lock-delay ends (lock-delay only)"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name} [post]
func (a *API) acquire(c echo.Context) error {
	start := time.Now()
	var req AcquireRequest
	if err := request.Body(c, &req, true); err != nil {
		return err
	}
	t, err := a.terms(req.TTL, req.Wait, req.Session, req.KeepPlace)
	if err != nil {
		return err
	}
	lr := lock.AcquireRequest{Name: request.PathParam(c, "name"), Owner: owner(c, req.Owner), Metadata: req.Metadata,
		TTL: t.TTL, Wait: t.Wait, Session: t.Session, KeepPlace: t.KeepPlace}
	if lr.LockDelay, err = request.Duration("lock_delay", req.LockDelay); err != nil {
		return err
	}
	if lr.MinHold, err = request.Duration("min_hold", req.MinHold); err != nil {
		return err
	}
	l, fresh, err := a.eng.Acquire(c.Request().Context(), lr)
	result := resultAcquired
	switch {
	case errors.Is(err, lock.ErrHeld):
		result = resultHeld
	case err != nil:
		result = resultError
	case !fresh:
		result = resultReacquired
	}
	// A wait is the caller's choice, not slowness: it gets its own series.
	waited := 0
	if lr.Wait > 0 {
		waited = 1
	}
	a.acquireObs[result][waited].Observe(time.Since(start).Seconds())
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !fresh {
		status = http.StatusOK
	}
	return writeLock(c, status, toLock(l))
}

// getLock godoc
//
//	@Summary		Get a lock's holder
//	@ID				getLock
//	@Description	Returns the current holder with its token and expiry, and the acquires queued for it in the order they will be granted.
//	@Tags			locks
//	@Produce		json
//	@Param			name	path		string	true	"Lock name" minlength(1) maxlength(128)
//	@Success		200		{object}	api.Lock
//	@Failure		404		{object}	api.Problem	"not_held; a free lock under lock-delay says until when in `delayed_until` and `retry_after`"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name} [get]
func (a *API) getLock(c echo.Context) error {
	ctx := c.Request().Context()
	l, err := a.eng.Get(ctx, request.PathParam(c, "name"))
	if err != nil {
		return err
	}
	ws, err := a.eng.Waiters(ctx, l.Name)
	if err != nil {
		return err
	}
	out := toLock(l)
	out.Waiters = toWaiters(ws)
	return writeLock(c, http.StatusOK, out)
}

// toWaiters renders a queue.
func toWaiters(ws []lock.Waiter) []Waiter {
	out := make([]Waiter, len(ws))
	for i, w := range ws {
		out[i] = Waiter{Owner: w.Owner, Session: w.Session, Position: w.Position, Since: Time(w.Since), Mode: string(w.Mode), Set: w.Set}
	}
	return out
}

// listLocks godoc
//
//	@Summary		List held locks
//	@ID				listLocks
//	@Description	Held locks sorted by name, a page at a time. Pass `next_cursor` as `cursor` for the next page; it is absent on the last page.
//	@Tags			locks
//	@Produce		json
//	@Param			prefix	query		string	false	"Only locks whose name starts with this"
//	@Param			limit	query		int		false	"Page size, 1-1000"	default(100) minimum(1) maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page"
//	@Success		200		{object}	api.LockList
//	@Security		BearerAuth
//	@Router			/v1/locks [get]
func (a *API) listLocks(c echo.Context) error {
	o, err := request.ListOptions(c)
	if err != nil {
		return err
	}
	var locks []*lock.Lock
	var delays []lock.Delay
	next, err := scope.Page(c, o.Prefix, o.After, o.Limit, func(prefix, after string, limit int) (int, string, string, error) {
		ls, ds, next, err := a.eng.ListWithDelays(c.Request().Context(), lock.ListOptions{Prefix: prefix, After: after, Limit: limit})
		if err != nil {
			return 0, "", "", err
		}
		locks, delays = append(locks, ls...), append(delays, ds...)
		last := ""
		if len(ls) > 0 {
			last = ls[len(ls)-1].Name
		}
		return len(ls), last, next, nil
	})
	if err != nil {
		return err
	}
	out := LockList{Locks: make([]*Lock, len(locks))}
	for i, l := range locks {
		out.Locks[i] = toLock(l)
		redactLock(c, out.Locks[i])
	}
	for _, d := range delays {
		out.Delayed = append(out.Delayed, Delay{Name: d.Name, DelayedUntil: Time(d.Until), RetryAfter: ceilSeconds(time.Until(d.Until)), Cause: string(d.Cause)})
	}
	out.NextCursor = request.EncodeCursor(next) // "" on the last page
	return c.JSON(http.StatusOK, out)
}

// renew godoc
//
//	@Summary		Renew a lock
//	@ID				renewLock
//	@Description	Extends the lease of the lock that `token` holds, and returns the new `expires_at`. A lock in a session renews the whole session. The token never changes.
//	@Tags			locks
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Lock name" minlength(1) maxlength(128)
//	@Param			request	body		api.RenewRequest	true	"The fencing token"
//	@Success		200		{object}	api.Lock
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the hold was acquired by another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404		{object}	api.Problem	"not_held"
//	@Failure		409		{object}	api.Problem	"token_mismatch: held with another token"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name}/renew [post]
func (a *API) renew(c echo.Context) error {
	var req RenewRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	l, err := a.eng.Renew(c.Request().Context(), request.PathParam(c, "name"), *req.Token)
	if err != nil {
		return err
	}
	return writeLock(c, http.StatusOK, toLock(l))
}

// release godoc
//
//	@Summary		Release a lock
//	@ID				releaseLock
//	@Description	Ends the hold of `token` and records it as `released`. A stale token never touches a newer holder.
//	@Tags			locks
//	@Produce		json
//	@Param			name	path	string	true	"Lock name" minlength(1) maxlength(128)
//	@Param			token	query	int		true	"The fencing token"	format(int64)
//	@Success		204
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the hold was acquired by another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404	{object}	api.Problem	"not_held"
//	@Failure		409	{object}	api.Problem	"token_mismatch"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name} [delete]
func (a *API) release(c echo.Context) error {
	tok, err := request.Token(c, "/v1/locks/{name}")
	if err != nil {
		return err
	}
	if err := a.eng.Release(c.Request().Context(), request.PathParam(c, "name"), tok); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// revoke godoc
//
//	@Summary		Revoke a lock (operators)
//	@ID				revokeLock
//	@Description	Forcibly ends whatever hold the lock has, recorded as `revoked` with the reason. The lock's `lock_delay` then applies.
//	@Tags			locks
//	@Accept			json
//	@Produce		json
//	@Param			name	path	string				true	"Lock name" minlength(1) maxlength(128)
//	@Param			request	body	api.RevokeRequest	false	"Why"
//	@Success		204
//	@Failure		404	{object}	api.Problem	"not_held"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name}/revoke [post]
func (a *API) revoke(c echo.Context) error {
	var req RevokeRequest
	if err := request.Body(c, &req, true); err != nil {
		return err
	}
	if _, err := a.eng.Revoke(c.Request().Context(), request.PathParam(c, "name"), req.Reason); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// clearDelay godoc
//
//	@Summary		Lift a lock's lock-delay (operators)
//	@ID				clearLockDelay
//	@Description	Lets a free lock that lock-delay keeps free be acquired at once: the remedy for a delay set by mistake. Audited as `delay_cleared` with the reason in `detail` and the caller's address as `owner`.
//	@Tags			locks
//	@Produce		json
//	@Param			name	path	string	true	"Lock name" minlength(1) maxlength(128)
//	@Param			reason	query	string	false	"Why, for the audit trail (at most 1,024 bytes)" maxlength(1024)
//	@Success		204
//	@Failure		404	{object}	api.Problem	"not_delayed: the lock is held, or free with no delay"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name}/delay [delete]
func (a *API) clearDelay(c echo.Context) error {
	q := request.Query(c)
	if err := a.eng.ClearDelay(c.Request().Context(), request.PathParam(c, "name"), q.Get("reason"), c.RealIP()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
