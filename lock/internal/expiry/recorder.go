package expiry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/watchfeed"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
)

// recorder writes the end event of every hold that etcd ended by itself:
// a lease that expired, or was revoked with its session. Release and
// revoke write their events in their own transactions; a lone DELETE of a
// lock key is one nobody recorded. Every node runs a recorder; the end key
// of a hold is created only if absent, so each hold ends exactly once in
// the audit trail however many nodes watch.
//
// It reads the whole prefix through a feed of its own, so no waiter
// shares its watch. The feed moves past a response only once
// every expiry in it is written, and the cursor saved for a restart is
// never past a response not yet written: an expiry in flight when the
// node stops is recorded after the restart, once.
type Recorder struct {
	c    *core.Engine
	Feed *watchfeed.Feed
	// head is the revision the cursor was read at.
	Head  int64
	saved int64 // cursor last written to etcd; only the saver touches it
	// done is the last revision handled that was not a cursor write.
	// Saving it, not the feed's next revision, keeps the cursor from
	// chasing its own writes (and, with several nodes, each other's) for
	// ever.
	done atomic.Int64
}

// recorderSaveEvery is how often the recorder saves its cursor, if it
// moved (Config.RecorderSaveEvery overrides it). A cursor that did not
// move is not written: an idle cluster writes nothing.
const recorderSaveEvery = 5 * time.Second

// recordRetry is how long the recorder waits before writing an expiry
// again after etcd failed it.
const recordRetry = time.Second

// New reads the cluster's recorder cursor through c, waiting out a member
// that is still starting, and returns a recorder that resumes from it
// once Run.
func New(ctx context.Context, c *core.Engine) (r *Recorder, err error) {
	err = c.Etcd.WhileStarting(ctx, c.Log, func() error {
		r, err = readRecorderCursor(ctx, c)
		return err
	})
	return r, err
}

// readRecorderCursor makes the recorder of the cursor etcd holds now.
func readRecorderCursor(ctx context.Context, c *core.Engine) (*Recorder, error) {
	octx, done := c.Etcd.Op(ctx)
	defer done()
	resp, err := c.Cli.Get(octx, c.Keys.Recorder())
	if err != nil {
		return nil, c.Etcd.Err(ctx, "read recorder cursor", err)
	}
	// A first start has nothing older to record: it saves the current
	// revision as its cursor at the first tick.
	r := &Recorder{c: c, Head: resp.Header.Revision}
	from := resp.Header.Revision + 1
	r.done.Store(resp.Header.Revision)
	if len(resp.Kvs) > 0 {
		// Resume where the cluster last got to: expiries while no node
		// was watching (an external etcd outliving baton) get recorded.
		if n, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err == nil && n+1 < from {
			from, r.saved = n+1, n
			r.done.Store(n)
		}
	}
	// It needs the end records (audit/), the deletes of lock keys
	// (locks/) with the holds they ended, and of lease markers and session
	// records (trail/derive.go): the trail's range, which holds none of the
	// history index's writes.
	key, end := c.Keys.Revisions()
	r.Feed = c.Feeds.Feed("recorder", key, from, r.handleResponse, r.compacted, clientv3.WithRange(end), clientv3.WithPrevKV())
	return r, nil
}

// Run records expiries until stop ends, saving the cursor as it moves
// (Config.RecorderSaveEvery), and once more as it returns.
func (r *Recorder) Run(stop context.Context) {
	saved := make(chan struct{})
	go func() {
		defer close(saved)
		every := r.c.Cfg.RecorderSaveEvery
		if every <= 0 {
			every = recorderSaveEvery
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				r.saveCursor()
			case <-stop.Done():
				return
			}
		}
	}()
	r.Feed.Run(stop)
	<-saved
	r.saveCursor()
}

