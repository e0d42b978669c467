package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// This file holds the plain calls, one per endpoint of the API. Which of
// them are retried on another node after a 503 or a transport error is
// decided per call, and said in its doc comment:
//
//   - reads are retried;
//   - renewals are retried: renewing twice is renewing;
//   - release and session delete are retried: they name the token (or the
//     session), so a repeat can never end someone else's hold, and the
//     hold ends either way. A repeat may answer not_held for what an
//     earlier, lost-in-transit attempt did; the error then says so;
//   - fenced writes are retried: a repeat carries the same token, so the
//     register rejects it wherever it would have rejected the original;
//   - acquire (without a session), session create and revoke are not: a
//     repeat could take a second hold, make a second lease, or revoke the
//     next holder's lock. They fail with ErrUnavailable, outcome unknown.
//
// Every call moves on to the next endpoint when a connection cannot be
// made at all: the request never left, so that is safe for any call.

// Get returns the lock's holder and its queue of waiters. It returns
// ErrNotHeld when nobody holds it. Retried.
func (c *Client) Get(ctx context.Context, name string) (*LockInfo, error) {
	var w wireLock
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("get lock %q", name), method: http.MethodGet, path: "/v1/locks/" + pathEscape(name), idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	l := w.info()
	return &l, nil
}

// ListOptions select a page of held locks.
type ListOptions struct {
	// Prefix keeps the locks whose name starts with it.
	Prefix string
	// Limit is the page size, 1-1000; 0 means the server's default (100).
	Limit int
	// Cursor is the next cursor of the previous page; empty for the first.
	Cursor string
}

// query is o as a listing's query string.
func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Prefix != "" {
		q.Set("prefix", o.Prefix)
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// Locks returns a page of held locks sorted by name, and the cursor of the
// next page, empty on the last page. Retried.
func (c *Client) Locks(ctx context.Context, o ListOptions) ([]LockInfo, string, error) {
	q := o.query()
	var w struct {
		Locks      []wireLock `json:"locks"`
		NextCursor string     `json:"next_cursor"`
	}
	if _, err := c.do(ctx, request{op: "list locks", method: http.MethodGet, path: "/v1/locks", query: q, idempotent: true}, &w); err != nil {
		return nil, "", err
	}
	out := make([]LockInfo, len(w.Locks))
	for i := range w.Locks {
		out[i] = w.Locks[i].info()
	}
	return out, w.NextCursor, nil
}

// Renew extends the lease of the lock that token holds (for a lock in a
// session: the session's lease) and returns the lock with its new expiry.
// It returns ErrNotHeld or ErrTokenMismatch when token no longer holds it.
// Retried. A *Lock from Acquire renews itself: this is for holders that
// keep the token only, such as a CLI between invocations.
func (c *Client) Renew(ctx context.Context, name string, token int64) (*LockInfo, error) {
	return c.renew(ctx, name, token, 0)
}

func (c *Client) renew(ctx context.Context, name string, token int64, timeout time.Duration) (*LockInfo, error) {
	var w wireLock
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("renew %q", name), method: http.MethodPost, path: "/v1/locks/" + pathEscape(name) + "/renew",
		body: struct {
			Token int64 `json:"token"`
		}{token}, idempotent: true, timeout: timeout,
	}, &w); err != nil {
		return nil, err
	}
	l := w.info()
	return &l, nil
}

// Release ends the hold of token on name. A stale token never touches a
// newer holder: it returns ErrTokenMismatch, and ErrNotHeld when nobody
// holds the lock. Retried (see above): if an earlier attempt may have
// released it, a not_held answer says so.
func (c *Client) Release(ctx context.Context, name string, token int64) error {
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("release %q", name), method: http.MethodDelete, path: "/v1/locks/" + pathEscape(name),
		query: url.Values{"token": {strconv.FormatInt(token, 10)}}, idempotent: true,
	}, nil)
	return err
}

