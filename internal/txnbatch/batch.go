package txnbatch

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/lease"
)

// Each txn is a raft proposal of its own: an apply, and a wait
// for the WAL's fsync. etcd txns nest, so independent txns that arrive
// together can be sent as one outer txn whose Then holds one
// OpTxn(cmps, then, els) per request: one raft entry, one apply pass, one
// fsync wait, and each request still gets its own outcome (the nested
// txn's Succeeded and Responses).
//
// There is no timer: while fewer than txnsInFlight txns are in flight a
// request is sent at once, alone and as a plain txn, exactly as without
// the batcher. Only requests that arrive while every slot is busy wait,
// and they wait for a slot, not for a clock: when a txn in flight
// completes, everything queued meanwhile goes out together. An idle node
// pays nothing; a busy one sends fewer, larger txns.
//
// What a batch member sees (etcd's apply, server/etcdserver/txn): every
// compare of the whole outer txn is evaluated first, against the state
// before the batch; reads in the branches then run in order and see the
// writes of members before them. Members never write a common key (etcd
// refuses a txn that writes one key twice, nested siblings included), so
// a member's compares and its reads of keys it writes agree. The acquire
// and end-hold txns of lock's different lock names touch disjoint keys but
// for a session's tallies (lock's MaxLocksPerSession): a capped acquire
// reads the "released" tally that a release in its session may write in
// the same batch. It then sees that release or not, as it would for a
// release racing it in a txn of its own; the cap's check tolerates either.

// txnsInFlight is how many txns (lone requests or batches) one Batcher has
// in flight before further requests queue for the next batch. With one, a
// busy node alternates between one txn in flight and one batch gathering,
// which gives the largest batches and the least CPU per cycle; two or four
// let etcd pipeline proposals but split the same load into more, smaller
// txns (docs/PERFORMANCE.md has the measurements). etcd's raft loop persists one Ready at a time
// anyway, so a request held back behind the txn in flight loses little:
// the apply and answer of that txn, not a whole fsync. That little is on
// every handover's path under contention, so a release that hands a lock
// over may go beside the txn in flight (TxnUrgent), one at a time.
const txnsInFlight = 1

// etcd's limits on one txn request, with the defaults of both the
// embedded member and an etcd server (--max-txn-ops, --max-request-bytes).
const (
	// etcdMaxTxnOps is checked level by level with one shared budget: a
	// txn nested at depth d may have at most MaxTxnOps minus the op counts
	// of the levels above it (v3rpc checkTxnRequest). So a batch of n
	// requests fits if n plus the deepest nested cost of any member is at
	// most this.
	etcdMaxTxnOps = 128
	// maxBatchBytes keeps a batch far below MaxRequestBytes (1.5 MiB).
	// Each request is estimated from its keys and values; an acquire
	// carries at most 4 KiB of metadata, so a batch of the largest holds
	// about a hundred, and a typical one is cut by the op budget first.
	maxBatchBytes = 512 << 10
	// opOverhead is an upper bound on the protobuf framing of one op or
	// compare beyond its key, range end and value.
	opOverhead = 32
)

// Batcher sends txns through KV, alone while a slot is free, and queues
// the requests that arrive while every slot is busy for the next batch.
// Set its fields before the first Txn; it is safe for concurrent use.
type Batcher struct {
	// KV sends the txns.
	KV clientv3.KV
	// Term is the current term: a context that ends at the next leader
	// change (or when the caller's engine closes). A batch is sent only
	// for callers of the current term, in that term.
	Term func() context.Context
	// Op bounds one etcd call made with ctx in term (lock's Engine.opIn).
	Op func(ctx, term context.Context) (context.Context, context.CancelFunc)
	// Closed is non-nil once the owner of the Batcher is closed: queued
	// requests then fail with it, unsent.
	Closed func() error
	// Observe, if set, is told the number of requests in every txn sent
	// (1 for a request sent alone).
	Observe func(requests int)
	// Split, if set, is called when etcd refused a batch as a whole and
	// its requests were sent one by one.
	Split func()
	// Limit overrides the number of txns in flight when positive (tests).
	Limit int

	mu       sync.Mutex
	inFlight int
	// urgent is set while a TxnUrgent request is out beside the slots.
	urgent bool
	// queue holds requests waiting for a slot, oldest first. It is empty
	// whenever a slot is free: every completion that frees a slot sends
	// what is queued.
	queue []*txnCall
	// blocked is next's scratch: hashes of the keys written by the
	// requests it has looked at for the batch being formed.
	blocked map[uint64]struct{}
}

