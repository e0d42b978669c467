// Package watchfeed keeps one etcd watch open for as long as its owner
// lives: every response of a watch over a key range, handed in revision
// order and without a gap to one handler, across watch failures.
//
// Each of baton's purposes runs one feed (waking waiters, streaming audit
// events, indexing the trail), and everything else fans out from it in
// process. That is the point: etcd's client multiplexes every watch opened
// with the same metadata on one gRPC stream, and a burst of watches
// cancelled together (waiters timing out, event streams closing) can
// wedge that stream for good: the client's run loop blocks sending the
// cancels while the server's send loop blocks sending to the client
// (etcd-io/etcd#18879). A feed opens one watch on a stream of its own (the
// metadata names the feed and the watch's generation) and never cancels
// it while it works, so client churn never reaches etcd's watch streams.
//
// A watchdog guards against a stream that stops delivering anyway: after
// ProbeAfter of silence it asks etcd for a progress notification, which
// etcd answers at once on a stream whose watches have caught up; after
// Config.StallTimeout with nothing heard it declares the watch stalled,
// logs it, reports it (Config.OnRestart) and opens a new watch on a new
// stream from the next revision it has not handled.
package watchfeed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
)

// ProbeAfter is how long a feed stays silent before it asks etcd for a
// progress notification. Config.StallTimeout must be at least twice it.
const ProbeAfter = time.Second

// Config says what a feed watches and whom it tells.
type Config struct {
	Client *clientv3.Client
	// Name names the feed in logs, metrics and the watch's metadata.
	Name string
	// Key and Opts are the watched range and its options, but the
	// revision: the feed sets that.
	Key  string
	Opts []clientv3.OpOption
	// From is the first revision to hand over.
	From int64
	// RequireLeader ends the watch when its member loses the leader (a
	// remote etcd's), so that a partitioned member's silence is not
	// heard as news. An embedded member's owner learns of it otherwise.
	RequireLeader bool
	// StallTimeout is how long the watch may go unheard, while it asks for
	// progress notifications, before it is opened again.
	StallTimeout time.Duration
	// Handle gets each response, progress notifications included. The
	// feed moves past a response only when Handle returns nil; an error
	// ends the watch, which is opened again from the same response (after
	// a back-off), so Handle must be idempotent.
	Handle func(ctx context.Context, wr clientv3.WatchResponse) error
	// Compacted is called instead when the revisions from the next one
	// on were compacted away; it returns the revision to resume from.
	Compacted func(ctx context.Context, compactRev int64) (int64, error)
	// Log gets a line for each restart; nil means slog.Default().
	Log *slog.Logger
	// OnHearing is told when the feed starts or stops hearing etcd, and
	// OnRestart why the watch was opened again: "stalled", "error" or
	// "compacted". Either may be nil.
	OnHearing func(hearing bool)
	OnRestart func(reason string)
}

// A Feed is one supervised etcd watch. Run it once.
type Feed struct {
	cfg Config
	// next is the first revision not yet handled: a new watch starts
	// there. Only Run's goroutine touches it.
	next int64
	// hearing is true while the current watch has answered within the
	// stall timeout.
	hearing atomic.Bool
	// opened is closed when the feed first hears etcd.
	opened     chan struct{}
	openedOnce sync.Once
	// generation numbers the watches, so each opens a stream of its own:
	// a stalled stream may never close.
	generation atomic.Int64
	// deafened is the generation whose responses are dropped (Deafen).
	deafened atomic.Int64
	// poke asks the watch for a progress notification now.
	poke chan struct{}
}

// New returns a feed that watches from cfg.From once it runs.
func New(cfg Config) *Feed {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Feed{cfg: cfg, next: cfg.From, opened: make(chan struct{}), poke: make(chan struct{}, 1)}
}

// Name is the feed's name.
func (f *Feed) Name() string { return f.cfg.Name }

// Opened is closed when the feed first hears etcd.
func (f *Feed) Opened() <-chan struct{} { return f.opened }

// Hearing reports whether the feed's watch has answered within the stall
// timeout.
func (f *Feed) Hearing() bool { return f.hearing.Load() }

// Generation is how many watches the feed has opened.
func (f *Feed) Generation() int64 { return f.generation.Load() }

