package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// Config describes the server.
type Config struct {
	Engine *lock.Engine
	// Trail is the audit trail beside Engine (package trail): history,
	// event streams and election observations.
	Trail  *trail.Trail
	Logger *slog.Logger
	// MaxWait is the longest acquire wait; the write timeout allows for it.
	MaxWait time.Duration
	// AccessLog writes one info line per request ("http request") to
	// Logger; see accessLog for what it holds and leaves out.
	AccessLog bool
	// RateLimit limits each client address; the zero value is off.
	RateLimit RateLimit
	// CredentialRateLimit limits each credential (as authentication names
	// it); the zero value is off.
	CredentialRateLimit RateLimit
	// EventWriteTimeout bounds each write to an event stream, so a client
	// that stops reading is dropped; 0 means 10s.
	EventWriteTimeout time.Duration
	// EventBuffer is how many events a stream holds for a slow reader
	// before it is dropped; 0 means 1024.
	EventBuffer int
	// StreamLimits cap the event streams of one client address and of one
	// credential; the zero value caps neither (DefaultStreamLimits has
	// the defaults).
	StreamLimits StreamLimits
	// AllowedHosts are the Host names the server answers, with any port
	// (see DefaultAllowedHosts and CheckAllowedHosts); others get 421
	// host_not_allowed. Empty, or holding AnyHost, answers every Host.
	AllowedHosts []string
	// Auth, when set, turns authentication on: every /v1 route and
	// /metrics then need a bearer token of a role that allows the call
	// (see the Role of each row of Routes). Nil serves every route to
	// anyone.
	Auth *auth.Store
}

// Server is baton's HTTP server.
type Server struct {
	echo   *echo.Echo
	http   *http.Server
	log    *slog.Logger
	routes []api.Route
}

// New builds the server. Nothing listens until Serve.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = cfg.Engine.Config().MaxWait
	}
	reg := prometheus.NewRegistry()
	a := api.New(cfg.Engine, cfg.Trail, api.Options{
		Registerer: reg, EventWriteTimeout: cfg.EventWriteTimeout, EventBuffer: cfg.EventBuffer,
	})
	routes := slices.Concat(a.Routes(), ownRoutes(prometheus.Gatherers{reg, prometheus.DefaultGatherer}))
	table := newRouteTable(routes)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// Trust no proxy headers by default: the owner label falls back to the
	// client's address, which must not be spoofable by a header.
	e.IPExtractor = echo.ExtractIPDirect()
	e.HTTPErrorHandler = api.ErrorHandler(cfg.Logger, errorRows...)
	useMiddleware(e, cfg, reg, table)
	a.Register(e, routes)
	table.checkRegistered(e)
	registerGauges(reg, cfg.Engine, cfg.Trail)

	return &Server{
		echo:   e,
		log:    cfg.Logger,
		routes: routes,
		http: &http.Server{
			Handler:           e,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			// A waiting acquire holds its response for up to MaxWait. An
			// event stream lifts this deadline and sets one per write.
			WriteTimeout: cfg.MaxWait + 30*time.Second,
			IdleTimeout:  2 * time.Minute,
			// No request of ours needs net/http's 1 MiB of headers; each
			// connection reading them holds that much.
			MaxHeaderBytes: maxHeaderBytes,
		},
	}
}

// useMiddleware adds the root-level middleware, outermost first. The
// request ID comes before all, so that every log line and problem body of
// the request has it; the access log and the request metrics before
// recover, so that a panic's 500 is logged and counted like any other
// answer (the 5xx alert reads baton_http_requests_total).
//
// The Host first among the checks: a node does not answer for names it is
// not. Per address before authentication, so that a flood with bad
// credentials is throttled too; per credential after it, since
// authentication names the credential. Browser safety before
// authentication too: a page's forged request is refused as such,
// whatever credential it may carry.
func useMiddleware(e *echo.Echo, cfg Config, reg prometheus.Registerer, routes routeTable) {
	e.Use(requestID())
	if cfg.AccessLog {
		e.Use(accessLog(cfg.Logger))
	}
	e.Use(requestMetrics(reg))
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			cfg.Logger.Error("panic in handler", "path", c.Request().URL.Path, "request_id", c.Response().Header().Get(requestIDHeader),
				"err", err, "stack", string(stack))
			return err
		},
	}))
	e.Use(allowHosts(cfg.AllowedHosts, cfg.Logger))
	e.Use(rateLimitByAddress(cfg.RateLimit, reg))
	e.Use(browserSafety(routes, cfg.Logger))
	if cfg.Auth != nil {
		e.Use(requireAuth(cfg.Auth, routes, cfg.Logger, reg))
	}
	e.Use(rateLimitByCredential(cfg.CredentialRateLimit, reg))
	if cfg.Auth != nil {
		e.Use(enforceQuotas(routes, reg))
	}
	e.Use(limitStreams(cfg.StreamLimits, routes))
}

