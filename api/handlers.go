package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-dev/baton/lock"
)

// Options tune the handlers.
type Options struct {
	// Registerer receives the handlers' metrics; nil registers none.
	Registerer prometheus.Registerer
	// ReadyTimeout bounds the /readyz probe.
	ReadyTimeout time.Duration
	// Heartbeat is how often an idle event stream gets a comment line;
	// 0 means 15s.
	Heartbeat time.Duration
	// EventWriteTimeout bounds each write to an event stream: a client
	// that does not read for that long is disconnected. 0 means 10s.
	EventWriteTimeout time.Duration
	// EventBuffer is how many events an event stream may hold for a
	// client that reads slowly before it is disconnected; 0 means the
	// engine's default (1024).
	EventBuffer int
}

// API serves the lock engine over HTTP.
type API struct {
	eng               *lock.Engine
	readyTimeout      time.Duration
	heartbeat         time.Duration
	eventWriteTimeout time.Duration
	eventBuffer       int
	acquireDur        *prometheus.HistogramVec
	// acquireObs holds acquireDur's series by result and wait, so an
	// acquire hashes no labels.
	acquireObs [len(acquireResults)][2]prometheus.Observer
}

// acquireResults are the result labels of baton_acquire_duration_seconds,
// indexed by the constants below.
var acquireResults = [...]string{"acquired", "reacquired", "held", "error"}

const (
	resultAcquired = iota
	resultReacquired
	resultHeld
	resultError
)

// New returns handlers over eng.
func New(eng *lock.Engine, o Options) *API {
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 2 * time.Second
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = defaultHeartbeat
	}
	if o.EventWriteTimeout == 0 {
		o.EventWriteTimeout = defaultEventWriteTimeout
	}
	a := &API{
		eng:               eng,
		readyTimeout:      o.ReadyTimeout,
		heartbeat:         o.Heartbeat,
		eventWriteTimeout: o.EventWriteTimeout,
		eventBuffer:       o.EventBuffer,
		acquireDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baton_acquire_duration_seconds",
			Help: "Time to answer an acquire, including any wait, by result (acquired, reacquired, held, error) " +
				"and whether the request asked to wait (waited=\"true\"): latency alerts want waited=\"false\".",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"result", "waited"}),
	}
	// Every result's series exists from the start, so that alerts see it.
	for i, r := range acquireResults {
		a.acquireObs[i] = [2]prometheus.Observer{a.acquireDur.WithLabelValues(r, "false"), a.acquireDur.WithLabelValues(r, "true")}
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(a.acquireDur)
	}
	return a
}

// healthz godoc
//
//	@Summary		Liveness
//	@ID				healthz
//	@Description	Answers 200 while the process runs, whatever etcd's state.
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	api.Status
//	@Router			/healthz [get]
func (a *API) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, Status{Status: "ok"})
}

// readyz godoc
//
//	@Summary		Readiness
//	@ID				readyz
//	@Description	Answers 200 only when this node's etcd member has a leader, serves linearizable reads and takes writes; 503 otherwise, within about two seconds: `unavailable` (no leader or no quorum) or `nospace` (etcd's NOSPACE alarm is raised: the data store is full, see POST /v1/maintenance/recover).
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	api.Status
//	@Failure		503	{object}	api.Problem	"unavailable: no leader or no quorum; nospace: the data store is full"
//	@Header			503	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Router			/readyz [get]
func (a *API) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), a.readyTimeout)
	defer cancel()
	if err := a.eng.Ready(ctx); err != nil {
		if errors.Is(err, lock.ErrNoSpace) {
			return noSpaceNotReady()
		}
		return err
	}
	return c.JSON(http.StatusOK, Status{Status: "ready"})
}