// txnCall is one request: a txn, and where its answer goes.
type txnCall struct {
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
	// ctx is the caller's, and term the Batcher's term when it called:
	// a batch is sent only for callers whose ctx and term
	// have not ended, in that term, and never outlives the earliest
	// deadline of its callers.
	ctx, term context.Context

	// Set by shape when the request is queued.
	writes []uint64 // hashes of the keys it puts or deletes, either branch
	ranged bool     // it deletes a range: only ever sent alone
	cost   int      // op budget its deepest nesting path needs
	size   int      // estimated bytes

	done chan struct{} // closed when resp and err are set
	resp *clientv3.TxnResponse
	err  error
}

func (b *Batcher) slots() int {
	if b.Limit > 0 {
		return b.Limit
	}
	return txnsInFlight
}

// Txn commits If(cmps).Then(then).Else(els) and returns its response as
// etcd would for that txn alone: Succeeded, the Responses of the branch
// taken, and a Header whose Revision is that of the commit (which, in a
// batch, other requests' writes share). A request still queued when ctx
// ends is withdrawn and never sent; a lone txn whose ctx ends may or may
// not have been applied, as with any txn.
//
// A request already taken into a batch is answered by the batch, even
// after ctx ends: with its outcome, or with ctx's error if the batch left
// it out unsent because ctx had ended (sendBatch). The batch runs under an
// op context of its own, so that one caller leaving does not cancel it
// for the others; that context ends with its callers' term and by their
// earliest deadline, so no caller waits past its own bound. Answering
// "unknown" while the request is still to be sent would let the caller
// clean up before the batch applies it: a waiter would leave the queue
// before the batch put its queue entry, and the entry, under the node's
// waiter lease, would block the lock's queue for as long as the node runs.
func (b *Batcher) Txn(ctx context.Context, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	if b.takeSlot() {
		return b.txnAlone(ctx, cmps, then, els)
	}
	// Every slot is busy: this request waits for the next batch. Its shape
	// is worked out outside the lock, and only on this path, so a lone
	// request pays nothing for it.
	c := &txnCall{cmps: cmps, then: then, els: els, ctx: ctx, term: b.Term(), done: make(chan struct{})}
	c.shape()
	b.mu.Lock()
	if b.inFlight < b.slots() {
		// A slot freed meanwhile, so the queue is empty: go alone.
		b.inFlight++
		b.mu.Unlock()
		return b.txnAlone(ctx, cmps, then, els)
	}
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.resp, c.err
	case <-ctx.Done():
	}
	if b.withdraw(c) {
		return nil, ctx.Err()
	}
	<-c.done // sendBatch answers every call it took, within its op context
	return c.resp, c.err
}

// TxnUrgent is Txn for a request that others wait on: a release that
// hands a lock to its next holder, where every handover waits for it.
// While nothing is queued it goes out at once as a txn of its own, beside
// the txn in flight, instead of waiting for that txn's commit; one such
// request at a time, so that it never splits a busy node's batches. Under
// load (requests queued) it queues as Txn does.
func (b *Batcher) TxnUrgent(ctx context.Context, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	b.mu.Lock()
	now := !b.urgent
	if now {
		b.urgent = true
	}
	b.mu.Unlock()
	if !now {
		return b.Txn(ctx, cmps, then, els)
	}
	defer func() {
		b.mu.Lock()
		b.urgent = false
		b.mu.Unlock()
	}()
	b.observe(1)
	return b.KV.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
}

// takeSlot takes a free txn slot if there is one.
func (b *Batcher) takeSlot() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight < b.slots() {
		b.inFlight++
		return true
	}
	return false
}

// txnAlone sends one request as a plain txn in a slot already taken, and
// gives the slot back.
func (b *Batcher) txnAlone(ctx context.Context, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	defer b.txnDone()
	b.observe(1)
	return b.KV.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
}

// txnDone gives a slot back, and fills it at once with a batch of what
// queued meanwhile. What next leaves in the queue (requests writing a key
// that an earlier one writes, or beyond a batch's limits) goes out at the
// same time in further batches that take no slot: it may not share the
// first batch's txn, but it need not wait for it either. Requests on one
// key then race each other as they would without batching (concurrent
// requests have no order to keep), instead of going one txn after
// another, which costs more raft entries per grant and fewer handovers
// under contention (docs/PERFORMANCE.md). Batches are sent from
// goroutines of their own: the caller whose txn just completed has its
// own answer to return.
func (b *Batcher) txnDone() {
	b.mu.Lock()
	b.inFlight--
	first := b.next()
	var more [][]*txnCall
	if len(first) > 0 {
		b.inFlight++
		for len(b.queue) > 0 {
			more = append(more, b.next())
		}
	}
	b.mu.Unlock()
	if len(first) > 0 {
		go func() {
			defer b.txnDone()
			b.sendBatch(first)
		}()
	}
	for _, calls := range more {
		go b.sendBatch(calls)
	}
}

