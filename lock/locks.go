package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// AcquireRequest asks for a lock (lock/internal/core/acquire.go documents
// its fields).
type AcquireRequest = core.AcquireRequest

// Acquire takes req.Name for the caller and returns the lock with its
// fencing token. fresh is false when req.Session already held the lock
// (acquire is idempotent within a session). When the lock is held, Acquire
// queues for up to req.Wait, first come first served across every node,
// then returns a *HeldError (errors.Is(err, ErrHeld)) naming the holder.
//
// The lock lives as long as its lease: the caller must renew it before
// ExpiresAt, and must pass the token to whatever it protects, because a
// paused caller can lose the lock without noticing. If the caller's ctx
// ends, Acquire leaves nothing behind: no queue entry, no lease, no lock.
func (e *Engine) Acquire(ctx context.Context, req AcquireRequest) (*Lock, bool, error) {
	if err := store.CheckName("name", req.Name); err != nil {
		return nil, false, err
	}
	l, fresh, err := e.acquire(ctx, req, nil, nil)
	if err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("acquire %q: %w", req.Name, err)
	}
	return l, fresh, nil
}

// acquire is Acquire of the thing kept under the key name req.Name (see
// store.KeyName), which the caller has checked, of the kind newKind makes
// (nil: a plain lock). members are a lock set's names, nil for any other
// kind: the locks the acquire may create, under MaxLocks.
func (e *Engine) acquire(ctx context.Context, req AcquireRequest, newKind core.NewKindFunc, members []string) (l *Lock, fresh bool, err error) {
	a, err := e.core.NewAcquirer(ctx, req, newKind)
	if err != nil {
		return nil, false, err
	}
	// MaxLocks (space.go): a slot for each lock this acquire may create.
	endSlot, err := e.space.reserveLock(ctx, req, members)
	if err != nil {
		return nil, false, err
	}
	defer func() { endSlot(err == nil && fresh || mayHaveCreated(err)) }()
	// The caller's quotas (lock/internal/quota): its holds, and its
	// waiting acquires while this one may wait.
	endQuota, err := e.quota.ReserveAcquire(ctx, max(len(members), 1), req.Wait > 0)
	if err != nil {
		return nil, false, err
	}
	defer func() { endQuota(err == nil && fresh || mayHaveCreated(err), tokenOf(l)) }()
	return a.Run(ctx)
}

// tokenOf is l's token, the revision its hold began at; 0 for no hold.
func tokenOf(l *Lock) int64 {
	if l == nil {
		return 0
	}
	return l.Token
}

// Get returns the current holder of name, or ErrNotHeld.
func (e *Engine) Get(ctx context.Context, name string) (*Lock, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	// The guard comes in the same read: a free lock under lock-delay
	// answers a *DelayedError (still ErrNotHeld).
	var t store.Txn
	lock, guard := t.OnSuccess(clientv3.OpGet(e.core.Keys.Lock(name))), t.OnSuccess(clientv3.OpGet(e.core.Keys.Delay(name)))
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Cli.Txn(octx).Then(t.Then...).Commit()
	done()
	if err != nil {
		return nil, e.core.Etcd.Err(ctx, "get lock", err)
	}
	if kvs := lock.KVs(resp); len(kvs) > 0 {
		return e.core.DecodeLock(ctx, kvs[0], nil)
	}
	if g := guard.KVs(resp); len(g) > 0 {
		if d, ok := hold.ActiveDelay(name, g[0], time.Now()); ok {
			return nil, d
		}
	}
	return nil, ErrNotHeld
}

// ListOptions selects locks for List.
type ListOptions struct {
	// Prefix keeps only locks whose name starts with it.
	Prefix string
	// After resumes a listing after this lock name (exclusive).
	After string
	// Limit is the page size; 0 means 100.
	Limit int
}

