package session

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/core"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Sessions are keyed by lease ID, so an owner prefix is no key range of
// sessions/. Each session therefore has a second key, its owner index
// entry,
//
//	sessionowners/<owner>\x00<id>
//
// holding a copy of the session record. It is written in the same txn as
// the session key and under the same lease, so it exists exactly while the
// session does: a deleted or expired session leaves the index with its
// lease, in the same revision, and nothing ever has to clean it up. Owners
// are printable, so they hold no NUL, and index keys sort by owner, then
// by ID; a page is one range read from the owner prefix with a limit, so
// the sessions of owners outside the prefix cost a listing nothing.
//
// A page is read with store.Etcd.GetPage: on an embedded member, from
// its own store, at most limit+1 entries. Over a remote etcd it is etcd's
// Range, which counts every key from its start to its range end, limit
// or not: a listing without a prefix, or with one that most owners
// share, then walks, in memory, the index entries from the cursor to the
// end of the prefix's range (BenchmarkListSessions measures both).
//
// The alternative, a bounded scan of sessions/ that filters by owner and
// hands back a cursor even when its page is short, would bound each
// request but make a client walk every session of the cluster to find the
// few of one owner. The index costs one more key per session, in the same
// raft entry.

// ListOptions selects sessions for ListSessions.
type ListOptions struct {
	// Prefix keeps only sessions whose owner starts with it.
	Prefix string
	// After resumes a listing after this cursor (exclusive): the Next
	// that ListSessions returned for the previous page.
	After string
	// Limit is the page size; 0 means 100, at most MaxListLimit.
	Limit int
}

// listTTLLookups bounds the lease lookups one page makes at once.
const listTTLLookups = 8

// List is lock.Engine.ListSessions.
func (m *Registry) List(ctx context.Context, o ListOptions) ([]*Session, string, error) {
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit < 1 || o.Limit > hold.MaxListLimit {
		return nil, "", hold.Invalid("limit", "must be between 1 and %d", hold.MaxListLimit)
	}
	if err := CheckOwnerPrefix("prefix", o.Prefix); err != nil {
		return nil, "", err
	}
	base := m.core.Keys.SessionOwners()
	start := base + o.Prefix
	if o.After != "" {
		if !validSessionCursor(o.After) {
			return nil, "", hold.Invalid("cursor", "is not a cursor returned by a previous page")
		}
		if after := base + o.After + "\x00"; after > start {
			start = after
		}
	}
	end := clientv3.GetPrefixRangeEnd(base + o.Prefix)
	octx, done := m.core.Etcd.Op(ctx)
	resp, err := m.core.Etcd.GetPage(octx, start, end, int64(o.Limit+1))
	done()
	if err != nil {
		return nil, "", m.core.Etcd.Err(ctx, "list sessions", err)
	}
	kvs, next := resp.Kvs, ""
	if len(kvs) > o.Limit {
		kvs = kvs[:o.Limit]
		next = string(kvs[len(kvs)-1].Key[len(base):])
	}
	page := make([]*Session, len(kvs))
	for i, kv := range kvs {
		owner, id, ok := strings.Cut(string(kv.Key[len(base):]), "\x00")
		var rec hold.SessionRecord
		if !ok || json.Unmarshal(kv.Value, &rec) != nil {
			m.core.Log.Warn("skip undecodable session index entry", "key", string(kv.Key))
			continue
		}
		page[i] = &Session{ID: id, Owner: owner, TTL: time.Duration(rec.TTL) * time.Second, CreatedAt: rec.CreatedAt, Credential: rec.Credential,
			Bind: rec.Bind, Grace: rec.Grace}
	}
	if err := m.fillSessionExpiries(ctx, page); err != nil {
		return nil, "", err
	}
	out := make([]*Session, 0, len(page))
	for _, s := range page {
		if s != nil && !s.ExpiresAt.IsZero() {
			out = append(out, s)
		}
	}
	return out, next, nil
}

// fillSessionExpiries sets each session's ExpiresAt from its lease. A
// session whose lease ended since the range read keeps a zero ExpiresAt:
// it is gone, and the caller drops it.
func (m *Registry) fillSessionExpiries(ctx context.Context, page []*Session) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, listTTLLookups)
	for _, s := range page {
		if s == nil {
			continue
		}
		lid, ok := store.ParseLeaseHex(s.ID)
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			now := time.Now()
			octx, done := m.core.Etcd.Op(ctx)
			ttl, err := m.core.Cli.TimeToLive(octx, lid)
			done()
			switch {
			case err != nil && !store.IsLeaseNotFound(err):
				mu.Lock()
				if firstErr == nil {
					firstErr = m.core.Etcd.Err(ctx, "list sessions", err)
				}
				mu.Unlock()
			case err == nil && ttl.TTL >= 0:
				s.ExpiresAt = core.ExpiryAt(now, time.Duration(ttl.TTL)*time.Second)
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// CheckOwnerPrefix accepts what may begin an owner, the value of the
// request field field: printable UTF-8 of at most MaxOwnerLen
// characters, or nothing.
func CheckOwnerPrefix(field, p string) error {
	if p == "" {
		return nil
	}
	if !utf8.ValidString(p) || utf8.RuneCountInString(p) > hold.MaxOwnerLen {
		return hold.Invalid(field, "must be valid UTF-8 of at most %d characters", hold.MaxOwnerLen)
	}
	for _, r := range p {
		if !unicode.IsPrint(r) {
			return hold.Invalid(field, "must contain only printable characters")
		}
	}
	return nil
}

// validSessionCursor reports whether c has the shape of a ListSessions
// cursor: an owner, a NUL and a session ID.
func validSessionCursor(c string) bool {
	owner, id, ok := strings.Cut(c, "\x00")
	if !ok || hold.CheckOwner(owner) != nil {
		return false
	}
	_, ok = store.ParseLeaseHex(id)
	return ok
}

// indexLegacySession gives a session that has no owner index entry (one
// created before the index existed) its entry, under its lease, so that
// it is listed from now on. It costs a renew one local read; the write
// happens once per such session, and only while its session key exists.
// Failing only leaves the session unlisted, so errors are logged, not
// returned.
func (m *Registry) indexLegacySession(ctx context.Context, lid clientv3.LeaseID, id string, rec hold.SessionRecord) {
	ikey := m.core.Keys.SessionOwner(rec.Owner, id)
	var local []clientv3.OpOption
	if !m.core.Etcd.MemberStopped() {
		local = []clientv3.OpOption{clientv3.WithSerializable()}
	}
	octx, done := m.core.Etcd.Op(ctx)
	defer done()
	got, err := m.core.Cli.Get(octx, ikey, append(local, clientv3.WithCountOnly())...)
	if err != nil || got.Count > 0 {
		return
	}
	skey := m.core.Keys.Session(id)
	_, err = m.core.Cli.Txn(octx).
		If(clientv3.Compare(clientv3.CreateRevision(skey), ">", 0), clientv3.Compare(clientv3.CreateRevision(ikey), "=", 0)).
		Then(clientv3.OpPut(ikey, store.MustJSON(rec), clientv3.WithLease(lid))).
		Commit()
	if err != nil && !store.IsLeaseNotFound(err) {
		m.core.Log.Debug("index session by owner", "session", id, "err", err)
	}
}
