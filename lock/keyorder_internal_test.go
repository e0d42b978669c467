package lock

import (
	"slices"
	"testing"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
)

// The engine's watches take ranges of keys, not prefixes, and rely on
// this order: the recorder's is audit/ to locks/, the waiters' delay/ to
// sessions/; neither may hold the history index's writes.
func TestKeys_SortAsTheWatchesRangesAssume(t *testing.T) {
	e := &Engine{core: &core.Engine{Cfg: DefaultConfig(), Keys: store.Keys{Prefix: DefaultConfig().Prefix}}}
	order := []string{
		e.core.Keys.Audit(), e.core.Keys.Delay(""), e.core.Keys.Fenced(""), e.core.Keys.FenceMax(""), e.core.Keys.Locks(), e.core.Cfg.Prefix + "meta/",
		e.core.Keys.Queue(""), e.core.Keys.Sessions(), e.core.Keys.SessionTally("", ""), e.core.Keys.Trail(), e.core.Keys.TrailName("", ""),
	}
	if !slices.IsSorted(order) {
		t.Fatalf("key prefixes out of the order the watches assume: %q", order)
	}
}