// handleResponse records the expiries of one watch response, retrying
// until they are written or the engine stops; only then does the cursor
// move past it.
func (r *Recorder) handleResponse(stop context.Context, wr clientv3.WatchResponse) error {
	if len(wr.Events) == 0 {
		return nil
	}
	for {
		err := r.handle(stop, wr.Events)
		if err == nil {
			break
		}
		if stop.Err() != nil {
			return fmt.Errorf("record expiries: %w", hold.ErrClosed)
		}
		r.c.Log.Warn("record expiries; retrying", "err", err)
		select {
		case <-time.After(recordRetry):
		case <-stop.Done():
			return fmt.Errorf("record expiries: %w", hold.ErrClosed)
		}
	}
	for _, ev := range wr.Events {
		if !r.c.Keys.IsBookkeeping(ev.Kv.Key) && ev.Kv.ModRevision > r.done.Load() {
			r.done.Store(ev.Kv.ModRevision)
		}
	}
	return nil
}

// compacted scans the audit trail for holds that ended unrecorded while
// the history the recorder needed was compacted, and resumes after the
// revision it scanned at.
func (r *Recorder) compacted(stop context.Context, compactRev int64) (int64, error) {
	r.c.Log.Warn("expiry recorder fell behind compaction; scanning the audit trail", "compact_revision", compactRev)
	rev, err := r.reconcile(stop)
	if err != nil {
		return 0, fmt.Errorf("reconcile audit trail: %w", err)
	}
	return rev + 1, nil
}

// handle records the lone lock deletions among events: those whose
// revision holds no end record of the same lock. A txn that ends a hold
// writes its end record beside the delete; etcd's own deletes (a lease
// that ran out or was revoked) come in a revision of their own. A derived
// hold (store.Holder.Derived) ends in the trail without it: of its lone
// delete the recorder only starts the lock-delay, if its lease ended.
func (r *Recorder) handle(ctx context.Context, events []*clientv3.Event) error {
	c := r.c
	type at struct {
		rev  int64
		name string
	}
	ended := map[at]bool{}
	for _, ev := range events {
		if ev.Type == mvccpb.PUT {
			if name, _, ok := c.Keys.EndRecordOf(ev.Kv); ok {
				ended[at{ev.Kv.ModRevision, name}] = true
			}
		}
	}
	lone := map[int64][]string{} // revision → names of the locks it deleted
	var revs []int64
	for evs := range store.ByRevision(events) {
		if err := r.delayExpired(ctx, evs); err != nil {
			return err
		}
	}
	for _, ev := range events {
		if ev.Type != mvccpb.DELETE {
			continue
		}
		name, ok := strings.CutPrefix(string(ev.Kv.Key), c.Keys.Locks())
		if !ok || ended[at{ev.Kv.ModRevision, name}] {
			continue // not a lock, or released or revoked in the same txn
		}
		if ev.PrevKv != nil {
			if bytes.Contains(ev.PrevKv.Value, store.DerivedField) {
				continue // a derived hold, released: the trail's
			}
			hr, err := store.DecodeHolder(ev.PrevKv)
			if err != nil || hr.Derived {
				continue
			}
			detail := fmt.Sprintf("lease ended; etcd deleted the lock at revision %d", ev.Kv.ModRevision)
			if err := r.recordEnd(ctx, name, ev.PrevKv.ModRevision, hr, detail); err != nil {
				return err
			}
			continue
		}
		if lone[ev.Kv.ModRevision] == nil {
			revs = append(revs, ev.Kv.ModRevision)
		}
		lone[ev.Kv.ModRevision] = append(lone[ev.Kv.ModRevision], name)
	}
	for _, rev := range revs {
		if err := r.RecordLone(ctx, rev, lone[rev]); err != nil {
			return err
		}
	}
	return nil
}