// Revoke forcibly ends whatever hold the lock has (an operator's action),
// recorded with reason; the lock's lock-delay then applies. It returns
// ErrNotHeld when nobody holds it. Not retried: it names no token, so a
// repeat could revoke the next holder. On ErrUnavailable the outcome is
// unknown: look with Get.
func (c *Client) Revoke(ctx context.Context, name, reason string) error {
	var body any
	if reason != "" {
		body = struct {
			Reason string `json:"reason"`
		}{reason}
	}
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("revoke %q", name), method: http.MethodPost, path: "/v1/locks/" + pathEscape(name) + "/revoke", body: body,
	}, nil)
	return err
}

// CreateSession makes a session: one lease of ttl (0 means the server's
// default, 30s) that many locks can share. owner labels it; empty means
// the client's address. Not retried: a repeat would make a second session.
// On ErrUnavailable the outcome is unknown; a session made anyway expires
// after ttl.
func (c *Client) CreateSession(ctx context.Context, owner string, ttl time.Duration) (*Session, error) {
	body := struct {
		TTL   string `json:"ttl,omitempty"`
		Owner string `json:"owner,omitempty"`
	}{Owner: owner}
	if ttl != 0 {
		body.TTL = ttl.String()
	}
	var w wireSession
	if _, err := c.do(ctx, request{op: "create session", method: http.MethodPost, path: "/v1/sessions", body: body}, &w); err != nil {
		return nil, err
	}
	return w.session(), nil
}

// GetSession returns the session with its expiry and its locks, or
// ErrSessionNotFound. Retried.
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	var w wireSession
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("get session %s", id), method: http.MethodGet, path: "/v1/sessions/" + pathEscape(id), idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	return w.session(), nil
}

// RenewSession extends the session by its TTL, and with it every lock in
// it. It returns ErrSessionNotFound when the session has ended. Retried.
func (c *Client) RenewSession(ctx context.Context, id string) (*Session, error) {
	var w wireSession
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("renew session %s", id), method: http.MethodPost, path: "/v1/sessions/" + pathEscape(id) + "/renew", idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	return w.session(), nil
}

// DeleteSession ends the session and releases every lock in it. It returns
// ErrSessionNotFound when the session has ended already. Retried, like
// Release.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{
		op: fmt.Sprintf("delete session %s", id), method: http.MethodDelete, path: "/v1/sessions/" + pathEscape(id), idempotent: true,
	}, nil)
	return err
}

// PutFenced writes value (anything encoding/json can encode; a
// json.RawMessage goes as is) to the fenced register resource, unless
// token is below the largest token an earlier write carried: then it
// returns ErrStaleToken, and Error.MaxToken is that token. With lock, the
// write also requires that token holds lock at that moment (ErrNotHolder
// otherwise). Retried: a repeat carries the same token, so it can never
// pass where the original would not. (Writes from one holder issued
// concurrently, rather than one after the other, are unordered anyway; a
// retried one may land after a later one.)
func (c *Client) PutFenced(ctx context.Context, resource string, token int64, value any, lock string) (*FencedValue, error) {
	return c.PutFencedWith(ctx, resource, token, value, PutFencedOptions{Lock: lock})
}

// PutFencedOptions say what else a fenced write requires of its token, at
// the moment it is written. At most one may be set.
type PutFencedOptions struct {
	// Lock requires that the token holds this lock (ErrNotHolder
	// otherwise).
	Lock string
	// Election requires that the token leads this election: exactly the
	// leadership whose Token it is (ErrNotHolder otherwise).
	Election string
	// RWLock requires that the token is this read/write lock's current
	// write hold (ErrNotHolder otherwise, a read hold's token included).
	RWLock string
}