// withdraw removes c from the queue, and reports whether it was still
// there (so it was never sent).
func (b *Batcher) withdraw(c *txnCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if q == c {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return true
		}
	}
	return false
}

// next takes the next batch off the queue, oldest first. A request that
// writes a key written by a request looked at before it (taken or not)
// stays queued, and so do the requests after it that write the same
// keys: two writes of one key never share a batch, and the next batches
// take them oldest first. A batch is also cut at etcd's op budget and at
// maxBatchBytes. The first request always fits, so a non-empty
// queue gives a non-empty batch.
func (b *Batcher) next() []*txnCall {
	if len(b.queue) == 0 {
		return nil
	}
	if b.blocked == nil {
		b.blocked = make(map[uint64]struct{})
	}
	clear(b.blocked)
	var (
		batch   []*txnCall
		rest    = b.queue[:0]
		bytes   int
		maxCost int
		full    bool
	)
	for _, c := range b.queue {
		if full {
			rest = append(rest, c)
			continue
		}
		if c.ranged {
			// A range delete may cover any key: it goes in a txn of its
			// own, and next leaves what follows it for the next batch.
			if len(batch) == 0 {
				batch = append(batch, c)
			} else {
				rest = append(rest, c)
			}
			full = true
			continue
		}
		fits := len(batch)+1+max(maxCost, c.cost) <= etcdMaxTxnOps && bytes+c.size <= maxBatchBytes
		if !fits && len(batch) > 0 {
			rest = append(rest, c)
			full = true
			continue
		}
		conflict := false
		for _, h := range c.writes {
			if _, ok := b.blocked[h]; ok {
				conflict = true
				break
			}
		}
		for _, h := range c.writes {
			b.blocked[h] = struct{}{}
		}
		if conflict {
			rest = append(rest, c)
			continue
		}
		batch = append(batch, c)
		bytes += c.size
		maxCost = max(maxCost, c.cost)
	}
	// rest reuses the queue's array; clear the tail so that sent calls
	// are not kept alive by it.
	clear(b.queue[len(rest):])
	b.queue = rest
	return batch
}

// sendBatch commits calls, taken by next, in one txn and answers each.
func (b *Batcher) sendBatch(calls []*txnCall) {
	// Callers that left while their request waited are answered unsent,
	// and so are those of an earlier term: their op contexts end with it,
	// asynchronously (context.AfterFunc), and a batch sent in this term
	// would outlive them. Only one term is current, so the batch runs in
	// the term of every caller it carries, and ends when theirs do.
	term := b.Term()
	calls = live(calls, term)
	if len(calls) == 0 {
		return
	}
	base := context.Background()
	if d, ok := earliestDeadline(calls); ok {
		var cancel context.CancelFunc
		base, cancel = context.WithDeadline(base, d)
		defer cancel()
	}
	ctx, done := b.Op(base, term)
	defer done()
	if err := b.Closed(); err != nil {
		// Closed while these waited. Their op context ends with the
		// owner too, but asynchronously (context.AfterFunc), and etcd
		// may still take a proposal whose context has just ended: fail
		// them here, unsent, as the owner's other calls fail now.
		answerAll(calls, err)
		return
	}
	b.observe(len(calls))
	if len(calls) == 1 {
		// A plain txn is smaller, and etcd's errors then are this
		// request's own.
		c := calls[0]
		c.resp, c.err = b.KV.Txn(ctx).If(c.cmps...).Then(c.then...).Else(c.els...).Commit()
		close(c.done)
		return
	}
	ops := make([]clientv3.Op, len(calls))
	for i, c := range calls {
		ops[i] = clientv3.OpTxn(c.cmps, c.then, c.els)
	}
	resp, err := b.KV.Txn(ctx).Then(ops...).Commit()
	switch {
	case err == nil:
		for i, c := range calls {
			r := (*clientv3.TxnResponse)(resp.Responses[i].GetResponseTxn())
			r.Header = resp.Header
			c.resp = r
			close(c.done)
		}
	case refusedWhole(err):
		// etcd refused the batch before writing anything: one member's
		// put on a lease that is gone (a session or lease that just
		// expired) fails the whole txn, as would a limit we misjudged.
		// Each member alone gets its own answer: the others succeed.
		if b.Split != nil {
			b.Split()
		}
		b.sendEach(calls, base, term)
	default:
		// A timeout, no leader, a closed owner: what each member would
		// have got alone, and the outcome is as unknown for each. A
		// dropped proposal (a raft entry refused whole, before any
		// member was applied) is for each member's caller to send again
		// (store.Etcd.RetryNotApplied), in the batches that follow, so it
		// fails none of them by itself.
		answerAll(calls, err)
	}
}

