package trail

import (
	"github.com/prometheus/client_golang/prometheus"
)

// trailMetrics are the audit trail's Prometheus series, per node as the
// engine's are (lock/internal/hold/metrics.go). count is the engine's count of the
// audit events the node writes (baton_lock_events_total): an event is
// counted by whichever part of the node wrote it.
type trailMetrics struct {
	count func(EventType, int)
	// historyDropped and historyEvents watch the trail's retention
	// (historyretention.go).
	historyDropped *prometheus.CounterVec
	historyEvents  prometheus.GaugeFunc
	// trailGaps counts the stretches of revisions compacted before the
	// history index read them (historybackfill.go).
	trailGaps prometheus.Counter
	// trailHoldBack is how close a compaction held back for the trail
	// is to being forced (compactor.go).
	trailHoldBack prometheus.Gauge
}

func newTrailMetrics(count func(EventType, int), historyEvents func() float64) *trailMetrics {
	m := &trailMetrics{count: count}
	m.historyDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "baton_history_dropped_events_total",
		Help: "Audit events this node dropped from the trail, oldest first, by reason: age (older than --history-retention) " +
			"or size (the trail held more than --history-max-events). Only the node keeping the history index (the etcd leader's) drops.",
	}, []string{"reason"})
	m.historyDropped.WithLabelValues("age")
	m.historyDropped.WithLabelValues("size")
	m.historyEvents = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "baton_history_events",
		Help: "Audit events the trail holds, as this node last read or wrote the history index (exact on the node keeping it).",
	}, historyEvents)
	m.trailGaps, m.trailHoldBack = newTrailGaps(), newTrailHoldBack()
	return m
}

func (m *trailMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.historyDropped, m.historyEvents, m.trailGaps, m.trailHoldBack}
}

func (m *trailMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

func (m *trailMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// recorded counts n audit events of typ written by this node.
func (m *trailMetrics) recorded(typ EventType, n int) { m.count(typ, n) }

// newTrailHoldBack is baton_trail_hold_back_ratio.
func newTrailHoldBack() prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "baton_trail_hold_back_ratio",
		Help: "How close a compaction of etcd held back for the audit trail, which has not read the revisions it would compact, is to being " +
			"forced past it: the larger of the time held back over --trail-hold-back and the bytes in use over --trail-hold-back-quota of " +
			"the quota. At 1 baton compacts, and the trail records a gap. 0 while nothing is held back; only the node keeping the history " +
			"index, with an embedded member, compacts.",
	})
}

// newTrailGaps is baton_trail_gaps_total.
func newTrailGaps() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "baton_trail_gaps_total",
		Help: "Stretches of etcd revisions compacted before the history index read them, each recorded in the history as a gap event: " +
			"the events no pending record holds (storage format 5's holds) are lost. Only the node keeping the history index counts.",
	})
}
