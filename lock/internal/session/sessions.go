package session

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/caps"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Create is lock.Engine.CreateSession: a session of owner that lives by
// ttl, or, with bind BindStream, while its stream is open (stream.go).
func (m *Registry) Create(ctx context.Context, owner string, ttl time.Duration, bind string, grace time.Duration) (*Session, error) {
	if err := hold.CheckOwner(owner); err != nil {
		return nil, err
	}
	ttl, grace, err := m.leaseTerms(ttl, bind, grace)
	if err != nil {
		return nil, err
	}
	ok, err := m.tally.Reserve(ctx, 1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, m.tooManySessions()
	}
	created := false
	defer func() { m.tally.Finish(1, created) }()
	var (
		start time.Time
		g     *clientv3.LeaseGrantResponse
	)
	err = m.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		start = time.Now()
		g, err = m.core.Cli.Grant(octx, store.TTLSeconds(ttl))
		return err
	})
	if err != nil {
		return nil, m.core.Etcd.Err(ctx, "create session", err)
	}
	id := store.LeaseHex(g.ID)
	rec := hold.SessionRecord{Owner: owner, TTL: g.TTL, CreatedAt: store.NowUTC(), Credential: hold.CredentialOf(ctx), Bind: bind, Grace: grace}
	// The owner index entry (sessionlist.go) goes in the same txn and
	// under the same lease: it exists exactly while the session does.
	val := store.MustJSON(rec)
	ops := []clientv3.Op{
		clientv3.OpPut(m.core.Keys.Session(id), val, clientv3.WithLease(g.ID)),
		clientv3.OpPut(m.core.Keys.SessionOwner(owner, id), val, clientv3.WithLease(g.ID)),
	}
	if bind == BindStream {
		// Created detached: its first stream has the grace to attach.
		ops = append(ops, clientv3.OpPut(m.core.Keys.SessionStream(id), store.MustJSON(streamRecord{Node: m.node, Since: rec.CreatedAt}), clientv3.WithLease(g.ID)))
	}
	var created0 *clientv3.TxnResponse
	err = m.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		created0, err = m.core.Cli.Txn(octx).Then(ops...).Commit()
		return err
	})
	if err != nil {
		m.core.RevokeLease(id)
		err = m.core.Etcd.Err(ctx, "create session", err)
		created = caps.MayHaveCreated(err)
		return nil, err
	}
	created = true
	m.core.LeaseClock.Saw(g.ID, start, time.Duration(g.TTL)*time.Second, time.Duration(g.TTL)*time.Second)
	if bind == BindStream {
		m.endAfterGrace(id, g.ID, created0.Header.Revision, grace)
	}
	return &Session{
		ID: id, Owner: owner, TTL: time.Duration(g.TTL) * time.Second, CreatedAt: rec.CreatedAt,
		ExpiresAt: core.ExpiryAt(start, time.Duration(g.TTL)*time.Second),
		Locks:     []string{}, Elections: []string{}, Semaphores: []string{}, RWLocks: []string{},
		Credential: rec.Credential, Bind: bind, Grace: grace, CreatedRevision: created0.Header.Revision,
	}, nil
}

// leaseTerms checks a new session's ttl, bind and grace, and returns the
// TTL of its lease and its grace, with the defaults filled in.
func (m *Registry) leaseTerms(ttl time.Duration, bind string, grace time.Duration) (time.Duration, time.Duration, error) {
	switch {
	case bind == BindStream && ttl != 0:
		return 0, 0, hold.Invalid("ttl", "must be absent with bind stream: the session lives while its stream is open, and its grace says how long after")
	case bind == BindStream:
		if grace == 0 {
			grace = DefaultGrace
		}
		if err := CheckGrace(grace); err != nil {
			return 0, 0, err
		}
		return StreamLeaseTTL(grace, m.core.Cfg.MinTTL), grace, nil
	case bind != "":
		return 0, 0, hold.Invalid("bind", "must be stream, or absent")
	case grace != 0:
		return 0, 0, hold.Invalid("grace", "needs bind stream: a session that lives by its ttl has no grace")
	}
	if ttl == 0 {
		ttl = m.core.Cfg.DefaultTTL
	}
	return ttl, 0, m.core.CheckTTL("ttl", ttl)
}