// live answers, unsent, the calls whose caller left or whose term is not
// term, and returns the others.
func live(calls []*txnCall, term context.Context) []*txnCall {
	kept := calls[:0]
	for _, c := range calls {
		err := c.ctx.Err()
		if err == nil && c.term != term {
			err = context.Canceled
		}
		if err != nil {
			c.err = err
			close(c.done)
			continue
		}
		kept = append(kept, c)
	}
	return kept
}

// answerAll answers every call with err.
func answerAll(calls []*txnCall, err error) {
	for _, c := range calls {
		c.err = err
		close(c.done)
	}
}

// sendEach sends every call as a txn of its own, at once, in term.
func (b *Batcher) sendEach(calls []*txnCall, base, term context.Context) {
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cdone := b.Op(base, term)
			c.resp, c.err = b.KV.Txn(cctx).If(c.cmps...).Then(c.then...).Else(c.els...).Commit()
			cdone()
			close(c.done)
		}()
	}
	wg.Wait()
}

func (b *Batcher) observe(n int) {
	if b.Observe != nil {
		b.Observe(n)
	}
}

// earliestDeadline is the earliest deadline among the contexts of calls,
// if any has one.
func earliestDeadline(calls []*txnCall) (time.Time, bool) {
	var (
		first time.Time
		ok    bool
	)
	for _, c := range calls {
		if d, has := c.ctx.Deadline(); has && (!ok || d.Before(first)) {
			first, ok = d, true
		}
	}
	return first, ok
}

// refusedWhole reports whether etcd refused a txn as a whole, before
// applying any of it, for a reason that may lie with one member: a put on
// a lease that does not exist (checked at apply, on the branches taken),
// or the request checks of etcd's gRPC layer (which the in-process client
// passes through as well).
func refusedWhole(err error) bool {
	if errors.Is(err, lease.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return true
	}
	switch rpctypes.ErrorDesc(err) {
	case rpctypes.ErrTooManyOps.Error(), rpctypes.ErrDuplicateKey.Error(), rpctypes.ErrRequestTooLarge.Error():
		return true
	}
	return false
}

// shape works out what next needs to know of c.
func (c *txnCall) shape() {
	c.writes = c.writes[:0]
	c.cost, c.size = shapeTxn(c, c.cmps, c.then, c.els)
}

// writeSeed hashes written keys for next's conflict check. A collision
// only makes two requests that could have shared a batch go in two.
var writeSeed = maphash.MakeSeed()

// shapeTxn returns the op budget that one txn needs (its own op count plus
// its deepest nested txn's) and its estimated size, and collects the keys
// it writes into c.
func shapeTxn(c *txnCall, cmps []clientv3.Cmp, then, els []clientv3.Op) (cost, size int) {
	own := max(len(cmps), len(then), len(els))
	for i := range cmps {
		pc := cmps[i].GetCompare()
		size += opOverhead + len(pc.Key) + len(pc.RangeEnd) + len(pc.GetValue())
	}
	deepest := 0
	for _, ops := range [2][]clientv3.Op{then, els} {
		for _, op := range ops {
			size += opOverhead + len(op.KeyBytes()) + len(op.RangeBytes()) + len(op.ValueBytes())
			switch {
			case op.IsTxn():
				ncmps, nthen, nels := op.Txn()
				ncost, nsize := shapeTxn(c, ncmps, nthen, nels)
				deepest = max(deepest, ncost)
				size += nsize
			case op.IsDelete() && len(op.RangeBytes()) > 0:
				c.ranged = true
			case op.IsPut(), op.IsDelete():
				c.writes = append(c.writes, maphash.Bytes(writeSeed, op.KeyBytes()))
			}
		}
	}
	return own + deepest, size
}

// Hooks for tests of the Batcher's owner: they take its slots as txns in
// flight would, so that a test decides what queues and when it goes out,
// instead of racing for it.

// Hold takes every txn slot, once the txns in flight (a batch split into
// lone txns answers its callers before it gives its slot back) are done,
// so the requests that follow queue. release gives them back, which sends
// what queued as batches.
func (b *Batcher) Hold() (release func()) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		if b.inFlight == 0 {
			break
		}
		b.mu.Unlock()
		if time.Now().After(deadline) {
			panic("txnbatch: txns still in flight after 10s")
		}
		time.Sleep(time.Millisecond) // polling a condition, not waiting for time
	}
	n := b.slots()
	b.inFlight += n
	b.mu.Unlock()
	return func() {
		for range n {
			b.txnDone()
		}
	}
}

// Queued is how many requests wait for a batch.
func (b *Batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// SetLimit sets how many txns are kept in flight before requests queue.
func (b *Batcher) SetLimit(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Limit = n
}
