package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/lease"
	"go.etcd.io/raft/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// flaky is an in-process client to a real member that refuses some calls
// the way etcd does while leadership moves, as v3rpc hands those errors to
// the in-process client: the next drops txns that write a lock key fail
// with raft's dropped proposal, and the next notPrimary keep-alives with
// the lessor's not-primary. Each refusal leaves etcd untouched, as etcd's
// do.
type flaky struct {
	drops, notPrimary atomic.Int32
	// refused counts the refusals made.
	refused atomic.Int32
	// hold, when set, holds the commits of txns that write a lock key
	// until it is closed; held counts the commits it holds.
	hold atomic.Pointer[chan struct{}]
	held atomic.Int32
	// late, when set, makes the next txn that writes a lock key fail with
	// an unknown outcome (its caller's context canceled) and commit only
	// once late is closed, as a proposal that reaches the leader after
	// its caller gave up.
	late atomic.Pointer[chan struct{}]
	// stuckQueue, while set, fails every txn that deletes a queue entry
	// with a request timeout, as a member cut off from its quorum does;
	// stuck counts the txns it failed.
	stuckQueue atomic.Bool
	stuck      atomic.Int32
}

func newFlakyEngine(t *testing.T, cfg lock.Config) (*lock.Engine, *flaky, *clientv3.Client) {
	t.Helper()
	m := testetcd.Start(t)
	cli := v3client.New(m.Etcd().Server)
	t.Cleanup(func() { cli.Close() })
	f := &flaky{}
	cli.KV = &flakyKV{KV: cli.KV, f: f}
	cli.Lease = &flakyLease{Lease: cli.Lease, f: f}
	return holdtest.StartEngineOn(t, cli, cfg), f, m.Client()
}

// take uses one of n's refusals, if any is left.
func (f *flaky) take(n *atomic.Int32) bool {
	for {
		left := n.Load()
		if left <= 0 {
			return false
		}
		if n.CompareAndSwap(left, left-1) {
			f.refused.Add(1)
			return true
		}
	}
}

type flakyKV struct {
	clientv3.KV
	f *flaky
}

func (k *flakyKV) Txn(ctx context.Context) clientv3.Txn {
	return &flakyTxn{Txn: k.KV.Txn(ctx), ctx: ctx, f: k.f, kv: k.KV}
}

type flakyTxn struct {
	clientv3.Txn
	ctx    context.Context
	f      *flaky
	kv     clientv3.KV
	writes bool // it writes a lock key, in either branch or a nested txn

	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

func (t *flakyTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = append(t.cmps, cs...)
	t.Txn = t.Txn.If(cs...)
	return t
}
func (t *flakyTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.writes = t.writes || writesLock(ops)
	t.then = append(t.then, ops...)
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *flakyTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.writes = t.writes || writesLock(ops)
	t.els = append(t.els, ops...)
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *flakyTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.f.stuckQueue.Load() && (deletesQueue(t.then) || deletesQueue(t.els)) {
		t.f.stuck.Add(1)
		return nil, clientv3.ContextError(t.ctx, status.Error(codes.Unavailable, "etcdserver: request timed out"))
	}
	if t.writes && t.f.take(&t.f.drops) {
		return nil, clientv3.ContextError(t.ctx, status.Error(codes.Unknown, raft.ErrProposalDropped.Error()))
	}
	if l := t.f.late.Load(); t.writes && l != nil && t.f.late.CompareAndSwap(l, nil) {
		go func() {
			<-*l
			t.kv.Txn(context.Background()).If(t.cmps...).Then(t.then...).Else(t.els...).Commit()
		}()
		return nil, context.Canceled
	}
	if h := t.f.hold.Load(); t.writes && h != nil {
		t.f.held.Add(1)
		<-*h
	}
	return t.Txn.Commit()
}

// deletesQueue reports whether ops delete a queue entry at their top
// level, as a waiter that leaves the queue does.
func deletesQueue(ops []clientv3.Op) bool {
	for _, op := range ops {
		if op.IsDelete() && strings.HasPrefix(string(op.KeyBytes()), holdtest.Prefix+"queue/") {
			return true
		}
	}
	return false
}

func writesLock(ops []clientv3.Op) bool {
	for _, op := range ops {
		if op.IsTxn() {
			_, then, els := op.Txn()
			if writesLock(then) || writesLock(els) {
				return true
			}
		}
		if (op.IsPut() || op.IsDelete()) && strings.HasPrefix(string(op.KeyBytes()), holdtest.Prefix+"locks/") {
			return true
		}
	}
	return false
}

type flakyLease struct {
	clientv3.Lease
	f *flaky
}

func (l *flakyLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	if l.f.take(&l.f.notPrimary) {
		return nil, clientv3.ContextError(ctx, status.Error(codes.Unknown, lease.ErrNotPrimary.Error()))
	}
	return l.Lease.KeepAliveOnce(ctx, id)
}

// A write that etcd dropped unapplied is sent again within the request:
// acquire, renew and release succeed through two refusals each, and a
// third in a row answers ErrUnavailable, with nothing left behind.
func TestUnavailable_DroppedWritesAreSentAgain(t *testing.T) {
	e, f, raw := newFlakyEngine(t, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)

	f.drops.Store(2)
	l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "x", Owner: "a"})
	if err != nil {
		t.Fatalf("acquire through two dropped proposals: %v", err)
	}
	f.notPrimary.Store(2)
	if _, err := e.Renew(ctx, "x", l.Token); err != nil {
		t.Fatalf("renew through two not-primary keep-alives: %v", err)
	}
	f.drops.Store(2)
	if err := e.Release(ctx, "x", l.Token); err != nil {
		t.Fatalf("release through two dropped proposals: %v", err)
	}
	if got := f.refused.Load(); got != 6 {
		t.Fatalf("%d refusals made, want 6", got)
	}

	f.drops.Store(3)
	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "x", Owner: "b"})
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("acquire through three dropped proposals: %v, want ErrUnavailable", err)
	}
	if keys := holdtest.KeysUnder(t, raw, holdtest.Prefix+"locks/"); len(keys) != 0 {
		t.Fatalf("locks held after the refused acquire: %v", keys)
	}
	f.notPrimary.Store(3)
	if _, err := e.Renew(ctx, "x", 1); !errors.Is(err, lock.ErrNotHeld) && !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("renew: %v", err)
	}
}

