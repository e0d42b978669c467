package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Get returns a key, read linearizably, or a *NotFoundError.
func (s *Store) Get(ctx context.Context, key string) (*Entry, error) {
	if err := store.CheckKey("key", key); err != nil {
		return nil, err
	}
	return s.get(ctx, key)
}

func (s *Store) get(ctx context.Context, key string) (*Entry, error) {
	octx, done := s.core.Etcd.Op(ctx)
	resp, err := s.core.Cli.Get(octx, s.core.Keys.KV(key))
	done()
	if err != nil {
		return nil, s.core.Etcd.Err(ctx, fmt.Sprintf("read key %q", key), err)
	}
	if len(resp.Kvs) == 0 {
		return nil, &NotFoundError{Key: key, Revision: resp.Header.Revision}
	}
	return s.entryOf(key, resp.Kvs[0])
}

// Wait is a blocking read, as Consul's: it returns the key once its
// revision passes after, at once if it has already, else at its next put
// or delete (a *NotFoundError), or when wait runs out (the key as it is
// then). A key that does not exist when read at revision R (the
// NotFoundError's) is waited for with after = R. It waits on the
// engine's waiter hub, and may return early, with the key unchanged, when
// the hub no longer holds what happened since after.
func (s *Store) Wait(ctx context.Context, key string, after int64, wait time.Duration) (*Entry, error) {
	if err := store.CheckKey("key", key); err != nil {
		return nil, err
	}
	if after < 0 {
		return nil, store.Invalid("wait_revision", "must be a revision, 0 or more")
	}
	if wait < 0 || wait > s.core.Cfg.MaxWait {
		return nil, store.Invalid("wait", "must be between 0 and %s", s.core.Cfg.MaxWait)
	}
	e, err := s.get(ctx, key)
	if err != nil && !isNotFound(err) || e != nil && e.Revision > after || wait == 0 {
		return e, err
	}
	kw, missed := s.core.WatchKey(s.core.Keys.KV(key), after)
	defer kw.Close()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for !missed {
		var evs []*clientv3.Event
		if evs, missed = kw.Take(); len(evs) > 0 {
			break
		}
		select {
		case <-kw.C():
		case <-timer.C:
			return s.get(ctx, key)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.core.Stop.Done():
			return nil, hold.ErrClosed
		}
	}
	return s.get(ctx, key)
}

func isNotFound(err error) bool {
	_, ok := err.(*NotFoundError)
	return ok
}

// ListOptions selects a page of keys.
type ListOptions struct {
	// Prefix keeps the keys that start with it ("config/" those under
	// config, "config/bil" those that start so).
	Prefix string
	// Limit is the page's size: 1 to hold.MaxListLimit, 0 meaning 100.
	Limit int
	// After resumes a listing after this key (exclusive): the next
	// cursor of the page before.
	After string
}

// listPageBytes bounds the values one page of a listing reads: its limit
// is cut to what fits when values may be large (Config.MaxValueBytes).
const listPageBytes = 16 << 20

// Page is a page of a listing of keys.
type Page struct {
	// Keys are in key order.
	Keys []*Entry
	// Next is the cursor of the next page ("" on the last).
	Next string
	// Revision is the revision the page was read at: a stream of the
	// keys' changes from it (after it) misses none and repeats none.
	Revision int64
}

// List returns a page of keys, with their values, in key order. It reads
// one etcd range with a limit, which on an embedded member reads the
// page alone: its cost grows with the page, not with the keys stored.
// Over a remote etcd, etcd also counts the keys from the cursor to the
// end of the prefix in its in-memory index. A page may hold fewer keys
// than o.Limit when values may be large (listPageBytes), with a cursor.
func (s *Store) List(ctx context.Context, o ListOptions) (*Page, error) {
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit < 1 || o.Limit > hold.MaxListLimit {
		return nil, store.Invalid("limit", "must be between 1 and %d", hold.MaxListLimit)
	}
	if err := store.CheckKeyPrefix("prefix", o.Prefix); err != nil {
		return nil, err
	}
	if o.After != "" && store.CheckKey("cursor", o.After) != nil {
		return nil, store.Invalid("cursor", "is not a cursor returned by a previous page")
	}
	limit := min(o.Limit, max(1, listPageBytes/s.cfg.MaxValueBytes))
	base := s.core.Keys.KVs()
	start := base + o.Prefix
	end := clientv3.GetPrefixRangeEnd(start)
	if after := base + o.After + "\x00"; o.After != "" && after > start {
		start = after
	}
	// Not Cli.Get: etcd would walk its index to the end of the prefix
	// to count it (store.Etcd.GetPage).
	octx, done := s.core.Etcd.Op(ctx)
	resp, err := s.core.Etcd.GetPage(octx, start, end, int64(limit+1))
	done()
	if err != nil {
		return nil, s.core.Etcd.Err(ctx, "list keys", err)
	}
	kvs := resp.Kvs
	p := &Page{Revision: resp.Header.Revision}
	if len(kvs) > limit {
		kvs = kvs[:limit]
		p.Next = string(kvs[limit-1].Key[len(base):])
	}
	p.Keys = make([]*Entry, 0, len(kvs))
	for _, kv := range kvs {
		e, err := s.entryOf(string(kv.Key[len(base):]), kv)
		if err != nil {
			return nil, err
		}
		p.Keys = append(p.Keys, e)
	}
	return p, nil
}

// ValueAt is the value key held at revision rev, as put then: what an
// event stream's replay, which reads the history (which keeps no
// values), sends with a put. ok is false when etcd has compacted rev
// away and the key has changed since.
func (s *Store) ValueAt(ctx context.Context, key string, rev int64) (value json.RawMessage, ok bool, err error) {
	read := func(opts ...clientv3.OpOption) (*mvccpb.KeyValue, error) {
		octx, done := s.core.Etcd.Op(ctx)
		defer done()
		resp, err := s.core.Cli.Get(octx, s.core.Keys.KV(key), opts...)
		if err != nil || len(resp.Kvs) == 0 {
			return nil, err
		}
		return resp.Kvs[0], nil
	}
	kv, err := read(clientv3.WithRev(rev))
	if errors.Is(err, rpctypes.ErrCompacted) {
		kv, err = read() // the put may still be the key's latest
	}
	if err != nil {
		return nil, false, s.core.Etcd.Err(ctx, fmt.Sprintf("read key %q at revision %d", key, rev), err)
	}
	if kv == nil || kv.ModRevision != rev {
		return nil, false, nil
	}
	var rec store.KeyRecord
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return nil, false, fmt.Errorf("decode key %q: %w", key, err)
	}
	return rec.Value, true, nil
}
