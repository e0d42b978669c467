package trail

import (
	"context"
	"strconv"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// engine is a hold engine with the trail beside it, as the trail's
// internal tests drive them: the engine's API, and the trail's insides.
type engine struct {
	*lock.Engine
	trail *Trail
	cli   *clientv3.Client
	keys  store.Keys
}

// History reads the trail beside the engine.
func (e *engine) History(ctx context.Context, o HistoryOptions) ([]Event, int64, error) {
	return e.trail.History(ctx, o)
}

// startBeside starts an engine with cfg over cli and the trail beside it
// with tc, both closed when the test ends, the trail first.
func startBeside(t *testing.T, cli *clientv3.Client, cfg lock.Config, tc Config) *engine {
	t.Helper()
	eng, err := lock.New(context.Background(), cli, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tc.BackendQuota == 0 {
		tc.BackendQuota = cfg.BackendQuota
	}
	tc.Logger = cfg.Logger
	tr, err := New(context.Background(), eng, tc)
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tr.Close()
		eng.Close()
	})
	return &engine{Engine: eng, trail: tr, cli: cli, keys: eng.Keys()}
}

func newTestEngine(t *testing.T) *engine {
	t.Helper()
	return newTestEngineAtFormat(t, 0)
}

// newTestEngineAtFormat is newTestEngine over a keyspace begun at storage
// format format by an older baton (0: a new keyspace).
func newTestEngineAtFormat(t *testing.T, format int) *engine {
	t.Helper()
	m := testetcd.Start(t)
	if format > 0 {
		if _, err := m.Client().Put(context.Background(), lock.DefaultConfig().Prefix+"meta/format", strconv.Itoa(format)); err != nil {
			t.Fatal(err)
		}
	}
	return startBeside(t, m.Client(), lock.DefaultConfig(), DefaultConfig())
}
