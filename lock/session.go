package lock

import (
	"context"
	"time"

	"github.com/baton-dev/baton/lock/internal/quota"
	"github.com/baton-dev/baton/lock/internal/session"
)

// Session is a lease that many holds share; SessionListOptions select a
// page of ListSessions. Both are package session's
// (lock/internal/session), which documents their fields.
type (
	Session            = session.Session
	SessionListOptions = session.ListOptions
	// SessionStream is a stream of a stream-bound session open on this
	// node (AttachSessionStream).
	SessionStream = session.Stream
)

// BindStream binds a session to a stream (CreateStreamSession);
// SessionKeepAliveEvery is how often a node serving its stream calls
// SessionStream.KeepAlive.
// MinStreamGrace and MaxStreamGrace bound its grace.
const (
	BindStream            = session.BindStream
	SessionKeepAliveEvery = session.KeepAliveEvery
	MinStreamGrace        = session.MinGrace
	MaxStreamGrace        = session.MaxGrace
)

// CreateSession grants a lease of ttl (0 means Config.DefaultTTL) that
// locks can share. The session ends when it is not renewed within its TTL,
// and every lock in it ends with it. It belongs to ctx's caller, if any
// (see Caller). Past Config.MaxSessions it fails with ErrTooManySessions
// (a *LimitError), checked in constant time against the engine's tally
// (lock/internal/caps), so the cap is approximate as CountRefresh says.
func (e *Engine) CreateSession(ctx context.Context, owner string, ttl time.Duration) (*Session, error) {
	done, err := e.quota.ReserveSession(ctx)
	if err != nil {
		return nil, err
	}
	s, err := e.sessions.Create(ctx, owner, ttl, "", 0)
	done(err == nil || mayHaveCreated(err), createdAt(s))
	return s, err
}

// QuotaUsage is what the credential cred holds and waits for, as the
// quotas of set count it: its holds and sessions across the cluster (as
// this node's watch has seen them), and its acquires waiting on this
// node. A count whose quota set leaves at 0 (none) is not counted and
// reads 0, so a credential with no holds or sessions quota starts no
// count and reads nothing from etcd. Otherwise the first call starts the
// count of holds and sessions (it reads them all once); ctx bounds that.
func (e *Engine) QuotaUsage(ctx context.Context, cred string, set CallerQuotas) (CallerQuotas, error) {
	var u CallerQuotas
	if set.Holds > 0 || set.Sessions > 0 {
		if err := e.quota.Ready(ctx); err != nil {
			return CallerQuotas{}, err
		}
	}
	if set.Holds > 0 {
		u.Holds = e.quota.Count(cred, quota.Holds)
	}
	if set.Sessions > 0 {
		u.Sessions = e.quota.Count(cred, quota.Sessions)
	}
	if set.Waiters > 0 {
		u.Waiters = e.quota.Count(cred, quota.Waiters)
	}
	return u, nil
}

// createdAt is the revision s was created at; 0 for no session.
func createdAt(s *Session) int64 {
	if s == nil {
		return 0
	}
	return s.CreatedRevision
}

// CreateStreamSession creates a session bound to a stream, as
// ZooKeeper's is to its connection: it lives while a stream of it is
// open on some node (AttachSessionStream), and ends, with every hold in
// it (session_expired), once none has been open for grace (0 means 2s;
// from 500ms to 1m). Its first stream has the grace to attach. Its lease
// is kept alive only by a node serving its stream, so a node that dies
// ends it by the lease's TTL: the grace and a keep-alive, in whole
// seconds, and at least MinTTL.
func (e *Engine) CreateStreamSession(ctx context.Context, owner string, grace time.Duration) (*Session, error) {
	done, err := e.quota.ReserveSession(ctx)
	if err != nil {
		return nil, err
	}
	s, err := e.sessions.Create(ctx, owner, 0, BindStream, grace)
	done(err == nil || mayHaveCreated(err), createdAt(s))
	return s, err
}

// AttachSessionStream opens a stream of the stream-bound session id on
// this node. Its server calls KeepAlive every session.KeepAliveEvery
// while the stream is open, and Close when it closes, which starts the
// grace. ErrSessionNotFound when the session is gone or ended by its
// grace; an *InvalidError naming session for a session not bound to a
// stream.
func (e *Engine) AttachSessionStream(ctx context.Context, id string) (*SessionStream, error) {
	return e.sessions.Attach(ctx, id)
}

// GetSession returns the session with its expiry and the locks it holds.
func (e *Engine) GetSession(ctx context.Context, id string) (*Session, error) {
	return e.sessions.Get(ctx, id)
}

// RenewSession extends the session's lease by its TTL. It returns
// ErrNotOwner when ctx's caller may not act on the session (see Caller).
func (e *Engine) RenewSession(ctx context.Context, id string) (s *Session, err error) {
	return e.sessions.Renew(ctx, id)
}

// DeleteSession releases every lock of the session (an election it
// leads resigns), each recorded as
// released and handed to its oldest waiter as a release would, then ends
// the session. It returns ErrNotOwner, and changes
// nothing, when ctx's caller may not act on the session (see Caller).
func (e *Engine) DeleteSession(ctx context.Context, id string) error {
	return e.sessions.Delete(ctx, id)
}

// ListSessions returns live sessions sorted by owner, then ID, and the
// cursor to pass as After for the next page ("" on the last page).
//
// A listed session has no Locks (nil): they are its lease's attached keys,
// which etcd returns all at once, so one session with thousands of locks
// would make a page read them all. GetSession returns them.
//
// Cost: one range read of at most Limit+1 index entries, and one lease
// lookup (TimeToLive, without keys) per session listed, in parallel.
// Sessions of owners outside Prefix cost nothing; etcd's count walks the
// index entries of the matching owners' sessions after the cursor, and of
// the sessions among them that ended since the last compaction (every
// minute by default, on an embedded member), without reading their values (see sessionOwnersPrefix).
//
// A session created by a node without the owner index (before an upgrade)
// has no index entry: it is listed from its first renew through
// RenewSession on an upgraded node, and never if it is not renewed so.
// Locks renewing the session's lease (Renew) do not add it.
func (e *Engine) ListSessions(ctx context.Context, o SessionListOptions) ([]*Session, string, error) {
	return e.sessions.List(ctx, o)
}

// CheckOwnerPrefix validates a list's prefix of owners, the value of the
// request field field: empty, or printable UTF-8 of at most MaxOwnerLen
// characters.
func CheckOwnerPrefix(field, prefix string) error { return session.CheckOwnerPrefix(field, prefix) }
