package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/txnbatch"
	"github.com/baton-dev/baton/internal/watchfeed"
	"github.com/baton-dev/baton/lock/internal/fence"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Config tunes an Engine. Start from DefaultConfig.
type Config struct {
	// Prefix is prepended to every key baton writes.
	Prefix string
	// DefaultTTL is used when an acquire or a session names no TTL.
	DefaultTTL time.Duration
	// MinTTL and MaxTTL bound requested TTLs. MinTTL should not be below
	// etcd's lease floor (1.5 × election timeout), or etcd raises it.
	MinTTL, MaxTTL time.Duration
	// MaxWait bounds an acquire's wait.
	MaxWait time.Duration
	// MaxLockDelay bounds lock_delay.
	MaxLockDelay time.Duration
	// OpTimeout bounds each etcd call, so that a request to a node cut off
	// from its quorum answers ErrUnavailable instead of hanging.
	OpTimeout time.Duration
	// WaiterTTL is the TTL of the lease that holds this node's queue
	// entries: if the node dies, its waiters leave the queue within it.
	WaiterTTL time.Duration
	// MaxWaitersPerLock caps the acquires queued for one lock, cluster
	// wide; the next one fails with ErrTooManyWaiters. 0 means no cap.
	// Each waiter holds an HTTP request, a queue key and a registration
	// with the waiter hub for up to MaxWait, so an unbounded queue is
	// memory anyone can take.
	MaxWaitersPerLock int
	// MaxLocksPerSession caps the locks one session holds; the next
	// acquire in it fails with ErrTooManyLocks. 0 means no cap, the
	// default: the cap costs every session acquire and release one more
	// write (a third more per cycle, BenchmarkEngine_CycleSession), and it
	// bounds little, since locks without a session are not capped. Holds
	// acquired while it was off are not counted when it is turned on.
	MaxLocksPerSession int
	// MaxSessions caps the sessions of the cluster; the next
	// CreateSession fails with ErrTooManySessions. 0 means no cap.
	MaxSessions int
	// MaxLocks caps the locks held in the cluster, with or without a
	// session; the next acquire fails with ErrTooManyHeldLocks. 0 means no
	// cap. Without it a client takes etcd's space and every node's memory
	// one lease at a time. It is approximate: see CountRefresh.
	MaxLocks int
	// MaxFencedValues caps the fenced values (resources) of the cluster;
	// a write that would make a new one fails with ErrTooManyFencedValues.
	// 0 means no cap. Approximate: see CountRefresh.
	MaxFencedValues int
	// MaxFencedValueBytes bounds a fenced value's JSON; a larger one fails
	// with ErrValueTooLarge. It must be positive.
	MaxFencedValueBytes int
	// CountRefresh is how often the engine counts the keys that
	// MaxSessions, MaxLocks and MaxFencedValues cap. A create costs no
	// count: it is checked against that count plus this engine's own
	// creates since. So a cap can be overshot by what other nodes create
	// within one CountRefresh (never with one node), and a slot freed by
	// a release or an expiry is offered again within it.
	CountRefresh time.Duration
	// BackendQuota is etcd's backend quota in bytes, for Recover to tell
	// whether defragmenting freed enough; 0 means etcd's default, 2 GiB.
	BackendQuota int64
	// DialMember, when set, returns a client of the etcd member reached at
	// clientURLs, closed by the caller: Recover defragments every member
	// through one, because the in-process client reaches only its own
	// member. Without it, Recover reaches other members through the
	// engine's client, which works only over external etcd.
	DialMember func(ctx context.Context, clientURLs []string) (*clientv3.Client, error)
	// WatchStallTimeout is how long one of the engine's etcd watches may
	// go without a response, while it asks for progress notifications,
	// before it is declared stalled and opened again (internal/watchfeed). The
	// engine is not ready while a watch is not hearing etcd.
	WatchStallTimeout time.Duration
	// Logger receives the engine's logs; nil means slog.Default().
	Logger *slog.Logger
	// Member is the embedded etcd member whose in-process client cli is
	// (embedetcd.Member is one); nil means cli reaches etcd over the
	// network. It is what tells the engine it runs on its own member:
	// requests then fail fast with ErrUnavailable while the member knows
	// no leader, a new leader ends the calls in flight, local reads see
	// the engine's own writes, and NOSPACE and defragmenting go through
	// the member (see EmbeddedMember).
	Embedded EmbeddedMember
	// StorageFormat, when above the cluster's storage format, raises it
	// as the engine starts (format.go): set it once every node of the
	// cluster runs a baton that reads it. 0 keeps the cluster's format.
	StorageFormat int

	// RecorderSaveEvery is how often the expiry recorder saves its cursor,
	// when it has moved; 0 means 5 s (recorderSaveEvery). Tests shorten
	// it, to see the saves a quiet cluster makes without waiting.
	RecorderSaveEvery time.Duration
}

