package api

import (
	"time"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/sse"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
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
	trail             *trail.Trail
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
func New(eng *lock.Engine, tr *trail.Trail, o Options) *API {
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 2 * time.Second
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = sse.DefaultHeartbeat
	}
	if o.EventWriteTimeout == 0 {
		o.EventWriteTimeout = sse.DefaultWriteTimeout
	}
	a := &API{
		eng:               eng,
		trail:             tr,
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

// owner is the request's owner, or the client's address when absent.
func owner(c echo.Context, o *string) string {
	if o != nil {
		return *o
	}
	return c.RealIP()
}

// terms reads an acquire's ttl, wait, session and keep_place
// (request.ReadTerms), under the engine's MinTTL.
func (a *API) terms(ttl, wait, session *string, keepPlace *bool) (request.Terms, error) {
	return request.ReadTerms(ttl, wait, session, keepPlace, a.eng.Config().MinTTL)
}