// delayExpired starts the lock-delay of each derived hold with one that
// evs, one revision's events, show ended with its lease: what recordEnd
// does for a hold with pending records, bar the event, which the trail
// derives.
func (r *Recorder) delayExpired(ctx context.Context, evs []*clientv3.Event) error {
	c := r.c
	ended := c.Keys.LeasesEnded(evs)
	if len(ended) == 0 {
		return nil
	}
	for _, ev := range evs {
		name, ok := strings.CutPrefix(string(ev.Kv.Key), c.Keys.Locks())
		if !ok || ev.Type != mvccpb.DELETE || ev.PrevKv == nil || !ended[ev.PrevKv.Lease] {
			continue
		}
		hr, err := store.DecodeHolder(ev.PrevKv)
		if err != nil || !hr.Derived || !hr.Guarded() {
			continue
		}
		typ := store.EventExpired
		if hr.Session != "" {
			typ = store.EventSessionExpired
		}
		_, guard := c.HoldEnd(name, ev.PrevKv.ModRevision, hr, hr.Event(name, typ, store.NowUTC()))
		octx, done := c.Etcd.Op(ctx)
		_, err = c.Cli.Txn(octx).Then(guard...).Commit()
		done()
		if err != nil {
			return c.Etcd.Err(ctx, "start lock-delay", err)
		}
	}
	return nil
}

// readsPerTxn bounds the reads of one txn (etcd's --max-txn-ops is 128
// by default).
const readsPerTxn = 100

// recordLone records the ends of the holds of names that etcd deleted at
// rev, reading each hold as it was just before.
func (r *Recorder) RecordLone(ctx context.Context, rev int64, names []string) error {
	c := r.c
	for len(names) > 0 {
		n := min(len(names), readsPerTxn)
		var t store.Txn
		reads := make([]store.Ref, n)
		for i, name := range names[:n] {
			reads[i] = t.OnSuccess(clientv3.OpGet(c.Keys.Lock(name), clientv3.WithRev(rev-1)))
		}
		octx, done := c.Etcd.Op(ctx)
		resp, err := c.Cli.Txn(octx).Then(t.Then...).Commit()
		done()
		if errors.Is(err, rpctypes.ErrCompacted) {
			// The holds are compacted away: the trail's acquired records
			// still name them, and reconcile records whichever ended
			// unrecorded.
			_, err = r.reconcile(ctx)
			return err
		}
		if err != nil {
			return c.Etcd.Err(ctx, "read expired holds", err)
		}
		for i, name := range names[:n] {
			kvs := reads[i].KVs(resp)
			if len(kvs) == 0 {
				continue
			}
			hr, err := store.DecodeHolder(kvs[0])
			if err != nil {
				c.Log.Warn("skip undecodable lock record", "lock", name, "err", err)
				continue
			}
			if hr.Derived {
				continue // its end is the trail's to derive
			}
			detail := fmt.Sprintf("lease ended; etcd deleted the lock at revision %d", rev)
			if err := r.recordEnd(ctx, name, kvs[0].ModRevision, hr, detail); err != nil {
				return err
			}
		}
		names = names[n:]
	}
	return nil
}

// recordEnd writes the expired (or session_expired) end of a hold whose
// key etcd deleted, unless its end is already recorded: its event and its
// lock-delay, as every end does (HoldEnd).
//
// The hold's acquired record is there, at its first version, until the
// hold's end is recorded (over it, in storage format 2, or beside it, in
// format 1) and the history index has taken the end in (it then deletes
// the record): a recorder that comes late to an end already recorded or
// indexed finds it ended or gone, and writes nothing.
func (r *Recorder) recordEnd(ctx context.Context, name string, token int64, hr store.Holder, detail string) error {
	akey, ekey := r.c.Keys.Acquired(name, hr.Hold), r.c.Keys.End(name, hr.Hold)
	open := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(akey), "=", token),
		clientv3.Compare(clientv3.Version(akey), "=", 1),
		clientv3.Compare(clientv3.CreateRevision(ekey), "=", 0),
	}
	octx, done := r.c.Etcd.Op(ctx)
	cur, err := r.c.Cli.Txn(octx).If(open...).Commit()
	done()
	if err != nil {
		return r.c.Etcd.Err(ctx, "read end event", err)
	}
	if !cur.Succeeded {
		return nil // ended already, or indexed: nothing to write
	}
	typ := store.EventExpired
	if hr.Session != "" {
		typ = store.EventSessionExpired
	}
	now := store.NowUTC()
	ev := hr.Event(name, typ, now) // Credential: the Acquirer's, as no request ends it
	ev.Token, ev.Detail = token, detail
	event, guard := r.c.HoldEnd(name, token, hr, ev)
	then := append(event, guard...)
	octx, done = r.c.Etcd.Op(ctx)
	defer done()
	resp, err := r.c.Cli.Txn(octx).If(open...).Then(then...).Commit()
	if err == nil && resp.Succeeded {
		r.c.Metrics.RecordedOf(name, typ, 1) // else another node wrote it between our read and this txn
	}
	return err
}

