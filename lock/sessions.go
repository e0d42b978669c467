package lock

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// CreateSession grants a lease of ttl (0 means Config.DefaultTTL) that
// locks can share. The session ends when it is not renewed within its TTL,
// and every lock in it ends with it. It belongs to ctx's caller, if any
// (see Caller). Past Config.MaxSessions it fails with ErrTooManySessions
// (a *LimitError), checked in constant time against the engine's tally
// (lock/internal/caps), so the cap is approximate as CountRefresh says.
func (e *Engine) CreateSession(ctx context.Context, owner string, ttl time.Duration) (*Session, error) {
	if err := hold.CheckOwner(owner); err != nil {
		return nil, err
	}
	if ttl == 0 {
		ttl = e.core.Cfg.DefaultTTL
	}
	if err := e.core.CheckTTL("ttl", ttl); err != nil {
		return nil, err
	}
	ok, err := e.space.sessions.Reserve(ctx, 1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, e.tooManySessions()
	}
	created := false
	defer func() { e.space.sessions.Finish(1, created) }()
	var (
		start time.Time
		g     *clientv3.LeaseGrantResponse
	)
	err = e.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		start = time.Now()
		g, err = e.core.Cli.Grant(octx, store.TTLSeconds(ttl))
		return err
	})
	if err != nil {
		return nil, e.core.Etcd.Err(ctx, "create session", err)
	}
	id := store.LeaseHex(g.ID)
	rec := hold.SessionRecord{Owner: owner, TTL: g.TTL, CreatedAt: store.NowUTC(), Credential: hold.CredentialOf(ctx)}
	// The owner index entry (sessionlist.go) goes in the same txn and
	// under the same lease: it exists exactly while the session does.
	val := store.MustJSON(rec)
	err = e.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) error {
		_, err := e.core.Cli.Txn(octx).Then(
			clientv3.OpPut(e.core.Keys.Session(id), val, clientv3.WithLease(g.ID)),
			clientv3.OpPut(e.core.Keys.SessionOwner(owner, id), val, clientv3.WithLease(g.ID)),
		).Commit()
		return err
	})
	if err != nil {
		e.core.RevokeLease(id)
		err = e.core.Etcd.Err(ctx, "create session", err)
		created = mayHaveCreated(err)
		return nil, err
	}
	created = true
	e.core.LeaseClock.Saw(g.ID, start, time.Duration(g.TTL)*time.Second, time.Duration(g.TTL)*time.Second)
	return &Session{
		ID: id, Owner: owner, TTL: time.Duration(g.TTL) * time.Second, CreatedAt: rec.CreatedAt,
		ExpiresAt: core.ExpiryAt(start, time.Duration(g.TTL)*time.Second),
		Locks:     []string{}, Elections: []string{}, Semaphores: []string{}, RWLocks: []string{},
		Credential: rec.Credential,
	}, nil
}

// sessionsRetryAfter is the hint given with ErrTooManySessions: sessions
// end by expiry (30 s by default) or deletion, so a slot is seconds away
// at best, and a fleet retrying every second would only add load.
const sessionsRetryAfter = 5 * time.Second

func (e *Engine) tooManySessions() error {
	return &LimitError{
		Err: ErrTooManySessions, Limit: e.core.Cfg.MaxSessions, RetryAfter: sessionsRetryAfter,
		Reason: fmt.Sprintf("the cluster holds the maximum of %d sessions; delete unused sessions, or try later", e.core.Cfg.MaxSessions),
	}
}

func (e *Engine) sessionLease(id string) (clientv3.LeaseID, error) {
	lid, ok := store.ParseLeaseHex(id)
	if !ok {
		return 0, ErrSessionNotFound
	}
	return lid, nil
}