// PutFencedWith is PutFenced with what the write requires in o: a lock
// held by the token, the election it leads, or the read/write lock whose
// write hold it is. Retried as PutFenced is.
func (c *Client) PutFencedWith(ctx context.Context, resource string, token int64, value any, o PutFencedOptions) (*FencedValue, error) {
	body := struct {
		Token    int64  `json:"token"`
		Value    any    `json:"value"`
		Lock     string `json:"lock,omitempty"`
		Election string `json:"election,omitempty"`
		RWLock   string `json:"rwlock,omitempty"`
	}{token, value, o.Lock, o.Election, o.RWLock}
	var w wireFenced
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("put fenced %q", resource), method: http.MethodPut, path: "/v1/fenced/" + pathEscape(resource), body: body, idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	return w.fenced(), nil
}

// GetFenced reads a fenced register, or returns ErrNotFound. Retried.
func (c *Client) GetFenced(ctx context.Context, resource string) (*FencedValue, error) {
	var w wireFenced
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("get fenced %q", resource), method: http.MethodGet, path: "/v1/fenced/" + pathEscape(resource), idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	return w.fenced(), nil
}

// HistoryOptions filter the audit trail; they combine.
type HistoryOptions struct {
	Lock string
	// Kind keeps the events about one kind of thing (lock, election,
	// semaphore, rwlock, fence), and Name, with it, those about the thing
	// of that name.
	Kind, Name string
	Owner      string
	// Types keeps these event types (acquired, released, expired,
	// revoked, session_expired; elected, resigned, proclaimed…).
	Types []string
	// From and To keep events at or after From and before To.
	From, To time.Time
	// Before keeps events recorded before this revision: pass the next
	// before of the previous page.
	Before int64
	// Limit is the page size, 1-1000; 0 means the server's default (100).
	Limit int
}

// History returns a page of the audit trail, newest first, and the before
// of the next page, 0 on the last page. Retried.
func (c *Client) History(ctx context.Context, o HistoryOptions) ([]Event, int64, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("lock", o.Lock)
	set("kind", o.Kind)
	set("name", o.Name)
	set("owner", o.Owner)
	set("type", strings.Join(o.Types, ","))
	if !o.From.IsZero() {
		q.Set("from", o.From.UTC().Format(time.RFC3339Nano))
	}
	if !o.To.IsZero() {
		q.Set("to", o.To.UTC().Format(time.RFC3339Nano))
	}
	if o.Before != 0 {
		q.Set("before", strconv.FormatInt(o.Before, 10))
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var w struct {
		Events     []wireEvent `json:"events"`
		NextBefore int64       `json:"next_before"`
	}
	if _, err := c.do(ctx, request{op: "history", method: http.MethodGet, path: "/v1/history", query: q, idempotent: true}, &w); err != nil {
		return nil, 0, err
	}
	out := make([]Event, len(w.Events))
	for i := range w.Events {
		out[i] = w.Events[i].event()
	}
	return out, w.NextBefore, nil
}

// Cluster returns the etcd members, the leader, the raft term and the
// current revision. Retried.
func (c *Client) Cluster(ctx context.Context) (*ClusterInfo, error) {
	var w struct {
		Members []struct {
			ID         string   `json:"id"`
			Name       string   `json:"name"`
			PeerURLs   []string `json:"peer_urls"`
			ClientURLs []string `json:"client_urls"`
			IsLeader   bool     `json:"is_leader"`
		} `json:"members"`
		Leader   string `json:"leader"`
		RaftTerm uint64 `json:"raft_term"`
		Revision int64  `json:"revision"`
	}
	if _, err := c.do(ctx, request{op: "cluster", method: http.MethodGet, path: "/v1/cluster", idempotent: true}, &w); err != nil {
		return nil, err
	}
	out := &ClusterInfo{Leader: w.Leader, RaftTerm: w.RaftTerm, Revision: w.Revision, Members: make([]Member, len(w.Members))}
	for i, m := range w.Members {
		out.Members[i] = Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLeader: m.IsLeader}
	}
	return out, nil
}
