package api

import (
	"net/http"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// LockSetRequest is the body of POST /v1/locksets.
type LockSetRequest struct {
	// Names are the locks to take, 2 to 64 distinct lock names, in any
	// order: the set is granted all at once or not at all.
	Names []string `json:"names" validate:"min=2,max=64,unique" example:"acct-1,acct-2"`
	// Owner labels the hold for people and the audit trail: 1-128
	// printable characters. Absent, it is the client's address.
	Owner *string `json:"owner,omitempty" minLength:"1" maxLength:"128" example:"transfer-7"`
	// TTL is the lease of a hold without session: a duration from 2s to
	// 24h, 30s when absent. It must be absent with session.
	TTL     *string `json:"ttl,omitempty" example:"30s"`
	Session *string `json:"session,omitempty" example:"694d2279b4919071"`
	// Wait is how long to queue while others hold it: a duration up to 5m.
	// Absent or 0s, a held one answers 409 at once.
	Wait *string `json:"wait,omitempty" example:"10s"`
	// MinHold is the hold's at-least window (ShedLock's lockAtLeastFor):
	// a duration up to 24h. However early the hold ends, by release,
	// expiry or revoke, nobody acquires it before acquired_at + min_hold (each lock's).
	MinHold *string `json:"min_hold,omitempty" example:"5m"`
	// Metadata is for people and the dashboard: at most 16 string pairs,
	// with keys not empty and keys and values 4 KiB (4,096 bytes) in all.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// LockSetTokenRequest is the body of POST /v1/locksets/release and
// /v1/locksets/renew.
type LockSetTokenRequest struct {
	// Names are the set's locks, 2 to 64 distinct lock names, in any
	// order.
	Names []string `json:"names" validate:"min=2,max=64,unique" example:"acct-1,acct-2"`
	Token *int64   `json:"token" format:"int64" example:"4711"`
}

// LockSet is a granted lock set: every lock of names, with one token.
type LockSet struct {
	Names []string `json:"names" example:"acct-1,acct-2"`
	// Token is the fencing token of every lock of the set.
	Token int64 `json:"token" format:"int64" example:"4711"`
	// Locks are the set's locks, in the order of names.
	Locks []*Lock `json:"locks"`
}

func toLockSet(s *lock.LockSet) *LockSet {
	out := &LockSet{Names: s.Names, Token: s.Token, Locks: make([]*Lock, len(s.Locks))}
	for i, l := range s.Locks {
		out.Locks[i] = toLock(l)
	}
	return out
}

// acquireLockSet godoc
//
//	@Summary		Take several locks at once, all or nothing
//	@ID				acquireLockSet
//	@Description	Takes every lock of `names` (2 to 64 distinct lock names) in one etcd transaction, all with one fencing token, or none of them: a set never holds some of its locks without the others. Each is an ordinary lock: GET, renew, release and revoke work on each one, and each lock's record names its set (`set`).
//	@Description	Without `wait`, a set with a lock held by another answers 409 `lock_held` with `holders` (the locks in the way) and takes nothing. With `wait`, the set joins every lock's queue in one transaction and is granted when it heads all of them (for up to `wait`, at most 5m): sets and single locks are served in one order, first come first served, so no two sets deadlock whatever order they name their locks in. A set that gives up leaves no entry in any queue. `ttl` and `session` are as for a lock; the set's locks share one lease. A session that holds this very set already answers 200 with it.
//	@Tags			locksets
//	@Accept			json
//	@Produce		json
//	@Param			request	body		api.LockSetRequest	true	"The locks, and how to hold them"
//	@Success		201		{object}	api.LockSet
//	@Success		200		{object}	api.LockSet	"The same session already holds this set (idempotent)"
//	@Failure		400		{object}	api.Problem	"invalid_request: the field named in `field` is wrong (`names`: fewer than 2, more than 64, a name repeated or invalid)"
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the session belongs to another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"session_not_found"
//	@Failure		409		{object}	api.Problem	"lock_held, with `holders` (the locks held by others)"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		429		{object}	api.Problem	"rate_limited, too_many_waiters, too_many_locks_in_session or too_many_locks (with `limit`)"
//	@Failure		503		{object}	api.Problem	"unavailable or shutting_down; the request may or may not have taken effect"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/locksets [post]
func (a *API) acquireLockSet(c echo.Context) error {
	var req LockSetRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	t, err := a.terms(req.TTL, req.Wait, req.Session, nil)
	if err != nil {
		return err
	}
	if err := scope.Check(c, auth.Write, req.Names...); err != nil {
		return err
	}
	lr := lock.LockSetRequest{Names: req.Names, Owner: owner(c, req.Owner), Metadata: req.Metadata, TTL: t.TTL, Wait: t.Wait, Session: t.Session}
	if lr.MinHold, err = request.Duration("min_hold", req.MinHold); err != nil {
		return err
	}
	s, fresh, err := a.eng.AcquireSet(c.Request().Context(), lr)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !fresh {
		status = http.StatusOK
	}
	return c.JSON(status, toLockSet(s))
}

// releaseLockSet godoc
//
//	@Summary		Release a lock set
//	@ID				releaseLockSet
//	@Description	Ends every lock of `names` that `token` holds, in one etcd transaction, each audited as `released` and handed to its oldest waiter in that transaction. A lock of the set released or revoked on its own before is left alone.
//	@Tags			locksets
//	@Accept			json
//	@Param			request	body	api.LockSetTokenRequest	true	"The set's names and token"
//	@Success		204
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the set was taken by another credential; or cross_origin"
//	@Failure		404	{object}	api.Problem	"not_held: none of the locks is held"
//	@Failure		409	{object}	api.Problem	"token_mismatch: the locks are held, none with this token"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/locksets/release [post]
func (a *API) releaseLockSet(c echo.Context) error {
	names, token, err := decodeSetToken(c)
	if err != nil {
		return err
	}
	if err := scope.Check(c, auth.Write, names...); err != nil {
		return err
	}
	if err := a.eng.ReleaseSet(c.Request().Context(), names, token); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// renewLockSet godoc
//
//	@Summary		Renew a lock set
//	@ID				renewLockSet
//	@Description	Extends the lease the set's locks share (for a set in a session, the session's), and returns the set with the new `expires_at`, if `token` still holds every lock of `names`. A lock of the set released or revoked on its own makes it fail, naming that lock: the set is no longer whole.
//	@Tags			locksets
//	@Accept			json
//	@Produce		json
//	@Param			request	body		api.LockSetTokenRequest	true	"The set's names and token"
//	@Success		200		{object}	api.LockSet
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the set was taken by another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"not_held: a lock of the set is not held"
//	@Failure		409		{object}	api.Problem	"token_mismatch: a lock of the set is held with another token"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/locksets/renew [post]
func (a *API) renewLockSet(c echo.Context) error {
	names, token, err := decodeSetToken(c)
	if err != nil {
		return err
	}
	if err := scope.Check(c, auth.Write, names...); err != nil {
		return err
	}
	s, err := a.eng.RenewSet(c.Request().Context(), names, token)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toLockSet(s))
}

// decodeSetToken reads a LockSetTokenRequest.
func decodeSetToken(c echo.Context) ([]string, int64, error) {
	var req LockSetTokenRequest
	if err := request.Body(c, &req, false); err != nil {
		return nil, 0, err
	}
	if req.Token == nil {
		return nil, 0, badRequest("token", "token is required")
	}
	return req.Names, *req.Token, nil
}