// sessionsRetryAfter is the hint given with ErrTooManySessions: sessions
// end by expiry (30 s by default) or deletion, so a slot is seconds away
// at best, and a fleet retrying every second would only add load.
const sessionsRetryAfter = 5 * time.Second

func (m *Registry) tooManySessions() error {
	return &hold.LimitError{
		Err: hold.ErrTooManySessions, Limit: m.core.Cfg.MaxSessions, RetryAfter: sessionsRetryAfter,
		Reason: fmt.Sprintf("the cluster holds the maximum of %d sessions; delete unused sessions, or try later", m.core.Cfg.MaxSessions),
	}
}

func (m *Registry) SessionLease(id string) (clientv3.LeaseID, error) {
	lid, ok := store.ParseLeaseHex(id)
	if !ok {
		return 0, hold.ErrSessionNotFound
	}
	return lid, nil
}

// Get is lock.Engine.GetSession.
func (m *Registry) Get(ctx context.Context, id string) (*Session, error) {
	lid, err := m.SessionLease(id)
	if err != nil {
		return nil, err
	}
	id = store.LeaseHex(lid)
	rec, err := m.sessionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	octx, done := m.core.Etcd.Op(ctx)
	defer done()
	ttl, err := m.core.Cli.TimeToLive(octx, lid, clientv3.WithAttachedKeys())
	if err != nil {
		if store.IsLeaseNotFound(err) {
			return nil, hold.ErrSessionNotFound
		}
		return nil, m.core.Etcd.Err(ctx, "get session", err)
	}
	if ttl.TTL < 0 {
		return nil, hold.ErrSessionNotFound
	}
	s := &Session{
		ID: id, Owner: rec.Owner, TTL: time.Duration(rec.TTL) * time.Second, CreatedAt: rec.CreatedAt,
		ExpiresAt: core.ExpiryAt(now, time.Duration(ttl.TTL)*time.Second),
		Locks:     []string{}, Elections: []string{}, Semaphores: []string{}, RWLocks: []string{},
		Credential: rec.Credential, Bind: rec.Bind, Grace: rec.Grace,
	}
	for _, k := range ttl.Keys {
		key, ok := strings.CutPrefix(string(k), m.core.Keys.Locks())
		if !ok {
			continue
		}
		switch kind, name := store.ThingOf(key); kind {
		case store.KindLock:
			s.Locks = append(s.Locks, name)
		case store.KindElection:
			s.Elections = append(s.Elections, name)
		case store.KindSemaphore:
			s.seats = append(s.seats, key)
			if !slices.Contains(s.Semaphores, name) {
				s.Semaphores = append(s.Semaphores, name)
			}
		case store.KindRWLock:
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

func (m *Registry) sessionRecord(ctx context.Context, id string) (hold.SessionRecord, error) {
	rec, _, err := m.core.SessionRecordWith(ctx, id)
	return rec, err
}

// Renew is lock.Engine.RenewSession.
func (m *Registry) Renew(ctx context.Context, id string) (s *Session, err error) {
	defer func() {
		if err != nil {
			m.core.Metrics.RenewFailed(hold.RenewSession, err)
		}
	}()
	lid, err := m.SessionLease(id)
	if err != nil {
		return nil, err
	}
	id = store.LeaseHex(lid)
	// The session key guards against renewing some other lease by its ID.
	rec, err := m.sessionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	if !hold.MayActOn(ctx, rec.Credential) {
		return nil, fmt.Errorf("renew session %s: %w", id, hold.ErrNotOwner)
	}
	var (
		start time.Time
		ka    *clientv3.LeaseKeepAliveResponse
	)
	err = m.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		start = time.Now()
		ka, err = m.core.Cli.KeepAliveOnce(octx, lid)
		return err
	})
	if err != nil {
		if store.IsLeaseNotFound(err) {
			m.core.LeaseClock.Forget(lid)
			return nil, hold.ErrSessionNotFound
		}
		return nil, m.core.Etcd.Err(ctx, "renew session", err)
	}
	m.core.LeaseClock.Saw(lid, start, time.Duration(ka.TTL)*time.Second, time.Duration(ka.TTL)*time.Second)
	m.indexLegacySession(ctx, lid, id, rec)
	return m.Get(ctx, id)
}

// maxEndsPerTxn keeps a session's release under etcd's MaxTxnOps (128):
// its txns hold at most this many holds, or one lock set (MaxSetNames,
// which reads two keys a hold, 128 ops).
const maxEndsPerTxn = 32

// Delete is lock.Engine.DeleteSession.
func (m *Registry) Delete(ctx context.Context, id string) error {
	s, err := m.Get(ctx, id)
	if err != nil {
		return err
	}
	if !hold.MayActOn(ctx, s.Credential) {
		return fmt.Errorf("delete session %s: %w", s.ID, hold.ErrNotOwner)
	}
	keys := slices.Clone(s.Locks)
	for _, n := range s.Elections {
		keys = append(keys, store.KeyName(store.KindElection, n))
	}
	keys = append(keys, s.seats...)
	batches, err := m.sessionBatches(ctx, s.ID, keys)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", s.ID, err)
	}
	for _, batch := range batches {
		if err := m.releaseSession(ctx, s.ID, batch); err != nil {
			return fmt.Errorf("delete session %s: %w", s.ID, err)
		}
	}
	lid, _ := store.ParseLeaseHex(s.ID)
	octx, done := m.core.Etcd.Op(ctx)
	defer done()
	// A lock taken in the session after we listed it goes with the lease;
	// the expiry recorder then writes its end event.
	if _, err := m.core.Cli.Revoke(octx, lid); err != nil && !store.IsLeaseNotFound(err) {
		return m.core.Etcd.Err(ctx, "delete session", err)
	}
	m.core.LeaseClock.Forget(lid)
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
func (m *Registry) releaseSession(ctx context.Context, session string, names []string) error {
	var t store.Txn
	reads := make([]core.HoldReads, len(names))
	for i, n := range names {
		reads[i] = m.core.HoldReads(&t, n, true)
	}
	octx, done := m.core.Etcd.Op(ctx)
	resp, err := m.core.Cli.Txn(octx).Then(t.Then...).Commit()
	done()
	if err != nil {
		return m.core.Etcd.Err(ctx, "read session locks", err)
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
	ev := store.Event{Time: store.NowUTC(), Type: store.EventReleased, Session: session, Detail: "session deleted", Credential: hold.CredentialOf(ctx)}
	err = m.commitSessionEnds(ctx, ends, ev)
	if err != nil && store.IsLeaseNotFound(err) {
		// A head's lease ended while it waited (see commitEnd): end the
		// holds without handing them over.
		for i := range ends {
			ends[i].Head = nil
		}
		err = m.commitSessionEnds(ctx, ends, ev)
	}
	return err
}

// commitSessionEnds runs one txn that ends every hold of ends, each by
// an event like of.
func (m *Registry) commitSessionEnds(ctx context.Context, ends []core.PlannedEnd, of store.Event) error {
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
		refs[i] = m.core.EndTxn(&t, end.Name, end.Token, end.Hr, ev, heads[i], -1)
		nested[i] = all.OnSuccess(t.Op())
	}
	octx, done := m.core.Etcd.Op(ctx)
	defer done()
	resp, err := m.core.Cli.Txn(octx).Then(all.Then...).Commit()
	if err != nil {
		return m.core.Etcd.Err(ctx, "release session locks", err)
	}
	for i, r := range nested {
		if tr := r.Nested(resp); tr.Succeeded {
			m.core.Metrics.RecordedOf(ends[i].Name, store.EventReleased, 1)
			m.core.Metrics.RecordedOf(ends[i].Name, store.EventAcquired, refs[i].HandedOver(tr))
		}
	}
	return nil
}

// Session is a lease that many locks can share: when it ends, they all do.
type Session struct {
	ID        string
	Owner     string
	TTL       time.Duration
	CreatedAt time.Time
	ExpiresAt time.Time
	// Locks are the names of the locks held in the session, sorted,
	// Elections those of the elections it leads, Semaphores those of the
	// semaphores it holds permits of and RWLocks those of the read/write
	// locks it holds (each once).
	Locks      []string
	Elections  []string
	Semaphores []string
	RWLocks    []string
	// seats are the key names of the holds in seats (internal/store/kinds.go).
	seats []string
	// Credential is the ID of the credential that created the session,
	// when the caller had one (see Caller).
	Credential string
	// Bind and Grace are a stream-bound session's (stream.go).
	Bind  string
	Grace time.Duration
	// CreatedRevision is the revision that created the session, on the
	// answer of Create only (quotas count it from there); 0 elsewhere.
	CreatedRevision int64
}

// sessionBatches splits the holds of session, by key name, into the
// batches its deletion ends, one txn each (releaseSession): at most
// maxEndsPerTxn holds, but a lock set's members always in one, however
// many (MaxSetNames at most). It reads each hold's record to learn its
// set, MaxSetNames at a time.
func (m *Registry) sessionBatches(ctx context.Context, session string, keys []string) ([][]string, error) {
	var opts []clientv3.OpOption
	if m.core.Etcd.OwnMember() {
		opts = append(opts, clientv3.WithSerializable())
	}
	var (
		units [][]string
		taken = map[string]bool{}
	)
	for chunk := range slices.Chunk(keys, hold.MaxSetNames) {
		var t store.Txn
		reads := make([]store.Ref, len(chunk))
		for i, k := range chunk {
			reads[i] = t.OnSuccess(clientv3.OpGet(m.core.Keys.Lock(k), opts...))
		}
		octx, done := m.core.Etcd.Op(ctx)
		resp, err := m.core.Cli.Txn(octx).Then(t.Then...).Commit()
		done()
		if err != nil {
			return nil, m.core.Etcd.Err(ctx, "read session locks", err)
		}
		for i, k := range chunk {
			if taken[k] {
				continue
			}
			unit := []string{k}
			if kvs := reads[i].KVs(resp); len(kvs) > 0 {
				if hr, err := store.DecodeHolder(kvs[0]); err == nil && hr.Session == session && len(hr.Set) > 0 {
					unit = slices.DeleteFunc(slices.Clone(hr.Set), func(n string) bool { return !slices.Contains(keys, n) })
				}
			}
			for _, n := range unit {
				taken[n] = true
			}
			units = append(units, unit)
		}
	}
	var batches [][]string
	for _, u := range units {
		if n := len(batches); n > 0 && len(batches[n-1])+len(u) <= maxEndsPerTxn {
			batches[n-1] = append(batches[n-1], u...)
			continue
		}
		batches = append(batches, u)
	}
	return batches, nil
}

// Registry is the engine's sessions: leases that many holds share.
type Registry struct {
	core *core.Engine
	// tally counts sessions under MaxSessions (nil: no cap).
	tally *caps.Tally
	// node names this registry in stream records (stream.go).
	node string
}

// New returns the registry of the sessions c serves, counted under
// MaxSessions by tally (nil when the cap is off).
func New(c *core.Engine, tally *caps.Tally) *Registry {
	return &Registry{core: c, tally: tally, node: store.NewID()}
}
