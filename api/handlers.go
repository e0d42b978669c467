package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
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
}

// API serves the lock engine over HTTP.
type API struct {
	eng          *lock.Engine
	readyTimeout time.Duration
	acquireDur   *prometheus.HistogramVec
}

// New returns handlers over eng.
func New(eng *lock.Engine, o Options) *API {
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 2 * time.Second
	}
	a := &API{
		eng:          eng,
		readyTimeout: o.ReadyTimeout,
		acquireDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "baton_acquire_duration_seconds",
			Help:    "Time to answer an acquire, including any wait, by result (acquired, reacquired, held, error).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"result"}),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(a.acquireDur)
	}
	return a
}

// Register adds every route of API.md's v1 and the health checks to e.
func (a *API) Register(e *echo.Echo) {
	e.GET("/healthz", a.healthz)
	e.GET("/readyz", a.readyz)

	v1 := e.Group("/v1")
	v1.POST("/sessions", a.createSession)
	v1.GET("/sessions/:id", a.getSession)
	v1.POST("/sessions/:id/renew", a.renewSession)
	v1.DELETE("/sessions/:id", a.deleteSession)

	v1.GET("/locks", a.listLocks)
	v1.POST("/locks/:name", a.acquire)
	v1.GET("/locks/:name", a.getLock)
	v1.POST("/locks/:name/renew", a.renew)
	v1.DELETE("/locks/:name", a.release)
	v1.POST("/locks/:name/revoke", a.revoke)

	v1.PUT("/fenced/:resource", a.putFenced)
	v1.GET("/fenced/:resource", a.getFenced)

	v1.GET("/history", a.history)
	v1.GET("/cluster", a.cluster)
}

func (a *API) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (a *API) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), a.readyTimeout)
	defer cancel()
	if err := a.eng.Ready(ctx); err != nil {
		// Fix (found by server's TestQuorumLost_…): when the probe's own
		// timeout ends the read first, the engine reports the caller's
		// context.DeadlineExceeded, which answered 500. Not answering in
		// time is what "not ready" means: 503, as API.md says.
		if errors.Is(err, context.DeadlineExceeded) && c.Request().Context().Err() == nil {
			err = fmt.Errorf("%w: %w", lock.ErrUnavailable, err)
		}
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// owner is the request's owner, or the client's address when absent.
func owner(c echo.Context, o *string) string {
	if o != nil {
		return *o
	}
	return c.RealIP()
}

func (a *API) acquire(c echo.Context) error {
	// Fix (found by TestBadInput_…/unknown_query_parameter_on_acquire):
	// handlers that take no query parameters ignored them, so
	// POST /v1/locks/x?wait=10s acquired without waiting. API.md rejects
	// unknown request fields; every handler now checks its query.
	if _, err := query(c); err != nil {
		return err
	}
	start := time.Now()
	var req AcquireRequest
	if err := decodeBody(c, &req, true); err != nil {
		return err
	}
	lr := lock.AcquireRequest{Name: c.Param("name"), Owner: owner(c, req.Owner), Metadata: req.Metadata}
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
	result := "acquired"
	switch {
	case errors.Is(err, lock.ErrHeld):
		result = "held"
	case err != nil:
		result = "error"
	case !fresh:
		result = "reacquired"
	}
	a.acquireDur.WithLabelValues(result).Observe(time.Since(start).Seconds())
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !fresh {
		status = http.StatusOK
	}
	return c.JSON(status, toLock(l))
}

func (a *API) getLock(c echo.Context) error {
	if _, err := query(c); err != nil {
		return err
	}
	l, err := a.eng.Get(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toLock(l))
}

func (a *API) listLocks(c echo.Context) error {
	q, err := query(c, "prefix", "limit", "cursor")
	if err != nil {
		return err
	}
	limit, _, err := intParam(q, "limit", 1, lock.MaxListLimit)
	if err != nil {
		return err
	}
	o := lock.ListOptions{Prefix: q.Get("prefix"), Limit: int(limit)}
	if cur := q.Get("cursor"); cur != "" {
		b, err := base64.RawURLEncoding.DecodeString(cur)
		if err != nil || !lock.ValidName(string(b)) {
			return badRequest("cursor", "cursor is not one returned by a previous page")
		}
		o.After = string(b)
	}
	locks, next, err := a.eng.List(c.Request().Context(), o)
	if err != nil {
		return err
	}
	out := LockList{Locks: make([]*Lock, len(locks))}
	for i, l := range locks {
		out.Locks[i] = toLock(l)
	}
	if next != "" {
		out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(next))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) renew(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
	var req RenewRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	l, err := a.eng.Renew(c.Request().Context(), c.Param("name"), *req.Token)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toLock(l))
}

func (a *API) release(c echo.Context) error {
	q, err := query(c, "token")
	if err != nil {
		return err
	}
	tok, ok, err := intParam(q, "token", 1, math.MaxInt64)
	if err != nil {
		return err
	}
	if !ok {
		return badRequest("token", "the token query parameter is required: DELETE /v1/locks/{name}?token=4711")
	}
	if err := a.eng.Release(c.Request().Context(), c.Param("name"), tok); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *API) revoke(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
	var req RevokeRequest
	if err := decodeBody(c, &req, true); err != nil {
		return err
	}
	if _, err := a.eng.Revoke(c.Request().Context(), c.Param("name"), req.Reason); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *API) createSession(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
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
	return c.JSON(http.StatusCreated, toSession(s))
}

func (a *API) getSession(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
	s, err := a.eng.GetSession(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toSession(s))
}

func (a *API) renewSession(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
	if err := decodeBody(c, &struct{}{}, true); err != nil {
		return err
	}
	s, err := a.eng.RenewSession(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toSession(s))
}

func (a *API) deleteSession(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
	if err := a.eng.DeleteSession(c.Request().Context(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *API) putFenced(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
	var req FencedRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	f, err := a.eng.PutFenced(c.Request().Context(), c.Param("resource"), *req.Token, req.Value, req.Lock)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toFenced(f))
}

func (a *API) getFenced(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
	f, err := a.eng.GetFenced(c.Request().Context(), c.Param("resource"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toFenced(f))
}

func (a *API) history(c echo.Context) error {
	q, err := query(c, "lock", "limit", "before")
	if err != nil {
		return err
	}
	limit, _, err := intParam(q, "limit", 1, lock.MaxListLimit)
	if err != nil {
		return err
	}
	before, _, err := intParam(q, "before", 1, math.MaxInt64)
	if err != nil {
		return err
	}
	evs, next, err := a.eng.History(c.Request().Context(), lock.HistoryOptions{Lock: q.Get("lock"), Limit: int(limit), Before: before})
	if err != nil {
		return err
	}
	out := History{Events: make([]Event, len(evs)), NextBefore: next}
	for i, e := range evs {
		out.Events[i] = toEvent(e)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) cluster(c echo.Context) error {
	if _, err := query(c); err != nil { // no query parameters: a typo must not pass unnoticed
		return err
	}
	cs, err := a.eng.Cluster(c.Request().Context())
	if err != nil {
		return err
	}
	out := Cluster{Leader: cs.Leader, RaftTerm: cs.RaftTerm, Revision: cs.Revision, Members: make([]Member, len(cs.Members))}
	for i, m := range cs.Members {
		out.Members[i] = Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLeader: m.IsLeader}
	}
	return c.JSON(http.StatusOK, out)
}