// registerGauges adds the gauges read from the engine at scrape time.
func registerGauges(reg prometheus.Registerer, eng *lock.Engine, tr *trail.Trail) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "baton_event_streams",
		Help: "Event streams (GET /v1/events) this node serves now.",
	}, func() float64 { return float64(tr.EventStreams()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "baton_etcd_nospace",
		Help: "1 while etcd's NOSPACE alarm is raised: the data store is full and every write answers 507 until \"baton maintenance recover\".",
	}, func() float64 {
		if eng.NoSpace() {
			return 1
		}
		return 0
	}))
	reg.MustRegister(&statsCollector{eng: eng, maxEventStreams: tr.Config().MaxEventStreams}, eng.Collector(), tr.Collector())
}

// maxHeaderBytes bounds a request's headers; net/http answers 431 above.
const maxHeaderBytes = 64 << 10

// Handler returns the HTTP handler, for tests with httptest.
func (s *Server) Handler() http.Handler { return s.echo }

// Serve answers requests on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits for requests in flight
// until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.http.Shutdown(ctx)
}

// metrics godoc
//
//	@Summary		Prometheus metrics
//	@ID				metrics
//	@Description	baton's series (`baton_http_requests_total`, `baton_locks_held`, `baton_waiters`, `baton_sessions`, `baton_acquire_duration_seconds`, `baton_lock_events_total`, `baton_renew_failures_total`, `baton_etcd_has_leader`, …), etcd's and Go's, in Prometheus text format. docs/OPERATIONS.md says what each means.
//	@Tags			operations
//	@Produce		plain
//	@Success		200	{string}	string		"Prometheus text format"
//	@Failure		401	{object}	api.Problem	"unauthorized: no valid bearer token (when auth is on)"
//	@Failure		421	{object}	api.Problem	"host_not_allowed: the Host is not one this node answers (--allowed-hosts)"
//	@Failure		429	{object}	api.Problem	"rate_limited"
//	@Header			429	{integer}	Retry-After	"Seconds to wait before retrying"
//	@Security		BearerAuth
//	@Router			/metrics [get]
func metrics(h http.Handler) echo.HandlerFunc { return echo.WrapHandler(h) }

// openapiDoc serves the embedded OpenAPI document.
func openapiDoc(contentType string, doc []byte) echo.HandlerFunc {
	return func(c echo.Context) error {
		return c.Blob(http.StatusOK, contentType, doc)
	}
}

// requestMetrics counts requests by method, route template and status.
// It runs outside recover, so a handler's panic counts as the 500 that
// recover answers.
func requestMetrics(reg prometheus.Registerer) echo.MiddlewareFunc {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "baton_http_requests_total",
		Help: "HTTP requests answered, by method, route and status code.",
	}, []string{"method", "route", "code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "baton_http_request_duration_seconds",
		Help:    "Time to answer HTTP requests, by method and route.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route"})
	reg.MustRegister(requests, latency)
	obs := &requestObservers{requests: requests, latency: latency, m: map[requestKey]requestObserver{}}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				// Render now, so the status we count is the one sent.
				c.Error(err)
			}
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			o := obs.get(requestKey{metricMethod(c.Request().Method), route, c.Response().Status})
			o.count.Inc()
			o.latency.Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

