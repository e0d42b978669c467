// Package quota keeps the counts that credentials' quotas are checked
// against (auth.Quotas, through hold.Caller.Quotas): the holds and the
// sessions of each credential across the cluster, and the acquires each
// one has waiting on this node.
//
// Holds and sessions outlive the requests that made them, and any node
// may have made them, so a Tally counts them from etcd: it reads the holds
// (locks/) and the sessions (sessions/) once, then follows one watch of
// them, adding a put that creates a key and taking away a delete, by the
// credential the record names. It starts at the first check that needs
// it, so a node whose credentials have no such quota keeps no watch and
// reads nothing.
//
// The counts are as fresh as the watch: a create is counted when the
// watch delivers it, usually within a millisecond. So that a client
// cannot outrun that, the node counts its own creates at once, until the
// watch has passed the create's revision (lagging); a create whose
// revision is unknown (etcd left the outcome unknown) is counted so for a
// second. Other nodes' creates within the watch's delay can overshoot a
// quota by as much.
// Waiting acquires live in the node that serves them: they are counted
// here exactly, per node.
package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
)

// What a quota counts.
const (
	Holds    = "holds"
	Sessions = "sessions"
	Waiters  = "waiters"
)

// Tally counts holds and sessions by credential (from etcd) and waiting
// acquires (on this node). It is safe for concurrent use.
type Tally struct {
	c *core.Engine

	startOnce sync.Once
	loaded    chan struct{} // closed once the first read is counted

	mu sync.Mutex
	// counted are the watch's counts, up to revision progress; lagging
	// this node's creates the watch has not passed yet; inflight creates
	// under way and, for Waiters, the acquires waiting now.
	counted, inflight map[key]int
	lagging           map[key][]lag
	progress          int64
}

type key struct{ cred, what string }

// lag is one of this node's creates that the watch may not have counted:
// until the watch passes rev, or, with rev unknown (0), until until.
type lag struct {
	n     int
	rev   int64
	until time.Time
}

// lagUnknown is how long a create of unknown revision counts as lagging:
// far longer than the watch's usual delay.
const lagUnknown = time.Second

// pending is how many of k's creates lag; t.mu is held.
func (t *Tally) pending(k key, now time.Time) int {
	n := 0
	for _, l := range t.lagging[k] {
		if l.rev > t.progress || l.rev == 0 && now.Before(l.until) {
			n += l.n
		}
	}
	return n
}

// prune drops the lagging creates the watch has passed, or that timed
// out; t.mu is held.
func (t *Tally) prune(now time.Time) {
	for k, ls := range t.lagging {
		ls = slices.DeleteFunc(ls, func(l lag) bool { return l.rev != 0 && l.rev <= t.progress || l.rev == 0 && !now.Before(l.until) })
		if len(ls) == 0 {
			delete(t.lagging, k)
		} else {
			t.lagging[k] = ls
		}
	}
}

// New is the tally of the engine c. Nothing runs until a check needs it.
func New(c *core.Engine) *Tally {
	return &Tally{c: c, loaded: make(chan struct{}), counted: map[key]int{}, lagging: map[key][]lag{}, inflight: map[key]int{}}
}

// Done ends a reservation: created says whether it created what it was
// for, at revision rev (0: unknown, as when etcd left the outcome unknown).
type Done func(created bool, rev int64)