// A batch is one raft proposal: when etcd drops it, every member is sent
// again and served, none fails for it.
func TestUnavailable_DroppedBatchServesEveryMember(t *testing.T) {
	e, f, _ := newFlakyEngine(t, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	lock.SetTxnSlots(e, 1)
	// Warm up the history bucket's lease, so that the acquires below
	// queue for the batch only.
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "warm", Owner: "w"})
	if err := e.Release(ctx, "warm", l.Token); err != nil {
		t.Fatal(err)
	}

	const n = 6
	release := lock.HoldTxnSlots(e)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = e.Acquire(ctx, lock.AcquireRequest{Name: fmt.Sprintf("b%d", i), Owner: owner(i)})
		}()
	}
	poll.Until(t, 10*time.Second, "every acquire queued for the batch", func() bool { return lock.QueuedTxns(e) == n })
	f.drops.Store(1)
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("acquire b%d after its batch was dropped: %v", i, err)
		}
	}
	if got := f.refused.Load(); got != 1 {
		t.Fatalf("%d refusals made, want the batch's one", got)
	}
}

// A waiter keeps its queued lease (the one its grant names) alive through
// keep-alives that fail as they do during a leader change, and is granted
// the lock when the holder releases it.
func TestUnavailable_QueuedLeaseOutlivesFailedKeepAlives(t *testing.T) {
	e, f, raw := newFlakyEngine(t, lock.DefaultConfig())
	// The holder is on an engine of its own, so that the refused
	// keep-alives are the waiter's alone.
	holderEngine := holdtest.StartEngineOn(t, raw, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	held := holdtest.MustAcquire(t, holderEngine, lock.AcquireRequest{Name: "q", Owner: "holder", TTL: 30 * time.Second})

	f.notPrimary.Store(3)
	type result struct {
		l   *lock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		// TTL 3s: the queued lease is refreshed every second.
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "q", Owner: "waiter", TTL: 3 * time.Second, Wait: 30 * time.Second})
		done <- result{l, err}
	}()
	poll.Until(t, 20*time.Second, "the waiter's keep-alives refused three times", func() bool {
		select {
		case r := <-done:
			t.Fatalf("the wait ended before the release: %v", r.err)
		default:
		}
		return f.refused.Load() == 3
	})
	if err := holderEngine.Release(ctx, "q", held.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if r.l.Token <= held.Token {
		t.Fatalf("waiter's token %d, want above the holder's %d", r.l.Token, held.Token)
	}
}