// Deafen drops every response of the watch open now, as a wedged stream
// would, until the watchdog replaces it; it returns that watch's
// generation. It is fault injection for tests.
func (f *Feed) Deafen() int64 {
	g := f.generation.Load()
	f.deafened.Store(g)
	return g
}

// RequestProgress asks etcd to tell the feed's watch how far it has
// caught up, without waiting for the answer.
func (f *Feed) RequestProgress() {
	select {
	case f.poke <- struct{}{}:
	default: // one is on its way
	}
}

func (f *Feed) setHearing(b bool) {
	if b {
		f.openedOnce.Do(func() { close(f.opened) })
	}
	if f.hearing.Swap(b) != b && f.cfg.OnHearing != nil {
		f.cfg.OnHearing(b)
	}
}

// Run keeps the feed's watch open until stop ends.
func (f *Feed) Run(stop context.Context) {
	backoff := 100 * time.Millisecond
	for stop.Err() == nil {
		reason, err := f.watch(stop)
		f.setHearing(false)
		if stop.Err() != nil {
			return
		}
		if reason == "" {
			backoff = 100 * time.Millisecond
			continue
		}
		if f.cfg.OnRestart != nil {
			f.cfg.OnRestart(reason)
		}
		f.cfg.Log.Warn("etcd watch restarted", "watch", f.cfg.Name, "reason", reason, "err", err, "from", f.next)
		select {
		case <-time.After(backoff):
		case <-stop.Done():
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// watch runs one watch until it fails, and says why: "stalled", "error"
// or "compacted", or "" when it should be opened again at once.
func (f *Feed) watch(stop context.Context) (reason string, err error) {
	cfg := &f.cfg
	gen := f.generation.Add(1)
	ctx, cancel := context.WithCancel(stop)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "baton-watch", fmt.Sprintf("%s-%d", cfg.Name, gen))
	if cfg.RequireLeader {
		ctx = clientv3.WithRequireLeader(ctx)
	}
	opts := append([]clientv3.OpOption{clientv3.WithRev(f.next), clientv3.WithCreatedNotify(), clientv3.WithProgressNotify()}, cfg.Opts...)
	wch := cfg.Client.Watch(ctx, cfg.Key, opts...)

	tick := time.NewTicker(ProbeAfter / 2)
	defer tick.Stop()
	heard := time.Now()
	var probing atomic.Bool
	probe := func() {
		if !probing.CompareAndSwap(false, true) {
			return
		}
		// RequestProgress blocks while the stream is wedged: never in
		// the loop.
		go func() {
			defer probing.Store(false)
			pctx, done := context.WithTimeout(ctx, cfg.StallTimeout)
			defer done()
			_ = cfg.Client.RequestProgress(pctx)
		}()
	}
	for {
		select {
		case <-stop.Done():
			return "", nil
		case now := <-tick.C:
			silent := now.Sub(heard)
			if silent >= cfg.StallTimeout {
				return "stalled", fmt.Errorf("nothing heard from etcd for %s", silent.Round(time.Millisecond))
			}
			if silent >= ProbeAfter {
				probe()
			}
		case <-f.poke:
			probe()
		case wr, ok := <-wch:
			if !ok {
				return "error", errors.New("watch channel closed")
			}
			if f.deafened.Load() == gen {
				continue
			}
			f.setHearing(true)
			if wr.CompactRevision != 0 {
				next, err := cfg.Compacted(stop, wr.CompactRevision)
				if err != nil {
					return "compacted", err
				}
				f.next = next
				return "compacted", fmt.Errorf("revisions from %d compacted away (compact revision %d)", f.next, wr.CompactRevision)
			}
			if err := wr.Err(); err != nil {
				return "error", err
			}
			if err := cfg.Handle(stop, wr); err != nil {
				return "error", err
			}
			if n := len(wr.Events); n > 0 {
				f.next = wr.Events[n-1].Kv.ModRevision + 1
			} else if wr.IsProgressNotify() {
				// etcd sends one only to a watch that has caught up: every
				// event up to the header's revision has been sent.
				f.next = max(f.next, wr.Header.Revision+1)
			}
			// The handler's time counts as heard: a busy handler is not a
			// deaf watch.
			heard = time.Now()
		}
	}
}