// Reserve checks that cred has room for n more of what (Holds, Sessions,
// Waiters) under limit, and counts them as under way until done is called
// (a wait's done is its end: it creates nothing). Past the quota it fails
// with a *hold.LimitError wrapping hold.ErrQuotaExceeded. A limit of 0 or
// less is no quota: it counts nothing and never fails.
func (t *Tally) Reserve(ctx context.Context, cred, what string, n, limit int) (done Done, err error) {
	if limit <= 0 || cred == "" {
		return func(bool, int64) {}, nil
	}
	if what != Waiters {
		if err := t.Ready(ctx); err != nil {
			return nil, err
		}
	}
	k := key{cred, what}
	t.mu.Lock()
	have := t.counted[k] + t.pending(k, time.Now()) + t.inflight[k]
	if have+n > limit {
		t.mu.Unlock()
		return nil, exceeded(cred, what, have, limit)
	}
	t.inflight[k] += n
	t.mu.Unlock()
	var once sync.Once
	return func(created bool, rev int64) {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.inflight[k] -= n
			clean(t.inflight, k)
			// A create the watch has passed is counted already.
			if created && what != Waiters && (rev == 0 || rev > t.progress) {
				t.lagging[k] = append(t.lagging[k], lag{n: n, rev: rev, until: time.Now().Add(lagUnknown)})
			}
		})
	}, nil
}

// ReserveAcquire counts an acquire against its caller's quotas (hold.Caller
// in ctx): holds for the n holds it may create and, when it may wait, a
// waiting acquire. done ends the reservation, given whether it created
// its holds. Without a caller or quotas it counts nothing.
func (t *Tally) ReserveAcquire(ctx context.Context, n int, waits bool) (done Done, err error) {
	caller, ok := hold.CallerFrom(ctx)
	if !ok || caller.Quotas == (hold.Quotas{}) {
		return func(bool, int64) {}, nil
	}
	endHolds, err := t.Reserve(ctx, caller.Credential, Holds, n, caller.Quotas.Holds)
	if err != nil {
		return nil, err
	}
	endWait := Done(func(bool, int64) {})
	if waits {
		if endWait, err = t.Reserve(ctx, caller.Credential, Waiters, 1, caller.Quotas.Waiters); err != nil {
			endHolds(false, 0)
			return nil, err
		}
	}
	return func(created bool, rev int64) {
		endHolds(created, rev)
		endWait(false, 0)
	}, nil
}

// ReserveSession counts a new session against its caller's quota.
func (t *Tally) ReserveSession(ctx context.Context) (done Done, err error) {
	caller, _ := hold.CallerFrom(ctx)
	return t.Reserve(ctx, caller.Credential, Sessions, 1, caller.Quotas.Sessions)
}

// Count is what the tally counts of cred's what now, for tests and the
// dashboard.
func (t *Tally) Count(cred, what string) int {
	k := key{cred, what}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counted[k] + t.pending(k, time.Now()) + t.inflight[k]
}

func exceeded(cred, what string, have, limit int) error {
	retry := 5 * time.Second // holds and sessions end by release or expiry
	if what == Waiters {
		retry = time.Second
	}
	return &hold.LimitError{
		Err: hold.ErrQuotaExceeded, Quota: what, Limit: limit, RetryAfter: retry,
		Reason: fmt.Sprintf("credential %s has %d %s, its quota of %d; end some, or try later", cred, have, what, limit),
	}
}

func clean(m map[key]int, k key) {
	if m[k] <= 0 {
		delete(m, k)
	}
}

// Ready starts the tally at its first use and waits for its first read,
// for at most the engine's OpTimeout: a count that etcd cannot give yet
// (unavailable, or a read of many holds still under way) answers
// ErrUnavailable, and the read goes on for the next request.
func (t *Tally) Ready(ctx context.Context) error {
	t.startOnce.Do(func() { go t.run() })
	wait := time.NewTimer(t.c.Cfg.OpTimeout)
	defer wait.Stop()
	select {
	case <-t.loaded:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.c.Stop.Done():
		return hold.ErrClosed
	case <-wait.C:
		return fmt.Errorf("%w: the count of holds and sessions that quotas need is not read yet; retry", hold.ErrUnavailable)
	}
}

// watched is the range the tally reads and follows: from locks/ to the
// end of sessions/. Other keys in it (queues, seats, the session index)
// are skipped by counts.
func (t *Tally) watched() (from, end string) {
	return t.c.Keys.Locks(), clientv3.GetPrefixRangeEnd(t.c.Keys.Sessions())
}