// GetSession returns the session with its expiry and the locks it holds.
func (e *Engine) GetSession(ctx context.Context, id string) (*Session, error) {
	lid, err := e.sessionLease(id)
	if err != nil {
		return nil, err
	}
	id = store.LeaseHex(lid)
	rec, err := e.sessionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	octx, done := e.core.Etcd.Op(ctx)
	defer done()
	ttl, err := e.core.Cli.TimeToLive(octx, lid, clientv3.WithAttachedKeys())
	if err != nil {
		if store.IsLeaseNotFound(err) {
			return nil, ErrSessionNotFound
		}
		return nil, e.core.Etcd.Err(ctx, "get session", err)
	}
	if ttl.TTL < 0 {
		return nil, ErrSessionNotFound
	}
	s := &Session{
		ID: id, Owner: rec.Owner, TTL: time.Duration(rec.TTL) * time.Second, CreatedAt: rec.CreatedAt,
		ExpiresAt: core.ExpiryAt(now, time.Duration(ttl.TTL)*time.Second),
		Locks:     []string{}, Elections: []string{}, Semaphores: []string{}, RWLocks: []string{},
		Credential: rec.Credential,
	}
	for _, k := range ttl.Keys {
		key, ok := strings.CutPrefix(string(k), e.core.Keys.Locks())
		if !ok {
			continue
		}
		switch kind, name := store.ThingOf(key); kind {
		case KindLock:
			s.Locks = append(s.Locks, name)
		case KindElection:
			s.Elections = append(s.Elections, name)
		case KindSemaphore:
			s.seats = append(s.seats, key)
			if !slices.Contains(s.Semaphores, name) {
				s.Semaphores = append(s.Semaphores, name)
			}
		case KindRWLock:
			s.seats = append(s.seats, key)
			if !slices.Contains(s.RWLocks, name) {
				s.RWLocks = append(s.RWLocks, name)
			}
		}
	}
	sort.Strings(s.Locks)
	sort.Strings(s.Elections)
	sort.Strings(s.Semaphores)
	sort.Strings(s.RWLocks)
	return s, nil
}

func (e *Engine) sessionRecord(ctx context.Context, id string) (hold.SessionRecord, error) {
	rec, _, err := e.core.SessionRecordWith(ctx, id)
	return rec, err
}

// RenewSession extends the session's lease by its TTL. It returns
// ErrNotOwner when ctx's caller may not act on the session (see Caller).
func (e *Engine) RenewSession(ctx context.Context, id string) (s *Session, err error) {
	defer func() {
		if err != nil {
			e.core.Metrics.RenewFailed(hold.RenewSession, err)
		}
	}()
	lid, err := e.sessionLease(id)
	if err != nil {
		return nil, err
	}
	id = store.LeaseHex(lid)
	// The session key guards against renewing some other lease by its ID.
	rec, err := e.sessionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	if !hold.MayActOn(ctx, rec.Credential) {
		return nil, fmt.Errorf("renew session %s: %w", id, ErrNotOwner)
	}
	var (
		start time.Time
		ka    *clientv3.LeaseKeepAliveResponse
	)
	err = e.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		start = time.Now()
		ka, err = e.core.Cli.KeepAliveOnce(octx, lid)
		return err
	})
	if err != nil {
		if store.IsLeaseNotFound(err) {
			e.core.LeaseClock.Forget(lid)
			return nil, ErrSessionNotFound
		}
		return nil, e.core.Etcd.Err(ctx, "renew session", err)
	}
	e.core.LeaseClock.Saw(lid, start, time.Duration(ka.TTL)*time.Second, time.Duration(ka.TTL)*time.Second)
	e.indexLegacySession(ctx, lid, id, rec)
	return e.GetSession(ctx, id)
}

// maxEndsPerTxn keeps a session's release under etcd's MaxTxnOps (128):
// its txns hold at most this many holds, or one lock set (MaxSetNames,
// which reads two keys a hold, 128 ops).
const maxEndsPerTxn = 32

// DeleteSession releases every lock of the session (an election it
// leads resigns), each recorded as
// released and handed to its oldest waiter as a release would, then ends
// the session. It returns ErrNotOwner, and changes
// nothing, when ctx's caller may not act on the session (see Caller).
func (e *Engine) DeleteSession(ctx context.Context, id string) error {
	s, err := e.GetSession(ctx, id)
	if err != nil {
		return err
	}
	if !hold.MayActOn(ctx, s.Credential) {
		return fmt.Errorf("delete session %s: %w", s.ID, ErrNotOwner)
	}
	keys := slices.Clone(s.Locks)
	for _, n := range s.Elections {
		keys = append(keys, store.KeyName(KindElection, n))
	}
	keys = append(keys, s.seats...)
	batches, err := e.sessionBatches(ctx, s.ID, keys)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", s.ID, err)
	}
	for _, batch := range batches {
		if err := e.releaseSession(ctx, s.ID, batch); err != nil {
			return fmt.Errorf("delete session %s: %w", s.ID, err)
		}
	}
	lid, _ := store.ParseLeaseHex(s.ID)
	octx, done := e.core.Etcd.Op(ctx)
	defer done()
	// A lock taken in the session after we listed it goes with the lease;
	// the expiry recorder then writes its end event.
	if _, err := e.core.Cli.Revoke(octx, lid); err != nil && !store.IsLeaseNotFound(err) {
		return e.core.Etcd.Err(ctx, "delete session", err)
	}
	e.core.LeaseClock.Forget(lid)
	return nil
}