// A request taken into a batch learns the batch's outcome even when its
// own context ends first (the batch may go out in a new term, after the
// caller's op context ended with the old one): told "unknown" instead, a
// waiter would leave the queue before the batch put its entry.
func TestUnavailable_ACallerWhoseBatchIsInFlightGetsItsOutcome(t *testing.T) {
	e, f, raw := newFlakyEngine(t, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	lock.SetTxnSlots(e, 1)
	release := lock.HoldTxnSlots(e)
	gone, cancel := context.WithCancel(ctx)
	type result struct {
		resp *clientv3.TxnResponse
		err  error
	}
	left, stays := make(chan result, 1), make(chan result, 1)
	go func() {
		resp, err := lock.Txn(gone, e, nil, []clientv3.Op{clientv3.OpPut(holdtest.Prefix+"locks/gone", "v")}, nil)
		left <- result{resp, err}
	}()
	go func() {
		resp, err := lock.Txn(ctx, e, nil, []clientv3.Op{clientv3.OpPut(holdtest.Prefix+"locks/stays", "v")}, nil)
		stays <- result{resp, err}
	}()
	poll.Until(t, 10*time.Second, "both requests queued", func() bool { return lock.QueuedTxns(e) == 2 })
	hold := make(chan struct{})
	f.hold.Store(&hold)
	release()
	poll.Until(t, 10*time.Second, "the batch's commit under way", func() bool { return f.held.Load() == 1 })
	cancel()
	poll.Consistently(t, 300*time.Millisecond, "the caller that left waits for its batch", func() bool { return len(left) == 0 })
	close(hold)
	for what, ch := range map[string]chan result{"left": left, "stayed": stays} {
		r := <-ch
		if r.err != nil || !r.resp.Succeeded {
			t.Errorf("caller that %s: %+v, %v; want its batch's success", what, r.resp, r.err)
		}
	}
	if got := holdtest.KeysUnder(t, raw, holdtest.Prefix+"locks/"); fmt.Sprint(got) != "[gone stays]" {
		t.Fatalf("keys %v, want both written", got)
	}
}

// A waiter whose enqueueing txn has an unknown outcome answers
// ErrUnavailable and leaves; when that txn is applied only afterwards (a
// proposal can reach the leader after later ones), its queue entry is
// swept, so that it does not block the waiters behind it.
func TestUnavailable_AQueueEntryPutAfterItsWaiterLeftIsSwept(t *testing.T) {
	cfg := lock.DefaultConfig()
	cfg.OpTimeout = time.Second
	e, f, raw := newFlakyEngine(t, cfg)
	holderEngine := holdtest.StartEngineOn(t, raw, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	held := holdtest.MustAcquire(t, holderEngine, lock.AcquireRequest{Name: "g", Owner: "holder", TTL: 30 * time.Second})

	late := make(chan struct{})
	f.late.Store(&late)
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "g", Owner: "gone", Wait: 10 * time.Second})
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("acquire whose txn has an unknown outcome: %v, want ErrUnavailable", err)
	}
	if keys := holdtest.KeysUnder(t, raw, holdtest.Prefix+"queue/g/"); len(keys) != 0 {
		t.Fatalf("queue entries before the late txn: %v", keys)
	}
	close(late)
	poll.Until(t, 10*time.Second, "the late txn put the departed waiter's entry", func() bool {
		return len(holdtest.KeysUnder(t, raw, holdtest.Prefix+"queue/g/")) == 1
	})
	poll.Until(t, 10*time.Second, "the entry swept", func() bool {
		return len(holdtest.KeysUnder(t, raw, holdtest.Prefix+"queue/g/")) == 0
	})
	// The queue is not blocked: the next waiter is served on release.
	type result struct {
		l   *lock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "g", Owner: "next", Wait: 10 * time.Second})
		done <- result{l, err}
	}()
	poll.Until(t, 10*time.Second, "the next waiter queued", func() bool {
		return len(holdtest.KeysUnder(t, raw, holdtest.Prefix+"queue/g/")) == 1
	})
	if err := holderEngine.Release(ctx, "g", held.Token); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.l.Owner != "next" {
		t.Fatalf("next waiter: %+v, %v", r.l, r.err)
	}
}

