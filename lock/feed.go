package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
)

// A feed is one supervised etcd watch that lives as long as the engine:
// every response of a watch over a key range, handed in revision order and
// without a gap to one handler, across watch failures.
//
// The engine runs three, one per purpose: the expiry recorder's, the one
// that wakes waiters, and the one that streams audit events (hub.go).
// Everything else fans out from them in process. That is the point: etcd's
// client multiplexes every watch opened with the same metadata on one gRPC
// stream, and a burst of watches cancelled together (waiters timing out,
// event streams closing) can wedge that stream for good: the client's run
// loop blocks sending the cancels while the server's send loop blocks
// sending to the client (etcd-io/etcd#18879). A feed opens one watch on a
// stream of its own (the metadata names the feed) and never cancels it
// while it works, so client churn never reaches etcd's watch streams.
//
// A watchdog guards against a stream that stops delivering anyway: after
// probeAfter of silence it asks etcd for a progress notification, which
// etcd answers at once on a stream whose watches have caught up; after
// Config.WatchStallTimeout with nothing heard it declares the watch
// stalled, logs it, counts it (baton_watch_restarts_total) and opens a new
// watch on a new stream from the next revision it has not handled. While
// a feed is not hearing etcd the engine is not ready (Engine.Ready).
type feed struct {
	e    *Engine
	name string // "recorder", "waiters" or "events": logs, metrics, metadata
	key  string
	opts []clientv3.OpOption // the range and options, but the revision
	// next is the first revision not yet handled: a new watch starts there.
	next int64
	// handle gets each response, progress notifications included. The
	// feed moves past a response only when handle returns nil; an error
	// ends the watch, which is opened again from the same response (after
	// a back-off), so handle must be idempotent.
	handle func(ctx context.Context, wr clientv3.WatchResponse) error
	// compacted is called instead when the revisions from next on were
	// compacted away; it returns the revision to resume from.
	compacted func(ctx context.Context, compactRev int64) (int64, error)

	// hearing is true while the current watch has answered within the
	// stall timeout.
	hearing atomic.Bool
	// opened is closed when the feed first hears etcd.
	opened     chan struct{}
	openedOnce sync.Once
	// generation numbers the watches, so each opens a stream of its own:
	// a stalled stream may never close.
	generation atomic.Int64
	// deafen is a test hook (export_test.go): the watch of this
	// generation drops every response, as a wedged stream would.
	deafen atomic.Int64
	// poke asks the watch for a progress notification now (see
	// requestProgress); nil for a feed nobody pokes.
	poke chan struct{}
}

// requestProgress asks etcd to tell the feed's watch how far it has
// caught up, without waiting for the answer.
func (f *feed) requestProgress() {
	select {
	case f.poke <- struct{}{}:
	default: // one is on its way
	}
}

func (f *feed) setHearing(b bool) {
	if b {
		f.openedOnce.Do(func() { close(f.opened) })
	}
	if f.hearing.Swap(b) != b {
		v := 0.0
		if b {
			v = 1
		}
		f.e.metrics.watchHearing.WithLabelValues(f.name).Set(v)
	}
}

// heard returns an ErrUnavailable while the feed is not hearing etcd.
func (f *feed) heard() error {
	if !f.hearing.Load() {
		return fmt.Errorf("%w: %w: its %s watch is being re-established", ErrUnavailable, errDeaf, f.name)
	}
	return nil
}

// probeAfter is how long a feed stays silent before it asks etcd for a
// progress notification.
const probeAfter = time.Second

// run keeps the feed's watch open until stop ends.
func (f *feed) run(stop context.Context) {
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
		f.e.metrics.watchRestarts.WithLabelValues(f.name, reason).Inc()
		f.e.log.Warn("etcd watch restarted", "watch", f.name, "reason", reason, "err", err, "from", f.next)
		select {
		case <-time.After(backoff):
		case <-stop.Done():
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// watch runs one watch until it fails, and says why: "stalled", "error"
// or "compacted" (the restart reasons of baton_watch_restarts_total), or
// "" when it should be opened again at once.
func (f *feed) watch(stop context.Context) (reason string, err error) {
	e := f.e
	gen := f.generation.Add(1)
	ctx, cancel := context.WithCancel(stop)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "baton-watch", fmt.Sprintf("%s-%d", f.name, gen))
	if e.cfg.Embedded == nil {
		// Remote etcd: a member that loses its leader ends the watch, so
		// the feed does not hear a partitioned member's silence as news.
		ctx = clientv3.WithRequireLeader(ctx)
	}
	opts := append([]clientv3.OpOption{clientv3.WithRev(f.next), clientv3.WithCreatedNotify(), clientv3.WithProgressNotify()}, f.opts...)
	wch := e.cli.Watch(ctx, f.key, opts...)

	tick := time.NewTicker(probeAfter / 2)
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
			pctx, done := context.WithTimeout(ctx, e.cfg.WatchStallTimeout)
			defer done()
			_ = e.cli.RequestProgress(pctx)
		}()
	}
	for {
		select {
		case <-stop.Done():
			return "", nil
		case now := <-tick.C:
			silent := now.Sub(heard)
			if silent >= e.cfg.WatchStallTimeout {
				return "stalled", fmt.Errorf("nothing heard from etcd for %s", silent.Round(time.Millisecond))
			}
			if silent >= probeAfter {
				probe()
			}
		case <-f.poke:
			probe()
		case wr, ok := <-wch:
			if !ok {
				return "error", errors.New("watch channel closed")
			}
			if f.deafen.Load() == gen {
				continue
			}
			f.setHearing(true)
			if wr.CompactRevision != 0 {
				next, err := f.compacted(stop, wr.CompactRevision)
				if err != nil {
					return "compacted", err
				}
				f.next = next
				return "compacted", fmt.Errorf("revisions from %d compacted away (compact revision %d)", f.next, wr.CompactRevision)
			}
			if err := wr.Err(); err != nil {
				return "error", err
			}
			if err := f.handle(stop, wr); err != nil {
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