// releaseSession releases names, locks of session, in one transaction, as
// a release does (EndTxn): each is a nested txn that ends the hold only if
// it is still the one we read, and hands the lock to the oldest waiter
// when it asks for that. No release is counted in the session's tally:
// the session ends right after, tallies and all (if its revoke then
// fails, the tally counts these locks until the session ends, refusing
// acquires early rather than late), and one txn may not write the tally
// key once per lock.
func (e *Engine) releaseSession(ctx context.Context, session string, names []string) error {
	var t store.Txn
	reads := make([]core.HoldReads, len(names))
	for i, n := range names {
		reads[i] = e.core.HoldReads(&t, n, true)
	}
	octx, done := e.core.Etcd.Op(ctx)
	resp, err := e.core.Cli.Txn(octx).Then(t.Then...).Commit()
	done()
	if err != nil {
		return e.core.Etcd.Err(ctx, "read session locks", err)
	}
	var ends []core.PlannedEnd
	handed := map[string]bool{} // queue heads handed a seat already
	for i, r := range reads {
		kv, head := r.Read(resp)
		if kv == nil {
			continue
		}
		hr, err := store.DecodeHolder(kv)
		if err != nil || hr.Session != session {
			continue
		}
		if head != nil && handed[head.Key] {
			// Seats of one thing share its queue: its head takes one of
			// them, and the next waiters the others once they see them
			// free (one txn may not delete an entry twice).
			head = nil
		}
		if head != nil {
			handed[head.Key] = true
		}
		ends = append(ends, core.PlannedEnd{Name: names[i], Token: kv.ModRevision, Hr: hr, Head: head})
	}
	if len(ends) == 0 {
		return nil
	}
	ev := Event{Time: store.NowUTC(), Type: EventReleased, Session: session, Detail: "session deleted", Credential: hold.CredentialOf(ctx)}
	err = e.commitSessionEnds(ctx, ends, ev)
	if err != nil && store.IsLeaseNotFound(err) {
		// A head's lease ended while it waited (see commitEnd): end the
		// holds without handing them over.
		for i := range ends {
			ends[i].Head = nil
		}
		err = e.commitSessionEnds(ctx, ends, ev)
	}
	return err
}

// commitSessionEnds runs one txn that ends every hold of ends, each by
// an event like of.
func (e *Engine) commitSessionEnds(ctx context.Context, ends []core.PlannedEnd, of Event) error {
	// Each end is a txn of its own, nested: one whose hold changed since
	// it was read ends nothing, and the others end theirs.
	var all store.Txn
	nested := make([]store.Ref, len(ends))
	refs := make([]core.EndRefs, len(ends))
	heads := core.HandOverHeads(ends)
	for i, end := range ends {
		ev := hold.EndEvent(end.Hr, ctx, end.Name, end.Token, of.Type, of.Detail)
		ev.Time = of.Time
		var t store.Txn
		refs[i] = e.core.EndTxn(&t, end.Name, end.Token, end.Hr, ev, heads[i], -1)
		nested[i] = all.OnSuccess(t.Op())
	}
	octx, done := e.core.Etcd.Op(ctx)
	defer done()
	resp, err := e.core.Cli.Txn(octx).Then(all.Then...).Commit()
	if err != nil {
		return e.core.Etcd.Err(ctx, "release session locks", err)
	}
	for i, r := range nested {
		if tr := r.Nested(resp); tr.Succeeded {
			e.core.Metrics.RecordedOf(ends[i].Name, EventReleased, 1)
			e.core.Metrics.RecordedOf(ends[i].Name, EventAcquired, refs[i].HandedOver(tr))
		}
	}
	return nil
}