// saveCursor records how far the recorder got, so a restart resumes there.
// Several nodes share the key; it only moves forward. It writes only when
// done moved past what this node saved, and done never counts baton's
// bookkeeping writes (isBookkeeping: this cursor's, the history index's),
// so an idle node writes nothing once its cursor is saved, however many
// nodes share the key: another node's cursor write does not move this
// node's done either, nor does the index's answer to a change.
func (r *Recorder) saveCursor() {
	cur := r.done.Load()
	if cur <= r.saved {
		return
	}
	c := r.c
	ctx, done := c.Etcd.CleanupCtx()
	defer done()
	key, val := c.Keys.Recorder(), store.PadToken(cur)
	_, err := c.Cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, val)).
		Else(clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(key), "<", val)}, []clientv3.Op{clientv3.OpPut(key, val)}, nil)).
		Commit()
	if err != nil {
		c.Log.Debug("save recorder cursor", "err", err)
		return
	}
	r.saved = cur
}

// reconcile finds holds whose acquire is recorded but whose end is not,
// though the lock no longer holds them, and records them as expired. It
// is needed only when the watch history the recorder needed was compacted.
func (r *Recorder) reconcile(ctx context.Context) (int64, error) {
	c := r.c
	end := clientv3.GetPrefixRangeEnd(c.Keys.Audit())
	start := c.Keys.Audit()
	var rev int64
	type open struct {
		name, hold string
		token      int64
		ev         store.Event
	}
	var opens []open
	lastOpen := false // the last key seen was an "a" still in opens
	for {
		octx, done := c.Etcd.Op(ctx)
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.Cli.Get(octx, start, opts...)
		done()
		if err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				return 0, err
			}
			return 0, c.Etcd.Err(ctx, "scan audit trail", err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			rest := strings.TrimPrefix(string(kv.Key), c.Keys.Audit())
			parts := strings.Split(rest, "/")
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[2] == "a" && kv.Version > 1:
				lastOpen = false // ended: its end is written over it
			case parts[2] == "a":
				ev, _ := store.DecodeEvent(kv)
				opens = append(opens, open{name: parts[0], hold: parts[1], token: kv.CreateRevision, ev: ev})
				lastOpen = true
			case parts[2] == "e":
				// Keys sort a hold's "a" just before its "e".
				if o := len(opens) - 1; lastOpen && opens[o].name == parts[0] && opens[o].hold == parts[1] {
					opens = opens[:o]
				}
				lastOpen = false
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	for _, o := range opens {
		kv, err := c.GetLock(ctx, o.name)
		if err == nil && kv.ModRevision == o.token {
			continue // still held
		}
		if err != nil && !errors.Is(err, hold.ErrNotHeld) {
			return 0, err
		}
		hr := hold.HolderOf(o.ev, o.hold)
		if err := r.recordEnd(ctx, o.name, o.token, hr, "ended while no baton node was recording; time is when it was noticed"); err != nil {
			return 0, err
		}
	}
	return rev, nil
}