// TestUnavailable_AWaitThatCannotLeaveTheQueueIsNoRefusal: when a wait
// runs out but etcd does not confirm the removal of its queue entry, a
// release may yet grant the entry, so the answer is ErrUnavailable (the
// outcome is unknown), never ErrHeld; and the own lease the entry names
// is revoked, so such a grant cannot outlive the answer.
func TestUnavailable_AWaitThatCannotLeaveTheQueueIsNoRefusal(t *testing.T) {
	cfg := lock.DefaultConfig()
	cfg.OpTimeout = time.Second
	e, f, raw := newFlakyEngine(t, cfg)
	holderEngine := holdtest.StartEngineOn(t, raw, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	for _, kind := range []string{"lock", "election"} {
		name := "stuck-" + kind
		var token int64
		var err error
		f.stuckQueue.Store(true)
		if kind == "lock" {
			token = holdtest.MustAcquire(t, holderEngine, lock.AcquireRequest{Name: name, Owner: "holder", TTL: 30 * time.Second}).Token
			_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: "waiter", TTL: 30 * time.Second, Wait: 300 * time.Millisecond})
		} else {
			l, _, cerr := holderEngine.Campaign(ctx, lock.CampaignRequest{Name: name, Candidate: "leader", TTL: 30 * time.Second})
			if cerr != nil {
				t.Fatal(cerr)
			}
			token = l.Token
			_, _, err = e.Campaign(ctx, lock.CampaignRequest{Name: name, Candidate: "waiter", TTL: 30 * time.Second, Wait: 300 * time.Millisecond})
		}
		f.stuckQueue.Store(false)
		if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrHeld) || errors.Is(err, lock.ErrElectionHeld) {
			t.Fatalf("%s: a wait whose queue entry could not be removed answered %v; want ErrUnavailable", kind, err)
		}
		key := name
		if kind == "election" {
			key = "~election:" + name
		}
		// The release hands the lock to the entry if it is still there,
		// under its revoked lease: no hold outlives the answer.
		if kind == "lock" {
			err = holderEngine.Release(ctx, name, token)
		} else {
			err = holderEngine.Resign(ctx, name, token)
		}
		if err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, kind+": nobody holds it, and the entry is swept", func() bool {
			return len(holdtest.KeysUnder(t, raw, holdtest.Prefix+"locks/"+key)) == 0 && len(holdtest.KeysUnder(t, raw, holdtest.Prefix+"queue/"+key+"/")) == 0
		})
	}
}

// TestUnavailable_AnEntryLeftBehindIsSweptOnceEtcdAnswersAgain: a waiter
// that could not leave the queue leaves its entry to a sweep; while etcd
// keeps failing, the sweep tries again, so once etcd answers the entry is
// gone and the waiters behind it are served, with the node still up.
func TestUnavailable_AnEntryLeftBehindIsSweptOnceEtcdAnswersAgain(t *testing.T) {
	cfg := lock.DefaultConfig()
	cfg.OpTimeout = time.Second
	e, f, raw := newFlakyEngine(t, cfg)
	holderEngine := holdtest.StartEngineOn(t, raw, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	held := holdtest.MustAcquire(t, holderEngine, lock.AcquireRequest{Name: "sw", Owner: "holder", TTL: 30 * time.Second})
	f.stuckQueue.Store(true)
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "sw", Owner: "stuck", TTL: 30 * time.Second, Wait: 300 * time.Millisecond})
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("a wait that could not leave: %v, want ErrUnavailable", err)
	}
	// The leave, then the sweep's first try, fail.
	poll.Until(t, 10*time.Second, "the sweep tried once", func() bool { return f.stuck.Load() >= 2 })
	f.stuckQueue.Store(false)
	poll.Until(t, 10*time.Second, "the entry swept once etcd answers", func() bool {
		return len(holdtest.KeysUnder(t, raw, holdtest.Prefix+"queue/sw/")) == 0
	})
	next := acquireAsync(ctx, holderEngine, lock.AcquireRequest{Name: "sw", Owner: "next", Wait: 10 * time.Second})
	queued(t, holderEngine, "sw", 1)
	if err := holderEngine.Release(ctx, "sw", held.Token); err != nil {
		t.Fatal(err)
	}
	if r := <-next; r.err != nil || r.l.Owner != "next" {
		t.Fatalf("the waiter behind: %+v, %v", r.l, r.err)
	}
}
