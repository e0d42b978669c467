package lock

import (
	"slices"
	"testing"

	"github.com/baton-dev/baton/internal/store"
)

// The engine's watches take ranges of keys, not prefixes, and rely on
// this order: the recorder's is audit/ to locks/, the waiters' delay/ to
// sessions/; neither may hold the history index's writes.
func TestKeys_SortAsTheWatchesRangesAssume(t *testing.T) {
	e := &Engine{Core: &Core{cfg: DefaultConfig(), keys: store.Keys{Prefix: DefaultConfig().Prefix}}}
	order := []string{
		e.keys.Audit(), e.keys.Delay(""), e.keys.Fenced(""), e.keys.FenceMax(""), e.keys.Locks(), e.cfg.Prefix + "meta/",
		e.keys.Queue(""), e.keys.Sessions(), e.keys.SessionTally("", ""), e.keys.Trail(), e.keys.TrailName("", ""),
	}
	if !slices.IsSorted(order) {
		t.Fatalf("key prefixes out of the order the watches assume: %q", order)
	}
}