// run counts the range as it is, then follows it until the engine stops;
// a compaction that outran the watch makes it count again.
func (t *Tally) run() {
	var rev int64
	for {
		var err error
		rev, err = t.load(t.c.Stop)
		if err == nil {
			break
		}
		if t.c.Stop.Err() != nil {
			return
		}
		t.c.Log.Warn("quota tally: read the holds and sessions; retrying", "err", err)
		select {
		case <-time.After(time.Second):
		case <-t.c.Stop.Done():
			return
		}
	}
	close(t.loaded)
	from, end := t.watched()
	feed := t.c.Feeds.Feed("quota", from, rev+1, t.handle, func(ctx context.Context, _ int64) (int64, error) {
		r, err := t.load(ctx)
		return r + 1, err
	}, clientv3.WithRange(end), clientv3.WithPrevKV())
	feed.Run(t.c.Stop)
}

// loadPage bounds each read of load.
const loadPage = 5000

// load counts the range anew, a page at a time at one revision, and
// returns that revision. Counting every hold and session once is the
// price of a quota: it runs at the first check and after a compaction
// outran the watch, never per request.
func (t *Tally) load(ctx context.Context) (int64, error) {
	from, end := t.watched()
	counted := map[key]int{}
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(loadPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		octx, done := t.c.Etcd.Op(ctx)
		resp, err := t.c.Cli.Get(octx, from, opts...)
		done()
		if err != nil {
			return 0, t.c.Etcd.Err(ctx, "quota tally read", err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if k, ok := t.keyOf(kv); ok {
				counted[k]++
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	t.mu.Lock()
	t.counted, t.progress = counted, rev
	t.prune(time.Now())
	t.mu.Unlock()
	return rev, nil
}

// handle counts one watch response.
func (t *Tally) handle(_ context.Context, wr clientv3.WatchResponse) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer func() {
		// Progress notifications move it too: every create up to the
		// response's revision is counted.
		t.progress = max(t.progress, wr.Header.Revision)
		t.prune(time.Now())
	}()
	for _, ev := range wr.Events {
		switch {
		case ev.Type == mvccpb.PUT && ev.Kv.CreateRevision == ev.Kv.ModRevision:
			t.seenCreated(ev.Kv)
		case ev.Type == mvccpb.PUT && ev.PrevKv != nil:
			// A handover puts the next holder's record over the lock:
			// the hold moves from one credential to another.
			t.seenEnded(ev.PrevKv)
			t.seenCreated(ev.Kv)
		case ev.Type == mvccpb.DELETE && ev.PrevKv != nil:
			t.seenEnded(ev.PrevKv)
		}
	}
	return nil
}

// seenCreated counts a record the watch saw begin. t.mu is held.
func (t *Tally) seenCreated(kv *mvccpb.KeyValue) {
	if k, ok := t.keyOf(kv); ok {
		t.counted[k]++
	}
}

// seenEnded takes away a record the watch saw end. t.mu is held.
func (t *Tally) seenEnded(kv *mvccpb.KeyValue) {
	if k, ok := t.keyOf(kv); ok {
		t.counted[k]--
		clean(t.counted, k)
	}
}

// keyOf is what kv counts for: a hold or a session of a credential.
func (t *Tally) keyOf(kv *mvccpb.KeyValue) (key, bool) {
	var what string
	switch k := string(kv.Key); {
	case strings.HasPrefix(k, t.c.Keys.Locks()):
		what = Holds
	case strings.HasPrefix(k, t.c.Keys.Sessions()):
		what = Sessions
	default:
		return key{}, false
	}
	var rec struct {
		Credential string `json:"credential"`
	}
	if json.Unmarshal(kv.Value, &rec) != nil || rec.Credential == "" {
		return key{}, false
	}
	return key{rec.Credential, what}, true
}