// metricMethod is the method label of a request: the client picks the
// method, and any token is a valid one to net/http, so a label per
// method seen would let clients grow the series without bound. Methods
// outside HTTP's own are counted as "other", as promhttp does.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// requestObservers keeps the series of each method, route and status, so
// that a request costs one map lookup instead of two label hashes and
// lookups in the vectors (and strconv's string for the status).
type requestObservers struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	mu sync.RWMutex
	m  map[requestKey]requestObserver
}

type requestKey struct {
	method, route string
	status        int
}

type requestObserver struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// maxCachedSeries bounds the cache. Methods (see metricMethod), routes
// and statuses are few, so it is only a guard; past it the vectors are
// asked each time, as before the cache.
const maxCachedSeries = 512

func (r *requestObservers) get(k requestKey) requestObserver {
	r.mu.RLock()
	o, ok := r.m[k]
	r.mu.RUnlock()
	if ok {
		return o
	}
	o = requestObserver{
		count:   r.requests.WithLabelValues(k.method, k.route, strconv.Itoa(k.status)),
		latency: r.latency.WithLabelValues(k.method, k.route),
	}
	r.mu.Lock()
	if len(r.m) < maxCachedSeries {
		r.m[k] = o
	}
	r.mu.Unlock()
	return o
}

// statsCollector reports what the cluster holds at scrape time. The counts
// come from etcd, so every node reports the cluster's numbers.
type statsCollector struct {
	eng             *lock.Engine
	maxEventStreams int
}

var (
	locksHeldDesc = prometheus.NewDesc("baton_locks_held", "Locks held in the cluster.", nil, nil)
	electionsDesc = prometheus.NewDesc("baton_elections_led", "Elections that have a leader in the cluster.", nil, nil)
	permitsDesc   = prometheus.NewDesc("baton_permits_held", "Semaphore permits held in the cluster.", nil, nil)
	rwHoldsDesc   = prometheus.NewDesc("baton_rwlock_holds", "Read and write holds of read/write locks in the cluster.", nil, nil)
	waitersDesc   = prometheus.NewDesc("baton_waiters", "Acquires queued for a lock, a semaphore's permit or a read/write lock, and candidates waiting to lead an election, in the cluster.", nil, nil)
	sessionsDesc  = prometheus.NewDesc("baton_sessions", "Live sessions in the cluster.", nil, nil)
	statsUpDesc   = prometheus.NewDesc("baton_stats_up", "1 if the counts above could be read from etcd at this scrape.", nil, nil)
	limitDesc     = prometheus.NewDesc("baton_limit", "The caps this node enforces, by name (max_sessions, max_waiters_per_lock, max_locks_per_session, max_event_streams, max_locks, max_fenced_values, max_fenced_value_bytes); 0 means no cap. Alerts compare the counts with them.", []string{"name"}, nil)
)

func (s *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- locksHeldDesc
	ch <- electionsDesc
	ch <- permitsDesc
	ch <- rwHoldsDesc
	ch <- waitersDesc
	ch <- sessionsDesc
	ch <- statsUpDesc
	ch <- limitDesc
}

func (s *statsCollector) Collect(ch chan<- prometheus.Metric) {
	cfg := s.eng.Config()
	for name, v := range map[string]int{
		"max_sessions": cfg.MaxSessions, "max_waiters_per_lock": cfg.MaxWaitersPerLock,
		"max_locks_per_session": cfg.MaxLocksPerSession, "max_event_streams": s.maxEventStreams,
		"max_locks": cfg.MaxLocks, "max_fenced_values": cfg.MaxFencedValues, "max_fenced_value_bytes": cfg.MaxFencedValueBytes,
	} {
		ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, float64(v), name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := s.eng.Stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(statsUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(statsUpDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(locksHeldDesc, prometheus.GaugeValue, float64(st.LocksHeld))
	ch <- prometheus.MustNewConstMetric(electionsDesc, prometheus.GaugeValue, float64(st.ElectionsLed))
	ch <- prometheus.MustNewConstMetric(permitsDesc, prometheus.GaugeValue, float64(st.PermitsHeld))
	ch <- prometheus.MustNewConstMetric(rwHoldsDesc, prometheus.GaugeValue, float64(st.RWHolds))
	ch <- prometheus.MustNewConstMetric(waitersDesc, prometheus.GaugeValue, float64(st.Waiters))
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(st.Sessions))
}
