package lock

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector returns the engine's metrics for a Prometheus registry:
// baton_lock_events_total, baton_renew_failures_total,
// baton_etcd_leader_changes_total, baton_etcd_has_leader,
// baton_acquires_waiting, baton_etcd_txn_batch_size,
// baton_etcd_txn_batch_splits_total, baton_watch_restarts_total,
// baton_watch_hearing, baton_history_dropped_events_total and
// baton_history_events. Register it once per registry.
func (e *Engine) Collector() prometheus.Collector { return e.core.Metrics }

// CountEvents counts n audit events of typ written by this node, in
// baton_lock_events_total: the audit trail's, beside the engine's own.
func (e *Engine) CountEvents(typ EventType, n int) { e.core.Metrics.Recorded(typ, n) }
