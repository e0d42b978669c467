package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/baton-dev/baton/internal/watchfeed"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/expiry"
	"github.com/baton-dev/baton/lock/internal/fence"
	"github.com/baton-dev/baton/lock/internal/kv"
	"github.com/baton-dev/baton/lock/internal/quota"
	"github.com/baton-dev/baton/lock/internal/session"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Engine serves locks, sessions, fenced values and keys from etcd. It is
// safe for concurrent use. Several engines, on several nodes, may share
// one etcd cluster: every guarantee holds across them.
type Engine struct {
	core *core.Engine

	stopFunc context.CancelFunc
	wg       sync.WaitGroup
	closeMu  sync.Once

	// rec records expiries from a watch of its own.
	rec *expiry.Recorder
	// space holds the storage caps' tallies and the alarm (space.go).
	space *space
	// sessions are the sessions (lock/internal/session).
	sessions *session.Registry
	// fenced are the fenced values (fenced.go).
	fenced *fence.Registers
	// kv are the keys of coordination data (kv.go).
	kv *kv.Store
	// quota counts what credentials' quotas bound (lock/internal/quota).
	quota *quota.Tally
	// feeds are the engine's etcd watches, whose hearing the engine's
	// readiness requires.
	feeds []*watchfeed.Feed
}

// New starts an engine over cli. It does not own cli: closing the engine
// leaves the client open. The expiry recorder starts at once, so every
// lease expiry from now on is recorded in the audit trail.
func New(ctx context.Context, cli *clientv3.Client, cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	stop, stopFunc := context.WithCancel(context.Background())
	e := &Engine{core: core.New(cli, cfg, stop), stopFunc: stopFunc}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.core.Etcd.FollowLeader(e.core.Keys.Recorder())
	}()
	e.space = newSpace(e.core)
	e.quota = quota.New(e.core)
	e.sessions = session.New(e.core, e.space.sessions)
	e.fenced = fence.New(fence.Config{
		Client: cli, Etcd: e.core.Etcd, Keys: e.core.Keys, MaxValueBytes: cfg.MaxFencedValueBytes,
		Reserve: e.space.reserveFenced, Recorded: e.core.Metrics.Recorded,
	})
	e.kv = kv.New(e.core, kv.Config{MaxValueBytes: cfg.MaxKeyValueBytes, MaxKeys: cfg.MaxKeys}, e.space.keys)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.space.run()
	}()
	if err := e.core.Etcd.WhileStarting(ctx, e.core.Log, func() error { return loadFormat(ctx, e.core) }); err != nil {
		stopFunc()
		e.wg.Wait()
		return nil, err
	}
	rec, err := expiry.New(ctx, e.core)
	if err != nil {
		stopFunc()
		return nil, err
	}
	e.rec = rec
	// The hubs start at the revision the recorder's cursor was read at:
	// nobody waits on anything older.
	e.core.Waits = e.core.NewWaiterHub(rec.Head + 1)
	e.feeds = []*watchfeed.Feed{rec.Feed, e.core.Waits.Feed}
	runs := []func(context.Context){rec.Run, e.core.Waits.Feed.Run}
	for _, run := range runs {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			run(stop)
		}()
	}
	// The engine is ready once its watches hear etcd; one that has not
	// opened within OpTimeout keeps trying, and Ready says so meanwhile.
	octx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	defer cancel()
	for _, f := range e.feeds {
		select {
		case <-f.Opened():
		case <-octx.Done():
			if ctx.Err() != nil {
				e.Close()
				return nil, fmt.Errorf("open etcd watches: %w", ctx.Err())
			}
			e.core.Log.Warn("etcd watch not open yet; the node is not ready until it is", "watch", f.Name())
		}
	}
	return e, nil
}

// errDeaf is wrapped in the ErrUnavailable that Ready returns while one of
// the engine's watches is not hearing etcd.
var errDeaf = errors.New("this node is not hearing etcd's watch")

// hearing returns an ErrUnavailable when one of the engine's watches has
// not heard from etcd within Config.WatchStallTimeout, and nil otherwise.
// Waiters are then not woken, or expiries not recorded,
// until the watch is open again.
func (e *Engine) hearing() error {
	for _, f := range e.feeds {
		if err := Heard(f); err != nil {
			return err
		}
	}
	return nil
}

// StopWaiting ends every acquire that is waiting in a queue (they return
// ErrClosed) and refuses new waits, so a shutdown can drain HTTP quickly.
// Everything else keeps working until Close.
func (e *Engine) StopWaiting() { e.core.StopWaiting() }

// Close stops waits in progress (they return ErrClosed) and the background
// loops, then revokes this node's waiter lease. Calling it again is a no-op.
func (e *Engine) Close() error {
	e.closeMu.Do(func() {
		e.stopFunc()
		e.wg.Wait()
		e.core.Waiters.Close(e.core)
	})
	return nil
}

// Client returns the etcd client the engine uses.
func (e *Engine) Client() *clientv3.Client { return e.core.Cli }

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.core.Cfg }

// CheckLeader returns an ErrUnavailable at once when the embedded member
// knows no leader (EmbeddedMember.HasLeader), and nil otherwise.
func (e *Engine) CheckLeader() error { return e.core.Etcd.CheckLeader() }

// Config tunes an Engine; EmbeddedMember is what the engine needs of the
// etcd member it is embedded with. Both are the hold engine's
// (lock/internal/core/config.go), which documents every field.
type (
	Config         = core.Config
	EmbeddedMember = core.EmbeddedMember
)

// DefaultConfig returns the defaults that docs/API.md documents.
func DefaultConfig() Config { return core.DefaultConfig() }

// Heard returns an ErrUnavailable while f is not hearing etcd.
func Heard(f *watchfeed.Feed) error {
	if !f.Hearing() {
		return fmt.Errorf("%w: %w: its %s watch is being re-established", ErrUnavailable, errDeaf, f.Name())
	}
	return nil
}