// owner is the request's owner, or the client's address when absent.
func owner(c echo.Context, o *string) string {
	if o != nil {
		return *o
	}
	return c.RealIP()
}

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
//	@Param			name	path		string				true	"Lock name: 1-128 characters from A-Z a-z 0-9 . _ : -"
//	@Param			request	body		api.AcquireRequest	false	"How to acquire"
//	@Success		201		{object}	api.Lock			"Newly acquired"
//	@Success		200		{object}	api.Lock			"Already held by the same session (idempotent)"
//	@Failure		400		{object}	api.Problem			"invalid_request: the field named in `field` is wrong"
//	@Failure		401		{object}	api.Problem			"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403		{object}	api.Problem			"forbidden: needs the write role, or the session belongs to another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404		{object}	api.Problem			"session_not_found"
//	@Failure		409		{object}	api.Problem			"lock_held: with `holder`, and `retry_after` under lock-delay; or too_many_locks_in_session (with `limit`)"
//	@Failure		413		{object}	api.Problem			"body_too_large"
//	@Failure		415		{object}	api.Problem			"unsupported_media_type"
//	@Failure		421		{object}	api.Problem			"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429		{object}	api.Problem			"rate_limited, too_many_waiters or too_many_locks (with `limit`)"
//	@Failure		503		{object}	api.Problem			"unavailable or shutting_down; the acquire may or may not have taken effect"
//	@Failure		507		{object}	api.Problem			"insufficient_storage: the data store is full; nothing was written"
//	@Header			409		{integer}	Retry-After			"Seconds until lock-delay ends (lock-delay only)"
//	@Header			429		{integer}	Retry-After			"Seconds to wait before retrying"
//	@Header			503		{integer}	Retry-After			"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name} [post]
func (a *API) acquire(c echo.Context) error {
	start := time.Now()
	var req AcquireRequest
	if err := decodeBody(c, &req, true); err != nil {
		return err
	}
	lr := lock.AcquireRequest{Name: pathParam(c, "name"), Owner: owner(c, req.Owner), Metadata: req.Metadata}
	var err error
	if lr.TTL, err = parseDuration("ttl", req.TTL); err != nil {
		return err
	}
	if req.TTL != nil && lr.TTL == 0 {
		return badRequest("ttl", "ttl must be at least 2s")
	}
	if lr.Wait, err = parseDuration("wait", req.Wait); err != nil {
		return err
	}
	if lr.LockDelay, err = parseDuration("lock_delay", req.LockDelay); err != nil {
		return err
	}
	if req.Session != nil {
		if *req.Session == "" {
			return badRequest("session", "session must not be empty when given")
		}
		lr.Session = *req.Session
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
//	@Param			name	path		string	true	"Lock name"
//	@Success		200		{object}	api.Lock
//	@Failure		400		{object}	api.Problem	"invalid_request"
//	@Failure		401		{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		404		{object}	api.Problem	"not_held; a free lock under lock-delay says until when in `delayed_until` and `retry_after`"
//	@Failure		421		{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429		{object}	api.Problem	"rate_limited"
//	@Failure		503		{object}	api.Problem	"unavailable"
//	@Header			429		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name} [get]
func (a *API) getLock(c echo.Context) error {
	ctx := c.Request().Context()
	l, err := a.eng.Get(ctx, pathParam(c, "name"))
	if err != nil {
		return err
	}
	ws, err := a.eng.Waiters(ctx, l.Name)
	if err != nil {
		return err
	}
	out := toLock(l)
	out.Waiters = make([]Waiter, len(ws))
	for i, w := range ws {
		out.Waiters[i] = Waiter{Owner: w.Owner, Session: w.Session, Position: w.Position, Since: Time(w.Since)}
	}
	return writeLock(c, http.StatusOK, out)
}

// listLocks godoc
//
//	@Summary		List held locks
//	@ID				listLocks
//	@Description	Held locks sorted by name, a page at a time. Pass `next_cursor` as `cursor` for the next page; it is absent on the last page.
//	@Tags			locks
//	@Produce		json
//	@Param			prefix	query		string	false	"Only locks whose name starts with this"
//	@Param			limit	query		int		false	"Page size, 1-1000"	default(100)
//	@Param			cursor	query		string	false	"next_cursor of the previous page"
//	@Success		200		{object}	api.LockList
//	@Failure		400		{object}	api.Problem	"invalid_request"
//	@Failure		401		{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		421		{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429		{object}	api.Problem	"rate_limited"
//	@Failure		503		{object}	api.Problem	"unavailable"
//	@Header			429		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/locks [get]
func (a *API) listLocks(c echo.Context) error {
	q, limit, err := listQuery(c)
	if err != nil {
		return err
	}
	o := lock.ListOptions{Prefix: q.Get("prefix"), Limit: limit}
	if cur := q.Get("cursor"); cur != "" {
		if o.After, err = decodeCursor(cur); err != nil {
			return err
		}
	}
	locks, delays, next, err := a.eng.ListWithDelays(c.Request().Context(), o)
	if err != nil {
		return err
	}
	out := LockList{Locks: make([]*Lock, len(locks))}
	for i, l := range locks {
		out.Locks[i] = toLock(l)
	}
	for _, d := range delays {
		out.Delayed = append(out.Delayed, Delay{Name: d.Name, DelayedUntil: Time(d.Until), RetryAfter: ceilSeconds(time.Until(d.Until)), Cause: string(d.Cause)})
	}
	if next != "" {
		out.NextCursor = encodeCursor(next)
	}
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
//	@Param			name	path		string				true	"Lock name"
//	@Param			request	body		api.RenewRequest	true	"The fencing token"
//	@Success		200		{object}	api.Lock
//	@Failure		400		{object}	api.Problem	"invalid_request"
//	@Failure		401		{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the hold was acquired by another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404		{object}	api.Problem	"not_held"
//	@Failure		409		{object}	api.Problem	"token_mismatch: held with another token"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		421		{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429		{object}	api.Problem	"rate_limited"
//	@Failure		503		{object}	api.Problem	"unavailable"
//	@Header			429		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name}/renew [post]
func (a *API) renew(c echo.Context) error {
	var req RenewRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	l, err := a.eng.Renew(c.Request().Context(), pathParam(c, "name"), *req.Token)
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
//	@Param			name	path	string	true	"Lock name"
//	@Param			token	query	int		true	"The fencing token"	format(int64)
//	@Success		204
//	@Failure		400	{object}	api.Problem	"invalid_request"
//	@Failure		401	{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the hold was acquired by another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404	{object}	api.Problem	"not_held"
//	@Failure		409	{object}	api.Problem	"token_mismatch"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		421	{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429	{object}	api.Problem	"rate_limited"
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Header			429	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name} [delete]
func (a *API) release(c echo.Context) error {
	q := queryOf(c)
	tok, ok, err := intParam(q, "token", 1, math.MaxInt64)
	if err != nil {
		return err
	}
	if !ok {
		return badRequest("token", "the token query parameter is required: DELETE /v1/locks/{name}?token=4711")
	}
	if err := a.eng.Release(c.Request().Context(), pathParam(c, "name"), tok); err != nil {
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
//	@Param			name	path	string				true	"Lock name"
//	@Param			request	body	api.RevokeRequest	false	"Why"
//	@Success		204
//	@Failure		400	{object}	api.Problem	"invalid_request"
//	@Failure		401	{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403	{object}	api.Problem	"forbidden: needs the admin role; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404	{object}	api.Problem	"not_held"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		421	{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429	{object}	api.Problem	"rate_limited"
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Header			429	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/locks/{name}/revoke [post]
func (a *API) revoke(c echo.Context) error {
	var req RevokeRequest
	if err := decodeBody(c, &req, true); err != nil {
		return err
	}
	if _, err := a.eng.Revoke(c.Request().Context(), pathParam(c, "name"), req.Reason); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// createSession godoc
//
//	@Summary		Create a session
//	@ID				createSession
//	@Description	A session is one lease that many locks share (like Chubby's and Consul's): renew it and they all live; let it expire, or delete it, and they all end. Its `id` is the etcd lease ID in hex.
//	@Tags			sessions
//	@Accept			json
//	@Produce		json
//	@Param			request	body		api.SessionRequest	false	"TTL (default 30s, from 2s to 24h) and owner (default: the client's address)"
//	@Success		201		{object}	api.Session
//	@Failure		400		{object}	api.Problem	"invalid_request"
//	@Failure		401		{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		421		{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429		{object}	api.Problem	"rate_limited, or too_many_sessions (with `limit`)"
//	@Failure		503		{object}	api.Problem	"unavailable"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Header			429		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/sessions [post]
func (a *API) createSession(c echo.Context) error {
	var req SessionRequest
	if err := decodeBody(c, &req, true); err != nil {
		return err
	}
	ttl, err := parseDuration("ttl", req.TTL)
	if err != nil {
		return err
	}
	if req.TTL != nil && ttl == 0 {
		return badRequest("ttl", "ttl must be at least 2s")
	}
	s, err := a.eng.CreateSession(c.Request().Context(), owner(c, req.Owner), ttl)
	if err != nil {
		return err
	}
	return writeSession(c, http.StatusCreated, toSession(s))
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
//	@Failure		400	{object}	api.Problem	"invalid_request"
//	@Failure		401	{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		404	{object}	api.Problem	"session_not_found"
//	@Failure		421	{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429	{object}	api.Problem	"rate_limited"
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Header			429	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/sessions/{id} [get]
func (a *API) getSession(c echo.Context) error {
	s, err := a.eng.GetSession(c.Request().Context(), pathParam(c, "id"))
	if err != nil {
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
//	@Failure		400	{object}	api.Problem	"invalid_request"
//	@Failure		401	{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the session belongs to another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404	{object}	api.Problem	"session_not_found: expired or unknown"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		421	{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429	{object}	api.Problem	"rate_limited"
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Header			429	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/sessions/{id}/renew [post]
func (a *API) renewSession(c echo.Context) error {
	if err := decodeBody(c, &struct{}{}, true); err != nil {
		return err
	}
	s, err := a.eng.RenewSession(c.Request().Context(), pathParam(c, "id"))
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
//	@Failure		400	{object}	api.Problem	"invalid_request"
//	@Failure		401	{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the session belongs to another credential; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		404	{object}	api.Problem	"session_not_found"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		421	{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429	{object}	api.Problem	"rate_limited"
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Header			429	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/sessions/{id} [delete]
func (a *API) deleteSession(c echo.Context) error {
	if err := a.eng.DeleteSession(c.Request().Context(), pathParam(c, "id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// putFenced godoc
//
//	@Summary		Write a fenced value
//	@ID				putFenced
//	@Description	Stores `value` unless `token` is below the largest token any earlier write to this resource carried; equal tokens are accepted, so a holder may write many times. With `lock`, the write also requires that `token` holds that lock at that moment. Check and write are one etcd transaction.
//	@Tags			fenced
//	@Accept			json
//	@Produce		json
//	@Param			resource	path		string				true	"Resource name, same rules as lock names"
//	@Param			request		body		api.FencedRequest	true	"Token, value (any JSON) and optional lock"
//	@Success		200			{object}	api.FencedValue
//	@Failure		400			{object}	api.Problem	"invalid_request"
//	@Failure		401			{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		403			{object}	api.Problem	"forbidden: needs the write role; or cross_origin: a browser sent it for a page of another origin"
//	@Failure		409			{object}	api.Problem	"stale_token (with max_token), not_holder, or unknown_token (above the cluster's current revision: never issued)"
//	@Failure		413			{object}	api.Problem	"body_too_large, or value_too_large (with `limit` in bytes)"
//	@Failure		415			{object}	api.Problem	"unsupported_media_type"
//	@Failure		421			{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429			{object}	api.Problem	"rate_limited, or too_many_fenced_values (with `limit`): the write would make one resource too many"
//	@Failure		503			{object}	api.Problem	"unavailable"
//	@Failure		507			{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Header			429			{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503			{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/fenced/{resource} [put]
func (a *API) putFenced(c echo.Context) error {
	var req FencedRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	f, err := a.eng.PutFenced(c.Request().Context(), pathParam(c, "resource"), *req.Token, req.Value, req.Lock)
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
//	@Param			resource	path		string	true	"Resource name"
//	@Success		200			{object}	api.FencedValue
//	@Failure		400			{object}	api.Problem	"invalid_request"
//	@Failure		401			{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		404			{object}	api.Problem	"not_found"
//	@Failure		421			{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429			{object}	api.Problem	"rate_limited"
//	@Failure		503			{object}	api.Problem	"unavailable"
//	@Header			429			{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503			{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/fenced/{resource} [get]
func (a *API) getFenced(c echo.Context) error {
	f, err := a.eng.GetFenced(c.Request().Context(), pathParam(c, "resource"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toFenced(f))
}

// history godoc
//
//	@Summary		Read the audit trail
//	@ID				getHistory
//	@Description	Every acquire, release, expiry, session expiry and revoke, newest first, exactly once. Filters combine; paging with `before` stays stable while new events arrive. Pass `next_before` as `before` for the next page; it is absent on the last page. A page never splits events of one revision, so it may exceed `limit` when more events than that share one.
//	@Tags			history
//	@Produce		json
//	@Param			lock	query		string	false	"Only this lock's events"
//	@Param			kind	query		string	false	"Only events about this kind of thing"	Enums(lock, election, semaphore, rwlock, fence)
//	@Param			name	query		string	false	"Only events about the thing of this name (with kind lock, or no kind: the same as lock)"
//	@Param			limit	query		int		false	"Page size, 1-1000"							default(100)
//	@Param			before	query		int		false	"Only events recorded before this revision"	format(int64)
//	@Param			owner	query		string	false	"Only events of holds by this owner"
//	@Param			type	query		string	false	"Only these types, comma-separated: acquired, released, expired, revoked, session_expired, elected, resigned, proclaimed, fence_reset, delay_cleared"
//	@Param			from	query		string	false	"Only events at or after this time (RFC 3339)"	format(date-time)
//	@Param			to		query		string	false	"Only events before this time (RFC 3339)"		format(date-time)
//	@Success		200		{object}	api.History
//	@Failure		400		{object}	api.Problem	"invalid_request"
//	@Failure		401		{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		421		{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429		{object}	api.Problem	"rate_limited"
//	@Failure		503		{object}	api.Problem	"unavailable"
//	@Header			429		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503		{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/history [get]
func (a *API) history(c echo.Context) error {
	q := queryOf(c)
	limit, _, err := intParam(q, "limit", 1, lock.MaxListLimit)
	if err != nil {
		return err
	}
	before, _, err := intParam(q, "before", 1, math.MaxInt64)
	if err != nil {
		return err
	}
	o := lock.HistoryOptions{
		Lock: q.Get("lock"), Kind: lock.EventKind(q.Get("kind")), Name: q.Get("name"),
		Limit: int(limit), Before: before, Owner: q.Get("owner"),
	}
	if t := q.Get("type"); t != "" {
		for _, part := range strings.Split(t, ",") {
			o.Types = append(o.Types, lock.EventType(strings.TrimSpace(part)))
		}
	}
	if o.From, err = timeParam(q, "from"); err != nil {
		return err
	}
	if o.To, err = timeParam(q, "to"); err != nil {
		return err
	}
	evs, next, err := a.eng.History(c.Request().Context(), o)
	if err != nil {
		return err
	}
	out := History{Events: make([]Event, len(evs)), NextBefore: next}
	for i, e := range evs {
		out.Events[i] = toEvent(e)
	}
	return c.JSON(http.StatusOK, out)
}

// cluster godoc
//
//	@Summary		Cluster status
//	@ID				getCluster
//	@Description	The etcd members (with which one leads), the raft term and the current revision, as this node's member sees them. It answers even while that member has no leader (then `leader` is empty), so an operator can see why a node answers 503.
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	api.Cluster
//	@Failure		400	{object}	api.Problem	"invalid_request"
//	@Failure		401	{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		421	{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429	{object}	api.Problem	"rate_limited"
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Header			429	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Header			503	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/v1/cluster [get]
func (a *API) cluster(c echo.Context) error {
	cs, err := a.eng.Cluster(c.Request().Context())
	if err != nil {
		return err
	}
	out := Cluster{Leader: cs.Leader, RaftTerm: cs.RaftTerm, Revision: cs.Revision, Members: make([]Member, len(cs.Members))}
	for i, m := range cs.Members {
		out.Members[i] = Member{ID: m.ID, Name: m.Name, PeerURLs: nonNil(m.PeerURLs), ClientURLs: nonNil(m.ClientURLs), IsLeader: m.IsLeader}
	}
	return c.JSON(http.StatusOK, out)
}

// nonNil keeps JSON arrays arrays: a member that has not started yet has no
// client URLs, which must read [] and not null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