// EmbeddedMember is what the engine needs of the etcd member it is
// embedded with (store.Member says what each method is for).
type EmbeddedMember = store.Member

// DefaultConfig returns the defaults that docs/API.md documents.
func DefaultConfig() Config {
	return Config{
		Prefix:       "/baton/",
		DefaultTTL:   30 * time.Second,
		MinTTL:       2 * time.Second,
		MaxTTL:       24 * time.Hour,
		MaxWait:      5 * time.Minute,
		MaxLockDelay: time.Hour,
		OpTimeout:    5 * time.Second,
		WaiterTTL:    5 * time.Second,
		// Caps far above any sane use (the bench holds 1,000 sessions of
		// 100 locks; its contention scenario queues 64 waiters), low
		// enough that one client cannot take the node's memory: 1,000
		// waiters are 1,000 held requests and watches on one lock;
		// 100,000 sessions are 100,000 leases, which etcd's lessor
		// revokes at a bounded rate when they expire together
		// (docs/PERFORMANCE.md, "The HTTP path, memory and caps").
		MaxWaitersPerLock:  1000,
		MaxLocksPerSession: 0,
		MaxSessions:        100000,
		WatchStallTimeout:  5 * time.Second,
		// 200,000 locks are twice the bench's scale scenario (1,000
		// sessions of 100 locks), within one node's memory and etcd's
		// default quota even with full metadata; 10,000 fenced values of
		// the largest size stay well inside that quota too
		// (docs/PERFORMANCE.md, "The HTTP path, memory and caps").
		MaxLocks:            200000,
		MaxFencedValues:     10000,
		MaxFencedValueBytes: 32 << 10,
		CountRefresh:        time.Second,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Prefix == "":
		return errors.New("lock: Prefix must not be empty")
	case c.MinTTL < time.Second:
		return errors.New("lock: MinTTL must be at least 1s")
	case c.MaxTTL < c.MinTTL:
		return errors.New("lock: MaxTTL must be at least MinTTL")
	case c.DefaultTTL < c.MinTTL || c.DefaultTTL > c.MaxTTL:
		return errors.New("lock: DefaultTTL must lie within [MinTTL, MaxTTL]")
	case c.OpTimeout <= 0:
		return errors.New("lock: OpTimeout must be positive")
	case c.WaiterTTL < 2*time.Second:
		return errors.New("lock: WaiterTTL must be at least 2s")
	case c.WatchStallTimeout < 2*watchfeed.ProbeAfter:
		return fmt.Errorf("lock: WatchStallTimeout must be at least %s", 2*watchfeed.ProbeAfter)
	case c.MaxWaitersPerLock < 0, c.MaxLocksPerSession < 0, c.MaxSessions < 0:
		return errors.New("lock: MaxWaitersPerLock, MaxLocksPerSession and MaxSessions must not be negative (0 means no cap)")
	case c.StorageFormat < 0 || c.StorageFormat > newestFormat:
		return fmt.Errorf("lock: StorageFormat (--storage-format) must be between 0 (the cluster's) and %d", newestFormat)
	case c.MaxLocks < 0, c.MaxFencedValues < 0:
		return errors.New("lock: MaxLocks and MaxFencedValues must not be negative (0 means no cap)")
	case c.MaxFencedValueBytes <= 0:
		return errors.New("lock: MaxFencedValueBytes must be positive")
	case c.CountRefresh <= 0:
		return errors.New("lock: CountRefresh must be positive")
	case c.BackendQuota < 0:
		return errors.New("lock: BackendQuota must not be negative (0 means etcd's default)")
	}
	return nil
}