// ListWithDelays is List, with the free locks under lock-delay whose names
// fall in the same page: from o.After to the page's last name, or to the
// end of the prefix on the last page. It reads at most o.Limit guards;
// when the range holds more, the page ends at the last guard read, so
// every delay appears on exactly one page.
func (e *Engine) ListWithDelays(ctx context.Context, o ListOptions) ([]*Lock, []Delay, string, error) {
	locks, next, err := e.List(ctx, o)
	if err != nil {
		return nil, nil, "", err
	}
	if o.Limit == 0 {
		o.Limit = 100
	}
	delays, cut, err := e.delaysOf(ctx, o, next)
	if err != nil {
		return nil, nil, "", err
	}
	if cut != "" {
		i := 0
		for i < len(locks) && locks[i].Name <= cut {
			i++
		}
		locks, next = locks[:i], cut
	}
	return locks, delays, next, nil
}

// List returns held locks sorted by name, and the name to pass as After
// for the next page ("" when this is the last page).
func (e *Engine) List(ctx context.Context, o ListOptions) ([]*Lock, string, error) {
	return e.list(ctx, KindLock, o)
}

// list is List of the holds of the things of kind k (see store.KindRange).
func (e *Engine) list(ctx context.Context, k EventKind, o ListOptions) ([]*Lock, string, error) {
	if err := checkListOptions(&o); err != nil {
		return nil, "", err
	}
	start, end := store.KindRange(e.core.Keys.Locks(), k, o.Prefix)
	if o.After != "" {
		if after := e.core.Keys.Locks() + store.KeyName(k, o.After) + "\x00"; after > start {
			start = after
		}
	}
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Etcd.GetPage(octx, start, end, int64(o.Limit+1))
	done()
	if err != nil {
		return nil, "", e.core.Etcd.Err(ctx, "list locks", err)
	}
	kvs, next := resp.Kvs, ""
	if len(kvs) > o.Limit {
		kvs = kvs[:o.Limit]
		_, next = store.ThingOf(string(kvs[len(kvs)-1].Key[len(e.core.Keys.Locks()):]))
	}
	// Sessions share leases: ask etcd once per lease, not once per lock.
	expiry := map[string]core.LeaseTimes{}
	locks := make([]*Lock, 0, len(kvs))
	for _, kv := range kvs {
		l, err := e.core.DecodeLock(ctx, kv, expiry)
		if err != nil {
			return nil, "", err
		}
		locks = append(locks, l)
	}
	return locks, next, nil
}

// CheckNamePrefix validates a list's prefix of names, the value of the
// request field field: empty, or what may begin a name.
func CheckNamePrefix(field, prefix string) error {
	if prefix != "" && !ValidName(prefix) {
		return hold.Invalid(field, "must contain only A-Z a-z 0-9 . _ : - and be at most %d characters", MaxNameLen)
	}
	return nil
}

// checkListOptions checks o, and sets its default page size.
func checkListOptions(o *ListOptions) error {
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit < 1 || o.Limit > MaxListLimit {
		return hold.Invalid("limit", "must be between 1 and %d", MaxListLimit)
	}
	if err := CheckNamePrefix("prefix", o.Prefix); err != nil {
		return err
	}
	if o.After != "" && !ValidName(o.After) {
		return hold.Invalid("cursor", "is not a cursor returned by a previous page")
	}
	return nil
}

// Renew extends the lease of the lock that token holds, and returns the
// lock with its new expiry. A lock in a session renews the whole session.
// It returns ErrNotHeld or ErrTokenMismatch when token no longer holds it,
// and ErrNotOwner when ctx's caller may not act on the hold (see Caller).
func (e *Engine) Renew(ctx context.Context, name string, token int64) (*Lock, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	l, err := e.renew(ctx, name, token)
	if err != nil {
		return nil, fmt.Errorf("renew %q: %w", name, err)
	}
	return l, nil
}

