package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A session bound to a stream (ZooKeeper's session tied to its
// connection) lives while a client holds its stream open on some node,
// and ends once no stream has been open for its grace. Its lease is the
// session's as for any other, but only a node serving its stream keeps
// it alive, and the node where the last stream closed revokes it when
// the grace has passed; so the session ends, with its holds
// (session_expired), within the grace of the stream's close, and a node
// that dies ends its streams' sessions by their leases' TTL instead.
//
// Which node may end the session is kept in its stream record
// (Keys.SessionStream, under the session's lease): each attach and each
// detach rewrites it, and the end is a txn that compares its ModRevision
// with the detach's and marks it ended before the lease is revoked. So
// a client that reopens the stream on another node within the grace
// takes the session over (its attach changes the record, and the old
// node's end fails), and one that reopens it too late finds it ended.
// A session is created detached: its creating node gives it the grace
// to attach a first stream.

// BindStream is the binding of a session that lives while its stream is
// open.
const BindStream = "stream"

const (
	// MinGrace and MaxGrace bound a stream-bound session's grace.
	MinGrace = 500 * time.Millisecond
	MaxGrace = time.Minute
	// DefaultGrace is the grace when the request names none.
	DefaultGrace = 2 * time.Second
	// KeepAliveEvery is how often a node serving a stream renews its
	// session's lease. The lease's TTL exceeds the grace by at least
	// this much (StreamLeaseTTL), so a lease left unrenewed at a
	// stream's close outlives the grace, and the node that ends the
	// session at the grace's end is what ends it.
	KeepAliveEvery = 500 * time.Millisecond
)

// StreamLeaseTTL is the lease of a stream-bound session of grace: the
// grace and one renewal, in whole seconds, and at least minTTL.
func StreamLeaseTTL(grace, minTTL time.Duration) time.Duration {
	return max(minTTL, (grace+KeepAliveEvery+time.Second-1)/time.Second*time.Second)
}

// streamRecord is the value of a stream-bound session's stream record.
type streamRecord struct {
	// Node names the node that last attached or detached the stream.
	Node string `json:"node"`
	// Open says a stream is open; Since is when it opened or closed.
	Open  bool      `json:"open"`
	Since time.Time `json:"since"`
	// Ended says the node where it closed ends the session: no stream
	// may attach any more.
	Ended bool `json:"ended,omitempty"`
}

// CheckGrace checks a stream-bound session's grace.
func CheckGrace(grace time.Duration) error {
	if grace < MinGrace || grace > MaxGrace {
		return hold.Invalid("grace", "must be between %s and %s", MinGrace, MaxGrace)
	}
	return nil
}

// Stream is a stream of a stream-bound session attached on this node:
// while it is open the node keeps the session's lease alive (KeepAlive),
// and Close starts the grace after which the session ends.
type Stream struct {
	m     *Registry
	id    string
	lease clientv3.LeaseID
	grace time.Duration
	rev   int64 // the stream record's ModRevision after our attach
}

// Attach opens a stream of the stream-bound session id on this node.
// ErrSessionNotFound when the session is gone, or ended by its grace;
// an invalid-request error naming session when it is not bound to a
// stream.
func (m *Registry) Attach(ctx context.Context, id string) (*Stream, error) {
	lid, err := m.SessionLease(id)
	if err != nil {
		return nil, err
	}
	id = store.LeaseHex(lid)
	rec, _, err := m.core.SessionRecordWith(ctx, id)
	if err != nil {
		return nil, err
	}
	if !hold.MayActOn(ctx, rec.Credential) {
		return nil, fmt.Errorf("session %s was created by another credential: %w", id, hold.ErrNotOwner)
	}
	if rec.Bind != BindStream {
		return nil, hold.Invalid("session", "session %s is not bound to a stream: it lives by its ttl and renewals", id)
	}
	key := m.core.Keys.SessionStream(id)
	for range 8 {
		octx, done := m.core.Etcd.Op(ctx)
		resp, err := m.core.Cli.Get(octx, key)
		done()
		if err != nil {
			return nil, m.core.Etcd.Err(ctx, "attach session stream", err)
		}
		var cur streamRecord
		if len(resp.Kvs) == 0 || json.Unmarshal(resp.Kvs[0].Value, &cur) != nil || cur.Ended {
			return nil, hold.ErrSessionNotFound
		}
		rev, ok, err := m.putStream(ctx, id, lid, resp.Kvs[0].ModRevision, streamRecord{Node: m.node, Open: true, Since: store.NowUTC()})
		if err != nil {
			return nil, err
		}
		if ok {
			// Renew at once: the last renewal may be a TTL old (streams
			// closed within a renewal interval, or a node that stopped
			// renewing), and the next comes KeepAliveEvery later. So a
			// stream's close always finds a renewal within KeepAliveEvery.
			st := &Stream{m: m, id: id, lease: lid, grace: rec.Grace, rev: rev}
			if err := st.KeepAlive(ctx); errors.Is(err, hold.ErrSessionNotFound) {
				return nil, err
			}
			return st, nil
		}
	}
	return nil, fmt.Errorf("session %s's stream changes hands too fast: %w", id, hold.ErrUnavailable)
}

// putStream rewrites session id's stream record to rec if its
// ModRevision is still rev, and returns the new one; ok is false when
// it was not.
func (m *Registry) putStream(ctx context.Context, id string, lid clientv3.LeaseID, rev int64, rec streamRecord) (int64, bool, error) {
	key := m.core.Keys.SessionStream(id)
	var resp *clientv3.TxnResponse
	err := m.core.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = m.core.Cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, store.MustJSON(rec), clientv3.WithLease(lid))).Commit()
		return err
	})
	switch {
	case store.IsLeaseNotFound(err):
		return 0, false, hold.ErrSessionNotFound
	case err != nil:
		return 0, false, m.core.Etcd.Err(ctx, "session stream", err)
	}
	return resp.Header.Revision, resp.Succeeded, nil
}

