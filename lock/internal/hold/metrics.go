package hold

import (
	"context"
	"errors"

	"github.com/baton-dev/baton/internal/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the engine's Prometheus series. Every one of them counts
// what this engine did or saw, so they are per node: the HTTP layer
// registers them through lock.Engine.Collector and nothing in lock knows of
// HTTP. The label values are fixed small sets (never a lock name, owner or
// session), and every combination is created at zero up front, so that
// alerts and rate() see a series before its first event.
type Metrics struct {
	events        *prometheus.CounterVec
	renewFailures *prometheus.CounterVec
	LeaderChanges prometheus.Counter
	hasLeader     prometheus.GaugeFunc
	Waiting       prometheus.Gauge
	// txnBatchSize and txnBatchSplits watch the txn batcher (internal/txnbatch).
	TxnBatchSize   prometheus.Histogram
	TxnBatchSplits prometheus.Counter
	// watchRestarts and watchHearing watch the engine's etcd watches
	// (internal/watchfeed).
	WatchRestarts *prometheus.CounterVec
	WatchHearing  *prometheus.GaugeVec
	all           []prometheus.Collector
}

// The engine's watches and why one is opened again: the label values of
// baton_watch_restarts_total and baton_watch_hearing.
var (
	watchNames          = []string{"recorder", "waiters", "events", "history"}
	watchRestartReasons = []string{"stalled", "error", "compacted"}
)

// Renew kinds and failure reasons, the label values of
// baton_renew_failures_total.
const (
	RenewLock    = "lock"
	RenewSession = "session"
)

// renewReasons are the reasons each kind of renew can fail for.
var renewReasons = map[string][]string{
	RenewLock:    {"not_held", "token_mismatch", "not_owner", "invalid", "unavailable", "canceled", "error"},
	RenewSession: {"session_not_found", "not_owner", "invalid", "unavailable", "canceled", "error"},
}

func NewMetrics(hasLeader func() bool) *Metrics {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_lock_events_total",
			Help: "Audit events this node wrote, by type (acquired, released, revoked, expired, session_expired). " +
				"Each event is written by exactly one node, so sum over the nodes for the cluster's count. " +
				"A write whose outcome etcd left unknown (a timeout) is not counted.",
		}, []string{"type"}),
		renewFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_renew_failures_total",
			Help: "Renews this node answered with an error, by kind and reason: lock (not_held, token_mismatch, not_owner, " +
				"invalid, unavailable, canceled, error) and session (session_not_found, not_owner, invalid, unavailable, canceled, error).",
		}, []string{"kind", "reason"}),
		LeaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_etcd_leader_changes_total",
			Help: "Leader changes this node's engine saw: new leaders its embedded member learned of, or, " +
				"over external etcd, raft term changes seen by polling once a second (changes in between are missed).",
		}),
		Waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "baton_acquires_waiting",
			Help: "Acquires with a wait in progress on this node (queued, or about to queue).",
		}),
		TxnBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baton_etcd_txn_batch_size",
			Help: "Acquire and end-hold (release, revoke) requests per etcd txn this node sent: 1 for a request sent alone, " +
				"more when requests that arrived while earlier txns were in flight shared one txn (one raft entry).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
		}),
		TxnBatchSplits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_etcd_txn_batch_splits_total",
			Help: "Batched txns etcd refused as a whole before applying them (mostly a put on a lease that had just expired), " +
				"whose requests were then sent one by one.",
		}),
	}
	m.WatchRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "baton_watch_restarts_total",
		Help: "Times one of this node's etcd watches (recorder: expiries; waiters: wake-ups; events: event streams) was opened again, " +
			"by reason: stalled (nothing heard, not even a requested progress notification, within the stall timeout), " +
			"error (the watch failed), compacted (the history it needed was compacted away).",
	}, []string{"watch", "reason"})
	m.WatchHearing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "baton_watch_hearing",
		Help: "1 while this node's etcd watch hears etcd (it answered within the stall timeout), 0 while it is being re-established; " +
			"/readyz answers 503 while any is 0.",
	}, []string{"watch"})
	for _, w := range watchNames {
		m.WatchHearing.WithLabelValues(w)
		for _, r := range watchRestartReasons {
			m.WatchRestarts.WithLabelValues(w, r)
		}
	}
	m.hasLeader = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "baton_etcd_has_leader",
		Help: "1 if the etcd member behind this node knows a leader, as baton sees it (for external etcd: " +
			"the last once-a-second poll succeeded with a leader), 0 otherwise.",
	}, gauge(hasLeader))
	for _, t := range []store.EventType{store.EventAcquired, store.EventReleased, store.EventRevoked, store.EventExpired, store.EventSessionExpired} {
		m.events.WithLabelValues(string(t))
	}
	for kind, reasons := range renewReasons {
		for _, r := range reasons {
			m.renewFailures.WithLabelValues(kind, r)
		}
	}
	m.all = []prometheus.Collector{m.events, m.renewFailures, m.LeaderChanges, m.hasLeader, m.Waiting, m.TxnBatchSize, m.TxnBatchSplits, m.WatchRestarts, m.WatchHearing}
	return m
}

func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.all {
		c.Describe(ch)
	}
}

func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.all {
		c.Collect(ch)
	}
}

// recordedOf counts n events typ of holds of the thing kept under key
// name name, by the type its kind names them (store.HoldEvent).
func (m *Metrics) RecordedOf(name string, typ store.EventType, n int) {
	m.Recorded(store.HoldEvent(name, typ).Type, n)
}

// renewFailed counts a failed renew of kind (RenewLock or RenewSession).
func (m *Metrics) RenewFailed(kind string, err error) {
	reason := "error"
	switch {
	case errors.Is(err, ErrNotHeld):
		reason = "not_held"
	case errors.Is(err, ErrTokenMismatch):
		reason = "token_mismatch"
	case errors.Is(err, ErrSessionNotFound):
		reason = "session_not_found"
	case errors.Is(err, ErrNotOwner):
		reason = "not_owner"
	case errors.Is(err, ErrInvalid):
		reason = "invalid"
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrClosed):
		reason = "unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		reason = "canceled"
	}
	m.renewFailures.WithLabelValues(kind, reason).Inc()
}

// gauge reads f as a gauge: 1 for true, 0 for false.
func gauge(f func() bool) func() float64 {
	return func() float64 {
		if f() {
			return 1
		}
		return 0
	}
}

// recorded counts n audit events of typ written by this node.
func (m *Metrics) Recorded(typ store.EventType, n int) { countEvents(m.events, typ, n) }

// countEvents counts n audit events of typ in baton_lock_events_total.
func countEvents(events *prometheus.CounterVec, typ store.EventType, n int) {
	if n > 0 {
		events.WithLabelValues(string(typ)).Add(float64(n))
	}
}