// renew is Renew of the thing kept under key name (store.KeyName).
func (e *Engine) renew(ctx context.Context, name string, token int64) (l *Lock, err error) {
	defer func() {
		if err != nil {
			e.core.Metrics.RenewFailed(hold.RenewLock, err)
		}
	}()
	if name, err = e.core.SeatOf(ctx, name, token); err != nil {
		return nil, err
	}
	hr, err := e.core.HeldWith(ctx, name, token)
	if err != nil {
		return nil, err
	}
	if !hold.MayActOn(ctx, hr.Credential) {
		return nil, fmt.Errorf("the hold with token %d was acquired by another credential: %w", token, ErrNotOwner)
	}
	ttl, start, err := e.keepAlive(ctx, hr.Lease)
	if err != nil {
		return nil, err
	}
	// The lease we renewed may have outlived the hold (a session's lease
	// does): answer success only if token still holds the lock.
	if _, err := e.core.HeldWith(ctx, name, token); err != nil {
		return nil, err
	}
	l = hold.ToLock(hr, name, token)
	l.TTL, l.ExpiresAt = ttl, core.ExpiryAt(start, ttl)
	return l, nil
}

// keepAlive renews the lease lease, and returns its TTL as etcd granted it
// and when the renewal began. ErrNotHeld says the lease is gone.
func (e *Engine) keepAlive(ctx context.Context, lease string) (ttl time.Duration, start time.Time, err error) {
	id, _ := store.ParseLeaseHex(lease)
	var ka *clientv3.LeaseKeepAliveResponse
	err = e.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		start = time.Now()
		ka, err = e.core.Cli.KeepAliveOnce(octx, id)
		return err
	})
	if err != nil {
		if store.IsLeaseNotFound(err) {
			return 0, time.Time{}, ErrNotHeld
		}
		return 0, time.Time{}, e.core.Etcd.Err(ctx, "keep the lease alive", err)
	}
	ttl = time.Duration(ka.TTL) * time.Second
	e.core.LeaseClock.Saw(id, start, ttl, ttl)
	return ttl, start, nil
}

// Waiter is a queued acquire.
type Waiter struct {
	Owner    string
	Session  string
	Position int
	Since    time.Time
	// Mode is a read/write lock's waiter's.
	Mode RWMode
	// Set is a lock set's waiter's: every name of the set.
	Set []string
}

// Waiters returns the queue of name in grant order: its first
// MaxListLimit waiters, when Config.MaxWaitersPerLock allows more.
func (e *Engine) Waiters(ctx context.Context, name string) ([]Waiter, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	octx, done := e.core.Etcd.Op(ctx)
	defer done()
	resp, err := e.core.Cli.Get(octx, e.core.Keys.Queue(name), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(MaxListLimit))
	if err != nil {
		return nil, e.core.Etcd.Err(ctx, "list waiters", err)
	}
	return waitersOf(resp.Kvs), nil
}

// waitersOf decodes a read of a queue, in grant order.
func waitersOf(kvs []*mvccpb.KeyValue) []Waiter {
	ws := make([]Waiter, 0, len(kvs))
	for i, kv := range kvs {
		var wr hold.WaiterRecord
		if json.Unmarshal(kv.Value, &wr) != nil {
			continue
		}
		ws = append(ws, Waiter{Owner: wr.Owner, Session: wr.Session, Position: i + 1, Since: wr.Since, Mode: wr.Mode, Set: wr.Set})
	}
	return ws
}

// Stats counts what the cluster holds now, for metrics.
type Stats struct {
	LocksHeld int64
	// ElectionsLed counts the elections that have a leader.
	ElectionsLed int64
	// PermitsHeld counts the semaphores' permits held, RWHolds the read
	// and write holds of read/write locks.
	PermitsHeld int64
	RWHolds     int64
	// Waiters counts queued acquires and campaigns.
	Waiters  int64
	Sessions int64
}

