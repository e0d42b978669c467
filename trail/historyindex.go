package trail

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// historyIndex copies every pending audit record into the indexed trail
// (histkeys.go), in revision order, exactly once, and bounds the trail by
// age and by count.
//
// One node at a time does it: with an embedded member, the node whose
// member leads etcd; with an external etcd every node tries. Every write
// it makes is one txn that compares meta/history's ModRevision with the
// one it last wrote, and writes the index entries, the deletions of the
// pending records they replace and the new meta/history together: two
// indexers never both index a record, and a crash leaves the index and
// its cursor in step.
//
// Retention: entries are put under bucket leases, a new one every
// Config.HistoryMaxEvents/historyBuckets events or HistoryRetention/24,
// whichever comes first. A bucket's lease outlives its newest event by
// HistoryRetention, so etcd drops events by age itself, a bucket at a
// time; when the trail holds more than HistoryMaxEvents, the index
// revokes the oldest bucket, and etcd drops it at once. Either way no
// request ever scans for old events.
type historyIndex struct {
	t *Trail

	// mu serialises the index's writes (indexing and trimming).
	mu      sync.Mutex
	meta    historyMeta
	metaRev int64 // ModRevision of meta/history as last read or written

	// indexed is the Indexed of the latest meta/history this node has
	// seen; changed is closed and replaced when it moves.
	notify  sync.Mutex
	indexed int64
	changed chan struct{}
	count   atomic.Int64 // meta.Events, for the metric
	// flush cuts the writer's wait for more events short (flushNow).
	flush chan struct{}
	// runs are the things' events being folded into chunks
	// (histchunks.go), by Keys.TrailName; runBytes their values' size.
	// Guarded by mu.
	runs     map[string]*run
	runBytes int
	// halted, a test hook (haltIndex), keeps this node from indexing, as
	// a trail writer that stopped; serving says serve is running, or about
	// to be if this node is active (run).
	halted, serving atomic.Bool
	// read is the revision through which this node's index has read its
	// watch and indexed what it brought, events or not: the cursor the
	// compactor moves meta's Indexed to (compactor.go); lastChange the last
	// change outside meta/ it read. Guarded by mu.
	read, lastChange int64
}

// historyMeta is the value of meta/history.
type historyMeta struct {
	// Indexed is the revision up to which every pending record is
	// indexed, bar the first Partial records of revision Indexed+1 (in
	// entry order), which a revision too large for one txn left done.
	Indexed int64 `json:"indexed"`
	Partial int   `json:"partial,omitempty"`
	// Events is how many events the trail holds.
	Events int64 `json:"events"`
	// Buckets are the leases the trail's entries live under, oldest
	// first.
	Buckets []historyBucket `json:"buckets,omitempty"`
	// Backfill, while set, is the scan indexing the pending records
	// written before there was an index (a data dir of an older baton),
	// or missed while compaction ran ahead of the index.
	Backfill *historyBackfill `json:"backfill,omitempty"`
}

type historyBucket struct {
	Lease   clientv3.LeaseID `json:"lease"`
	Opened  time.Time        `json:"opened"`
	Expires time.Time        `json:"expires"`
	Events  int64            `json:"events"`
}

type historyBackfill struct {
	// Through is the revision the scan indexes up to; the index resumes
	// watching after it.
	Through int64 `json:"through"`
	// After is the last pending key scanned.
	After string `json:"after,omitempty"`
}

// historyBuckets is how many buckets share HistoryMaxEvents: the count
// bound drops a 1/historyBuckets slice of the trail at a time.
const historyBuckets = 64

// indexChunk bounds the events of one index txn over an external etcd:
// each costs at most four ops (two puts, two deletes), and etcd's default
// --max-txn-ops is 128. An embedded member takes more (chunk).
const indexChunk = 30

// chunk is how many events one index txn holds.
func (x *historyIndex) chunk() int {
	if m := x.t.etcd.Member; m != nil {
		return max((m.MaxTxnOps()-1)/4, indexChunk)
	}
	return indexChunk
}

// errIndexMoved says another node wrote meta/history: this one reads it
// again before writing.
var errIndexMoved = errors.New("another node indexed the history meanwhile")

func newHistoryIndex(t *Trail) *historyIndex {
	return &historyIndex{t: t, changed: make(chan struct{}), flush: make(chan struct{}, 1)}
}

// events is the trail's size as last read or written (a metric).
func (x *historyIndex) events() float64 { return float64(x.count.Load()) }

