//go:build failpoints

package trail

// HaltTrail stops (true) or resumes (false) this node's audit trail
// writer, the history index, as a writer that hangs would: the trail's
// cursor stays put, so compaction is held back behind it until the bounds
// of TrailHoldBack and TrailHoldBackQuota. It exists only in a binary
// built with -tags failpoints, which the fault-injection suite
// (tests/chaos) runs.
func (t *Trail) HaltTrail(halt bool) {
	t.hist.halted.Store(halt)
	t.log.Warn("failpoint: audit trail writer", "halted", halt)
}