// Stats counts locks, waiters and sessions with count-only range reads.
func (e *Engine) Stats(ctx context.Context) (Stats, error) {
	locksFrom, locksTo := store.KindRange(e.core.Keys.Locks(), KindLock, "")
	electionsFrom, electionsTo := store.KindRange(e.core.Keys.Locks(), KindElection, "")
	permitsFrom, permitsTo := store.KindRange(e.core.Keys.Locks(), KindSemaphore, "")
	rwFrom, rwTo := store.KindRange(e.core.Keys.Locks(), KindRWLock, "")
	var t store.Txn
	count := func(from string, opts ...clientv3.OpOption) store.Ref {
		return t.OnSuccess(clientv3.OpGet(from, append(opts, clientv3.WithCountOnly())...))
	}
	locks, elections := count(locksFrom, clientv3.WithRange(locksTo)), count(electionsFrom, clientv3.WithRange(electionsTo))
	waiters, sessions := count(e.core.Cfg.Prefix+"queue/", clientv3.WithPrefix()), count(e.core.Cfg.Prefix+"sessions/", clientv3.WithPrefix())
	permits, rw := count(permitsFrom, clientv3.WithRange(permitsTo)), count(rwFrom, clientv3.WithRange(rwTo))
	octx, done := e.core.Etcd.Op(ctx)
	defer done()
	resp, err := e.core.Cli.Txn(octx).Then(t.Then...).Commit()
	if err != nil {
		return Stats{}, e.core.Etcd.Err(ctx, "stats", err)
	}
	return Stats{LocksHeld: locks.Count(resp), ElectionsLed: elections.Count(resp), Waiters: waiters.Count(resp), Sessions: sessions.Count(resp),
		PermitsHeld: permits.Count(resp), RWHolds: rw.Count(resp)}, nil
}

// Release ends the hold of token on name and records it as released. It
// never touches a newer holder: ErrTokenMismatch if token is stale,
// ErrNotHeld if nobody holds the lock. It returns ErrNotOwner, and ends
// nothing, when ctx's caller may not act on the hold (see Caller).
func (e *Engine) Release(ctx context.Context, name string, token int64) error {
	if err := store.CheckName("name", name); err != nil {
		return err
	}
	if err := e.core.EndHold(ctx, name, token, EventReleased, ""); err != nil {
		return fmt.Errorf("release %q: %w", name, err)
	}
	return nil
}

// Revoke forcibly ends whatever hold name has (an operator's action) and
// records it as revoked with reason. Lock-delay applies afterwards.
func (e *Engine) Revoke(ctx context.Context, name, reason string) (*Lock, error) {
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	if len(reason) > MaxReasonLen {
		return nil, hold.Invalid("reason", "must be at most %d bytes", MaxReasonLen)
	}
	l, err := e.core.Revoke(ctx, name, reason)
	if err != nil {
		return nil, fmt.Errorf("revoke %q: %w", name, err)
	}
	return l, nil
}

// delaysOf returns the delays among the guards of the names in the range
// a page of List covers: after (exclusive) to through (inclusive; "" is
// the end of the prefix). It reads at most limit guards; when there are
// more, cut is the last name it read, and the page must end there.
func (e *Engine) delaysOf(ctx context.Context, o ListOptions, through string) (delays []Delay, cut string, err error) {
	base := e.core.Cfg.Prefix + "delay/"
	start, end := store.KindRange(base, KindLock, o.Prefix)
	if o.After != "" {
		if after := base + o.After + "\x00"; after > start {
			start = after
		}
	}
	if through != "" {
		end = base + through + "\x00"
	}
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Etcd.GetPage(octx, start, end, int64(o.Limit))
	done()
	if err != nil {
		return nil, "", e.core.Etcd.Err(ctx, "list lock-delays", err)
	}
	now := time.Now()
	for _, kv := range resp.Kvs {
		name := string(kv.Key[len(base):])
		if d, ok := hold.ActiveDelay(name, kv, now); ok {
			delays = append(delays, Delay{Name: name, Until: d.Until, Cause: d.Cause})
		}
	}
	if resp.More && len(resp.Kvs) > 0 {
		cut = string(resp.Kvs[len(resp.Kvs)-1].Key[len(base):])
	}
	return delays, cut, nil
}
