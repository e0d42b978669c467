package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// GetLock reads a lock key (linearizably); ErrNotHeld when absent.
func (e *Engine) GetLock(ctx context.Context, name string, opts ...clientv3.OpOption) (*mvccpb.KeyValue, error) {
	octx, done := e.Etcd.Op(ctx)
	defer done()
	resp, err := e.Cli.Get(octx, e.Keys.Lock(name), opts...)
	if err != nil {
		return nil, e.Etcd.Err(ctx, "get lock", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, hold.ErrNotHeld
	}
	return resp.Kvs[0], nil
}

// HeldWith returns the holder record of name if token holds it.
func (e *Engine) HeldWith(ctx context.Context, name string, token int64) (store.Holder, error) {
	if token <= 0 {
		return store.Holder{}, hold.Invalid("token", "must be a positive fencing token")
	}
	kv, err := e.GetLock(ctx, name)
	if err != nil {
		return store.Holder{}, err
	}
	if kv.ModRevision != token {
		return store.Holder{}, fmt.Errorf("%w: held with token %d", hold.ErrTokenMismatch, kv.ModRevision)
	}
	return store.DecodeHolder(kv)
}

// LeaseTimes caches one lease's answer across a listing.
type LeaseTimes struct {
	at      time.Time
	granted time.Duration
}

// DecodeLock renders a lock key with its expiry looked up in etcd.
func (e *Engine) DecodeLock(ctx context.Context, kv *mvccpb.KeyValue, expiry map[string]LeaseTimes) (*hold.Lock, error) {
	hr, err := store.DecodeHolder(kv)
	if err != nil {
		return nil, err
	}
	name := string(kv.Key[len(e.Keys.Locks()):])
	l := hold.ToLock(hr, name, kv.ModRevision)
	if t, ok := expiry[hr.Lease]; ok {
		l.ExpiresAt = t.at
		if l.TTL == 0 {
			l.TTL = t.granted
		}
	} else if id, ok := store.ParseLeaseHex(hr.Lease); ok {
		e.FillLease(ctx, l, id)
		if expiry != nil {
			expiry[hr.Lease] = LeaseTimes{at: l.ExpiresAt, granted: l.TTL}
		}
	}
	return l, nil
}

// leaseExpiry says when lease runs out, and the TTL it was granted with:
// from the node's lease clock (hold/leaseclock.go) if it knows, or else as
// etcd answers, which it then remembers. etcd answers in whole seconds,
// rounded down, so the expiry is never later than the truth.
func (e *Engine) leaseExpiry(ctx context.Context, id clientv3.LeaseID) (time.Time, time.Duration) {
	now := time.Now()
	if at, granted, ok := e.LeaseClock.Expiry(id, now); ok {
		return ExpiryAt(at, 0), granted
	}
	octx, done := e.Etcd.Op(ctx)
	defer done()
	resp, err := e.Cli.TimeToLive(octx, id)
	if err != nil || resp.TTL < 0 {
		return ExpiryAt(now, 0), 0
	}
	ttl, granted := time.Duration(resp.TTL)*time.Second, time.Duration(resp.GrantedTTL)*time.Second
	e.LeaseClock.Saw(id, now, ttl, granted)
	return ExpiryAt(now, ttl), granted
}

// ExpiryAt is when a lease with ttl left at from runs out, as the API
// shows it: UTC, to the millisecond.
func ExpiryAt(from time.Time, ttl time.Duration) time.Time {
	return from.Add(ttl).UTC().Truncate(time.Millisecond)
}

// FillLease sets l's expiry, and its TTL when the holder record has none
// (a session lock's TTL is its session's).
func (e *Engine) FillLease(ctx context.Context, l *hold.Lock, id clientv3.LeaseID) {
	var granted time.Duration
	l.ExpiresAt, granted = e.leaseExpiry(ctx, id)
	if l.TTL == 0 {
		l.TTL = granted
	}
}

// SeatOf is the key name the hold token of name is kept under: name
// itself, but for a thing with seats the seat whose ModRevision is
// token. The seats are read keys only (at most a semaphore's limit, or a
// read/write lock's MaxReaders and its writer, from etcd's index), locally first: a hold's seat never changes while it lasts,
// and the end txn compares ModRevision == token anyway. Only when the
// local read finds no such seat is it read again linearizably.
// ErrNotHeld when no seat has token.
func (e *Engine) SeatOf(ctx context.Context, name string, token int64) (string, error) {
	if !store.HasSeats(name) || strings.IndexByte(name, store.SeatSep) >= 0 {
		return name, nil
	}
	if token <= 0 {
		return "", hold.Invalid("token", "must be a positive fencing token")
	}
	read := func(opts ...clientv3.OpOption) (string, error) {
		octx, done := e.Etcd.Op(ctx)
		defer done()
		resp, err := e.Cli.Get(octx, store.SeatsOf(e.Keys.Locks(), name), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithMinModRev(token), clientv3.WithMaxModRev(token)}, opts...)...)
		if err != nil {
			return "", e.Etcd.Err(ctx, "read semaphore", err)
		}
		if len(resp.Kvs) == 0 {
			return "", hold.ErrNotHeld
		}
		return strings.TrimPrefix(string(resp.Kvs[0].Key), e.Keys.Locks()), nil
	}
	if !e.Etcd.MemberStopped() {
		if seat, err := read(clientv3.WithSerializable()); err == nil {
			return seat, nil
		}
	}
	return read()
}

// ReadSession reads a session record for an ownership check: from the
// member's local state first (no ReadIndex round), since a session record
// is written once and never changed, and a caller that then requires the
// key's CreateRevision in its txn acts on exactly what it read. Only a
// session the local state does not show is looked up linearizably.
func (e *Engine) ReadSession(ctx context.Context, id string) (hold.SessionRecord, int64, error) {
	if !e.Etcd.MemberStopped() {
		if rec, rev, err := e.SessionRecordWith(ctx, id, clientv3.WithSerializable()); err == nil {
			return rec, rev, nil
		}
	}
	return e.SessionRecordWith(ctx, id)
}

// SessionRecordWith reads a session record and its key's CreateRevision.
func (e *Engine) SessionRecordWith(ctx context.Context, id string, opts ...clientv3.OpOption) (hold.SessionRecord, int64, error) {
	var rec hold.SessionRecord
	octx, done := e.Etcd.Op(ctx)
	defer done()
	resp, err := e.Cli.Get(octx, e.Keys.Session(id), opts...)
	if err != nil {
		return rec, 0, e.Etcd.Err(ctx, "get session", err)
	}
	if len(resp.Kvs) == 0 {
		return rec, 0, hold.ErrSessionNotFound
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return rec, 0, fmt.Errorf("decode session record: %w", err)
	}
	return rec, resp.Kvs[0].CreateRevision, nil
}