// run indexes while this node is the one to, until stop.
func (x *historyIndex) run(stop context.Context) {
	t := x.t
	backoff := 100 * time.Millisecond
	for stop.Err() == nil {
		// serving is set before active is read: whoever sets halted and
		// then sees serving false knows that no serve runs, and that
		// none will start until halted is cleared.
		x.serving.Store(true)
		if !x.active() {
			x.serving.Store(false)
			select {
			case <-stop.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		err := x.serve(stop)
		x.serving.Store(false)
		if stop.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, errIndexMoved) {
			t.log.Warn("history index; retrying", "err", err, "in", backoff)
			select {
			case <-stop.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// active says whether this node indexes: the etcd leader's node, or any
// with an external etcd.
func (x *historyIndex) active() bool {
	m := x.t.etcd.Member
	return !x.halted.Load() && (m == nil || m.IsLeader())
}

// serve reads meta/history, finishes a backfill, then indexes what its
// watch brings until the node stops being the one to, or a write of
// another node's comes between.
func (x *historyIndex) serve(stop context.Context) error {
	ctx, cancel := context.WithCancel(stop)
	defer cancel()
	if err := x.load(ctx); err != nil {
		return err
	}
	if x.meta.Backfill != nil {
		if err := x.backfill(ctx); err != nil {
			return err
		}
	}
	var failed error
	var once sync.Once
	fail := func(err error) {
		once.Do(func() { failed = err })
		cancel()
	}
	// The watch hands pending records to a writer through q, so that
	// the index writes as many as came meanwhile in one go instead of a
	// txn per watch response (one per revision, when the watch keeps up).
	// meta/history, not the watch, is the cursor: after a failure serve
	// starts over from it.
	q := make(chan watched, indexQueue)
	key, end := x.t.keys.Revisions()
	f := x.t.feed("history", key, x.meta.Indexed+1, func(ctx context.Context, wr clientv3.WatchResponse) error {
		w := watched{recs: x.t.revisionEvents(wr, store.NowUTC()), through: watchedThrough(wr), change: x.t.lastChange(wr)}
		if len(w.recs) == 0 && w.through == 0 {
			return nil
		}
		select {
		case q <- w:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, x.compacted, clientv3.WithRange(end), clientv3.WithPrevKV())
	var wg sync.WaitGroup
	wg.Go(func() { x.supervise(ctx, fail) })
	wg.Go(func() { x.write(ctx, q, fail) })
	f.Run(ctx)
	cancel()
	wg.Wait()
	return failed
}

// indexQueue bounds the watch responses waiting for the writer; indexBatch
// is about how many events the writer takes at once.
const (
	indexQueue = 256
	indexBatch = 1024
)

// write indexes what q brings until ctx ends or a write fails. It waits
// up to indexDelay after the first record for more to come, so that a
// txn of the index carries many events even when the watch hands them
// over one revision at a time (one client acquiring and releasing): an
// index txn per event would double the raft entries of a lock cycle. A
// reader waiting for the index on this node (awaitIndexedThrough) cuts
// the wait short.
func (x *historyIndex) write(ctx context.Context, q <-chan watched, fail func(error)) {
	delay := time.NewTimer(indexDelay)
	defer delay.Stop()
	for {
		var w watched
		select {
		case w = <-q:
		case <-ctx.Done():
			return
		}
		recs, through, change := w.recs, w.through, w.change
		delay.Reset(indexDelay)
	more:
		for len(recs) > 0 && len(recs) < indexBatch {
			select {
			case w := <-q:
				recs, through, change = append(recs, w.recs...), max(through, w.through), max(change, w.change)
			case <-delay.C:
				break more
			case <-x.flush:
				break more
			case <-ctx.Done():
				return
			}
		}
		x.mu.Lock()
		var err error
		if len(recs) > 0 {
			err = x.index(ctx, recs)
		}
		if err == nil {
			x.read, x.lastChange = max(x.read, through), max(x.lastChange, change)
		}
		x.mu.Unlock()
		if err != nil {
			fail(err)
			return
		}
	}
}

// indexDelay is how long the index waits for more events before it
// writes those it has. A thing's events of one txn share one key of its
// index (histchunks.go), so the longer the wait, the fewer keys a busy
// thing's events take, and the fewer its folds delete later: with 64
// clients each cycling a lock of its own, 50 ms writes 2.7 keys a cycle
// in all where 10 ms wrote 3.5 (the lock itself needs 2). A history read
// on this node cuts the wait short (flushNow); a reader on another node
// may wait it out, on top of the write.
const indexDelay = 50 * time.Millisecond

// flushNow asks the writer to write what it holds without waiting out
// indexDelay.
func (x *historyIndex) flushNow() {
	select {
	case x.flush <- struct{}{}:
	default: // one is on its way
	}
}

// supervise trims by age and moves the cursor on a timer, and ends serve
// once this node is no longer the one to index.
func (x *historyIndex) supervise(ctx context.Context, fail func(error)) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !x.active() {
			fail(errIndexMoved)
			return
		}
		err := x.trim(ctx)
		if err == nil {
			// The cursor passes the changes without events too, so
			// that a compaction of them (an external etcd's, once idle)
			// is not taken for a loss by the index's next start.
			_, _, err = x.cursor(ctx)
		}
		if err != nil {
			if errors.Is(err, errIndexMoved) {
				fail(err)
				return
			}
			x.t.log.Warn("trim history", "err", err)
		}
	}
}

// commit writes ops and m as the new meta/history, if nobody else wrote
// it since metaRev. The caller holds mu.
func (x *historyIndex) commit(ctx context.Context, m historyMeta, ops []clientv3.Op) error {
	t := x.t
	key := t.keys.HistoryMeta()
	ops = append(ops, clientv3.OpPut(key, store.MustJSON(m)))
	octx, done := t.etcd.Op(ctx)
	defer done()
	resp, err := t.cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(key), "=", x.metaRev)).Then(ops...).Commit()
	if err != nil {
		return t.etcd.Err(ctx, "write history index", err)
	}
	if !resp.Succeeded {
		return errIndexMoved
	}
	x.meta, x.metaRev = m, resp.Header.Revision
	x.count.Store(m.Events)
	x.seen(m.Indexed)
	return nil
}

// seen notes that the index reached indexed.
func (x *historyIndex) seen(indexed int64) {
	x.notify.Lock()
	defer x.notify.Unlock()
	if indexed > x.indexed {
		x.indexed = indexed
		close(x.changed)
		x.changed = make(chan struct{})
	}
}

// index writes recs (watch responses', or one backfill page's) in
// txns of at most chunk events, skipping those meta says are done.
// The caller holds mu.
func (x *historyIndex) index(ctx context.Context, recs []pendingRecord) error {
	slices.SortFunc(recs, func(a, b pendingRecord) int {
		return cmp.Or(cmp.Compare(a.ev.Revision, b.ev.Revision), cmp.Compare(a.entry, b.entry))
	})
	keepTimesInOrder(x.t.keys, recs)
	m := x.meta
	recs = slices.DeleteFunc(recs, func(p pendingRecord) bool { return p.ev.Revision <= m.Indexed })
	if m.Partial > 0 {
		n := 0
		for n < len(recs) && n < m.Partial && recs[n].ev.Revision == m.Indexed+1 {
			n++
		}
		recs = recs[n:]
	}
	// The things whose events of one revision two txns share are not
	// folded in either (histchunks.go). Of a revision an earlier call
	// left partial, which of its things' events came before is not known
	// here: none of them is folded.
	var carried map[string]bool
	if m.Partial > 0 {
		carried = x.thingsAt(recs, 0, len(recs), m.Indexed+1)
	}
	for len(recs) > 0 {
		n := x.fit(recs)
		whole := n == len(recs) || recs[n].ev.Revision != recs[n-1].ev.Revision
		var shared map[string]bool
		if !whole {
			rev := recs[n-1].ev.Revision
			before, after := x.thingsAt(recs, 0, n, rev), x.thingsAt(recs, n, len(recs), rev)
			for prefix := range before {
				if after[prefix] {
					mapSet(&shared, prefix)
				}
			}
		}
		prev := carried
		split := func(prefix string) bool { return prev[prefix] || shared[prefix] }
		if err := x.indexChunk(ctx, recs[:n], whole, split); err != nil {
			return err
		}
		recs, carried = recs[n:], shared
	}
	return x.trimCount(ctx)
}

// thingsAt are the things (Keys.TrailName) with events of revision rev in
// recs[from:to].
func (x *historyIndex) thingsAt(recs []pendingRecord, from, to int, rev int64) map[string]bool {
	var out map[string]bool
	for _, p := range recs[from:to] {
		if p.ev.Revision == rev {
			mapSet(&out, x.t.keys.TrailName(p.ev.Kind, p.ev.Name))
		}
	}
	return out
}

func mapSet(m *map[string]bool, k string) {
	if *m == nil {
		*m = make(map[string]bool)
	}
	(*m)[k] = true
}

// indexChunk writes one txn of recs; whole says the chunk ends its last
// revision, and split which things' events are not to be folded.
func (x *historyIndex) indexChunk(ctx context.Context, recs []pendingRecord, whole bool, split func(prefix string) bool) error {
	m := x.meta
	m.Buckets = slices.Clone(m.Buckets)
	bucket, err := x.bucket(ctx, &m, len(recs))
	if err != nil {
		return err
	}
	if k := len(x.meta.Buckets); k > 0 && x.meta.Buckets[k-1].Lease != bucket && x.folds() {
		// The newest bucket is full: its runs will grow no more.
		if err := x.flushRuns(ctx, x.meta.Buckets[k-1].Lease); err != nil {
			return err
		}
	}
	last := recs[len(recs)-1].ev.Revision
	ops, plan := x.entryOps(recs, bucket, split, x.wholeSpan(recs, whole))
	switch {
	case whole:
		m.Indexed, m.Partial = last, 0
	case last == m.Indexed+1:
		m.Partial += len(recs)
	default:
		m.Indexed, m.Partial = last-1, 0
		for _, p := range recs {
			if p.ev.Revision == last {
				m.Partial++
			}
		}
	}
	m.Events += int64(len(recs))
	m.Buckets[len(m.Buckets)-1].Events += int64(len(recs))
	if err := x.commit(ctx, m, ops); err != nil {
		x.forgetRuns()
		return err
	}
	x.keepRuns(plan)
	for _, p := range recs {
		// No node wrote a derived expiry: the one that indexed it
		// counts it, once.
		if p.derived && (p.ev.Type == EventExpired || p.ev.Type == EventSessionExpired) {
			x.t.metrics.recorded(p.ev.Type, 1)
		}
	}
	return nil
}

// wholeSpan is the span of recs, one txn's events in revision and entry
// order, that a trail/ chunk may take (histkeys.go): their revisions but
// the first, if an earlier txn holds the rest of it, and the last, unless
// whole says the txn ends it. The caller holds mu.
func (x *historyIndex) wholeSpan(recs []pendingRecord, whole bool) trailSpan {
	if x.t.format < 4 {
		return trailSpan{}
	}
	lo, hi := 0, len(recs)
	if first := recs[0].ev.Revision; x.meta.Partial > 0 && first == x.meta.Indexed+1 {
		for lo < hi && recs[lo].ev.Revision == first {
			lo++
		}
	}
	if last := recs[hi-1].ev.Revision; !whole {
		for hi > lo && recs[hi-1].ev.Revision == last {
			hi--
		}
	}
	return trailSpan{lo, hi}
}

// entryOps index recs under bucket and delete the pending records they
// replace; trail/ takes them as trailOps says, and a thing's index as
// planNames says, or, with split nil, a key an event.
func (x *historyIndex) entryOps(recs []pendingRecord, bucket clientv3.LeaseID, split func(prefix string) bool, span trailSpan) ([]clientv3.Op, runPlan) {
	ops := make([]clientv3.Op, 0, 3*len(recs)+1)
	var things []nameEvents
	thing := make(map[string]int)
	values := make([]string, len(recs))
	for i, p := range recs {
		v := indexedValue(p)
		values[i] = v
		if p.ev.Type == EventGap {
			continue // about no thing: in trail/ only
		}
		prefix := x.t.keys.TrailName(p.ev.Kind, p.ev.Name)
		j, ok := thing[prefix]
		if !ok {
			j, thing[prefix] = len(things), len(things)
			things = append(things, nameEvents{prefix: prefix})
		}
		things[j].events = append(things[j].events, runEvent{rev: p.ev.Revision, entry: p.entry, value: v})
		for _, k := range p.deletes {
			ops = append(ops, clientv3.OpDelete(k))
		}
	}
	ops = x.t.trailOps(ops, recs, values, bucket, span)
	plan := x.planNames(things, bucket, len(ops), split)
	return append(ops, plan.ops...), plan
}

// trailSpan is a span of one index txn's events, recs[lo:hi].
type trailSpan struct{ lo, hi int }

// trailOps append to ops the trail/ keys of recs, in revision and entry
// order, with values[i] as recs[i]'s value, under bucket: the revisions of
// span as chunks of up to chunkEvents events, and each other revision,
// or one of more events, as a key of its own, under the entry of its
// first. The bound keeps what a page reads past its end about what it
// was before chunks, when a revision holds a batch's worth.
func (t *Trail) trailOps(ops []clientv3.Op, recs []pendingRecord, values []string, bucket clientv3.LeaseID, span trailSpan) []clientv3.Op {
	next := func(i int) int { // the end of i's revision
		j := i + 1
		for j < len(recs) && recs[j].ev.Revision == recs[i].ev.Revision {
			j++
		}
		return j
	}
	put := func(key, value string) {
		ops = append(ops, clientv3.OpPut(key, value, clientv3.WithLease(bucket)))
	}
	for i := 0; i < len(recs); {
		j := next(i)
		k := j // the chunk: recs[i:k]
		if i >= span.lo && j <= span.hi {
			for k < span.hi {
				n := next(k)
				if n > span.hi || n-i > chunkEvents {
					break
				}
				k = n
			}
		}
		if k == j {
			put(t.histKey(recs[i]), groupValue(values[i:j]))
			i = j
			continue
		}
		evs := make([]runEvent, 0, k-i)
		for n := i; n < k; n++ {
			evs = append(evs, runEvent{rev: recs[n].ev.Revision, entry: recs[n].entry, value: values[n]})
		}
		put(t.histKey(recs[i]), chunkValue(newestFirst(evs)))
		i = k
	}
	return ops
}
