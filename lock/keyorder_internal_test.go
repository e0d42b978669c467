package lock

import (
	"slices"
	"testing"
)

// The engine's watches take ranges of keys, not prefixes, and rely on
// this order: the recorder's is audit/ to locks/, the waiters' delay/ to
// sessions/; neither may hold the history index's writes.
func TestKeys_SortAsTheWatchesRangesAssume(t *testing.T) {
	e := &Engine{cfg: DefaultConfig()}
	order := []string{
		e.auditPrefix(), e.delayKey(""), e.fencedKey(""), e.fenceMaxKey(""), e.locksPrefix(), e.cfg.Prefix + "meta/",
		e.queuePrefix(""), e.sessionsPrefix(), e.sessionTallyKey("", ""), e.histPrefix(), e.histNamePrefix("", ""),
	}
	if !slices.IsSorted(order) {
		t.Fatalf("key prefixes out of the order the watches assume: %q", order)
	}
}