// Engine serves locks, sessions, fenced values and history from etcd. It is
// safe for concurrent use. Several engines, on several nodes, may share
// one etcd cluster: every guarantee holds across them.
type Engine struct {
	cli  *clientv3.Client
	cfg  Config
	keys store.Keys
	log  *slog.Logger
	// format is the storage format this node writes (format.go), set
	// before anything is written.
	format int

	// stop ends waits and background loops when the engine closes.
	stop     context.Context
	stopFunc context.CancelFunc
	// drain ends waiting acquires only, so an HTTP drain is not held up
	// by them while the recorder keeps running.
	drain     context.Context
	drainFunc context.CancelFunc
	wg        sync.WaitGroup
	closeMu   sync.Once

	waiters waiterLease
	leases  leasePool
	// looks counts the reads of waiters woken in the queue (look).
	looks atomic.Int64

	// etcd is how the engine calls etcd (store.Etcd): every call bounded
	// by OpTimeout and the leader's term, every failure one of ours.
	etcd *store.Etcd

	// metrics are this engine's Prometheus series (see Collector).
	metrics *hold.Metrics

	// batch groups concurrent acquire and end-hold txns (group commit).
	batch txnbatch.Batcher

	// feeds makes the engine's etcd watches (feed.go).
	feeds feeds
	// waits wakes waiters: one etcd watch fanned out in process (hub.go).
	// rec records expiries from a watch of its own.
	waits *waiterHub
	rec   *recorder
	// space holds the storage caps' tallies and the alarm (space.go).
	space space
	// holds keeps the records of the holds this node granted, so their
	// releases need not read them (holdcache.go).
	holds holdCache
	// leaseClock knows how long the leases this node saw lately live, so
	// that an answer's expiry needs no round trip (hold/leaseclock.go).
	leaseClock hold.LeaseClock
	// fenced are the fenced values (fenced.go).
	fenced *fence.Registers
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
	e := &Engine{cli: cli, cfg: cfg, keys: store.Keys{Prefix: cfg.Prefix}, log: cfg.Logger, stop: stop, stopFunc: stopFunc}
	e.drain, e.drainFunc = context.WithCancel(stop)
	e.etcd = store.NewEtcd(cli, cfg.Embedded, cfg.OpTimeout, stop, func() { e.metrics.LeaderChanges.Inc() })
	e.batch = txnbatch.Batcher{
		KV: cli, Term: e.etcd.Term, Op: e.etcd.OpIn, Closed: e.stop.Err,
		Observe: func(n int) { e.metrics.TxnBatchSize.Observe(float64(n)) },
		Split:   func() { e.metrics.TxnBatchSplits.Inc() },
	}
	e.metrics = hold.NewMetrics(e.etcd.HasLeader)
	e.feeds = feeds{cli: cli, cfg: cfg, log: e.log, metrics: e.metrics}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.etcd.FollowLeader(e.keys.Recorder())
	}()
	e.newSpace()
	e.fenced = fence.New(fence.Config{
		Client: cli, Etcd: e.etcd, Keys: e.keys, MaxValueBytes: cfg.MaxFencedValueBytes,
		Reserve: e.reserveFenced, Recorded: e.metrics.Recorded,
	})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.runSpace()
	}()
	if err := e.etcd.WhileStarting(ctx, e.log, func() error { return e.loadFormat(ctx) }); err != nil {
		stopFunc()
		e.wg.Wait()
		return nil, err
	}
	rec, err := e.newRecorder(ctx)
	if err != nil {
		stopFunc()
		return nil, err
	}
	e.rec = rec
	// The hubs start at the revision the recorder's cursor was read at:
	// nobody waits on anything older.
	e.waits = e.newWaiterHub(rec.head + 1)
	runs := []func(context.Context){rec.run, e.waits.Feed.Run}
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
	for _, f := range e.watches() {
		select {
		case <-f.Opened():
		case <-octx.Done():
			if ctx.Err() != nil {
				e.Close()
				return nil, fmt.Errorf("open etcd watches: %w", ctx.Err())
			}
			e.log.Warn("etcd watch not open yet; the node is not ready until it is", "watch", f.Name())
		}
	}
	return e, nil
}

// feeds are the engine's etcd watches.
func (e *Engine) watches() []*watchfeed.Feed {
	return []*watchfeed.Feed{e.rec.feed, e.waits.Feed}
}

// errDeaf is wrapped in the ErrUnavailable that Ready returns while one of
// the engine's watches is not hearing etcd.
var errDeaf = errors.New("this node is not hearing etcd's watch")

// hearing returns an ErrUnavailable when one of the engine's watches has
// not heard from etcd within Config.WatchStallTimeout, and nil otherwise.
// Waiters are then not woken, or expiries not recorded,
// until the watch is open again.
func (e *Engine) hearing() error {
	for _, f := range e.watches() {
		if err := Heard(f); err != nil {
			return err
		}
	}
	return nil
}

// StopWaiting ends every acquire that is waiting in a queue (they return
// ErrClosed) and refuses new waits, so a shutdown can drain HTTP quickly.
// Everything else keeps working until Close.
func (e *Engine) StopWaiting() { e.drainFunc() }

// Close stops waits in progress (they return ErrClosed) and the background
// loops, then revokes this node's waiter lease. Calling it again is a no-op.
func (e *Engine) Close() error {
	e.closeMu.Do(func() {
		e.stopFunc()
		e.wg.Wait()
		e.waiters.close(e)
	})
	return nil
}

// Client returns the etcd client the engine uses.
func (e *Engine) Client() *clientv3.Client { return e.cli }

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// CheckLeader returns an ErrUnavailable at once when the embedded member
// knows no leader (EmbeddedMember.HasLeader), and nil otherwise.
func (e *Engine) CheckLeader() error { return e.etcd.CheckLeader() }