// KeepAlive renews the session's lease once; ErrSessionNotFound when the
// session is over. The stream's server calls it every KeepAliveEvery.
func (s *Stream) KeepAlive(ctx context.Context) error {
	octx, done := s.m.core.Etcd.Op(ctx)
	_, err := s.m.core.Cli.KeepAliveOnce(octx, s.lease)
	done()
	if store.IsLeaseNotFound(err) {
		return hold.ErrSessionNotFound
	}
	if err != nil {
		return s.m.core.Etcd.Err(ctx, "keep session alive", err)
	}
	return nil
}

// Grace is the session's grace.
func (s *Stream) Grace() time.Duration { return s.grace }

// ID is the session's.
func (s *Stream) ID() string { return s.id }

// Close records that the stream closed and starts its grace: unless a
// stream attaches again meanwhile, on any node, the session ends when
// the grace has passed. A stream that another attach took over already
// has nothing to close. When etcd cannot record the close (no leader),
// the grace runs from now all the same, against the record as our
// attach left it: the end then requires that no stream attached since.
func (s *Stream) Close() {
	ctx, done := s.m.core.Etcd.CleanupCtx()
	rev, ok, err := s.m.putStream(ctx, s.id, s.lease, s.rev, streamRecord{Node: s.m.node, Since: store.NowUTC()})
	done()
	switch {
	case errors.Is(err, hold.ErrSessionNotFound), err == nil && !ok:
		return
	case err != nil:
		rev = s.rev
	}
	s.m.endAfterGrace(s.id, s.lease, rev, s.grace)
}

// endAfterGrace ends the stream-bound session id once grace has passed,
// if its stream record is still at rev (no stream attached since). It
// runs until the engine stops: a node that stops first leaves the end to
// the lease's TTL.
func (m *Registry) endAfterGrace(id string, lid clientv3.LeaseID, rev int64, grace time.Duration) {
	go func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-m.core.Stop.Done():
			return
		}
		// A failure to reach etcd (no leader) is tried again until the
		// session ends, by us or its lease, or a stream attaches: giving
		// up would leave the end to the lease, which etcd extends by its
		// TTL at every change of leader.
		for {
			ctx, done := m.core.Etcd.CleanupCtx()
			_, ok, err := m.putStream(ctx, id, lid, rev, streamRecord{Node: m.node, Since: store.NowUTC(), Ended: true})
			done()
			switch {
			case err == nil && ok:
				// The revoke deletes the session's keys, its holds among
				// them; the expiry recorder records their ends as
				// session_expired.
				m.core.RevokeLease(id)
				return
			case err == nil, errors.Is(err, hold.ErrSessionNotFound):
				return // a stream attached again, or the session is over
			}
			select {
			case <-time.After(KeepAliveEvery / 5):
			case <-m.core.Stop.Done():
				return
			}
		}
	}()
}
