package client

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// This file holds what the things with seats share: a semaphore's permit
// and a read/write lock's hold are both the API's Hold, acquired, renewed,
// released and revoked by token under their thing's path, listed and
// paged alike, and kept by the same hold machinery (hold.go). A seatKind
// says what differs; semaphore.go and rwlock.go hold one each.

// seatKind is one kind of thing with seats: H is its hold as the client
// describes it (PermitInfo, RWHoldInfo), T the thing (SemaphoreInfo,
// RWLockInfo).
type seatKind[H, T any] struct {
	kind string // as the audit trail names it, and in "get KIND NAME"
	path string // the collection: "/v1/semaphores"
	list string // the listing's member, and what "list" names
	// holdOp names a call (verb: renew, release, revoke) on one hold of
	// name, for errors.
	holdOp func(verb, name string, token int64) string
	hold   func(*wireHold) H
	thing  func(*wireSeats) T
	// listed picks this kind's things out of a listing's page.
	listed func(*wireSeatsPage) []wireSeats
}

// wireHold is a Hold as the API sends it: a permit (with limit) or a
// read/write lock's hold (with mode).
type wireHold struct {
	Name       string            `json:"name"`
	Mode       string            `json:"mode"`
	Owner      string            `json:"owner"`
	Token      int64             `json:"token"`
	Limit      int               `json:"limit"`
	Session    string            `json:"session"`
	TTL        wireDuration      `json:"ttl"`
	AcquiredAt wireTime          `json:"acquired_at"`
	ExpiresAt  wireTime          `json:"expires_at"`
	MinHold    wireDuration      `json:"min_hold"`
	Metadata   map[string]string `json:"metadata"`
}

// holdInfos converts ws with hold; nil stays nil.
func holdInfos[H any](ws []wireHold, hold func(*wireHold) H) []H {
	if ws == nil {
		return nil
	}
	out := make([]H, len(ws))
	for i := range ws {
		out[i] = hold(&ws[i])
	}
	return out
}

// wireSeats is a semaphore (with limit) or a read/write lock (with mode)
// as the API sends it.
type wireSeats struct {
	Name    string       `json:"name"`
	Mode    string       `json:"mode"`
	Limit   int          `json:"limit"`
	Holders []wireHold   `json:"holders"`
	Waiters []wireWaiter `json:"waiters"`
}

func (w *wireSeats) waiters() []Waiter {
	var out []Waiter
	for _, x := range w.Waiters {
		out = append(out, x.waiter())
	}
	return out
}

// wireSeatsPage is a page of a listing: its things come under their
// kind's member.
type wireSeatsPage struct {
	Semaphores []wireSeats `json:"semaphores"`
	RWLocks    []wireSeats `json:"rwlocks"`
	NextCursor string      `json:"next_cursor"`
}

// holdOptions are the options of every acquire of a seat. PermitOptions
// and RWOptions have exactly its fields, and convert to it.
type holdOptions struct {
	Owner    string
	TTL      time.Duration
	Wait     time.Duration
	Session  string
	MinHold  time.Duration
	Metadata map[string]string
}

// seatRequest is the part of an acquire's body that every kind has; the
// kind's own member (limit, mode) comes beside it.
type seatRequest struct {
	Owner     string            `json:"owner,omitempty"`
	TTL       string            `json:"ttl,omitempty"`
	Session   string            `json:"session,omitempty"`
	Wait      string            `json:"wait,omitempty"`
	KeepPlace bool              `json:"keep_place,omitempty"`
	MinHold   string            `json:"min_hold,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// request is the body's common part for a request that waits up to wait,
// and with keep keeps the session's place in line when that runs out.
func (o holdOptions) request(wait time.Duration, keep bool) seatRequest {
	r := seatRequest{Owner: o.Owner, Session: o.Session, KeepPlace: keep, Metadata: o.Metadata}
	if o.TTL != 0 {
		r.TTL = o.TTL.String()
	}
	if wait != 0 {
		r.Wait = wait.String()
	}
	if o.MinHold != 0 {
		r.MinHold = o.MinHold.String()
	}
	return r
}

func (k *seatKind[H, T]) thingPath(name string) string { return k.path + "/" + pathEscape(name) }

// take sends the acquire request, over as many requests as o.Wait takes
// (inLine), each with the body body makes for its wait, and keeps the
// seat it grants: renewed in the background until released or lost. It
// is never retried once the request may have reached a node: each
// request may take a seat of its own.
func (k *seatKind[H, T]) take(ctx context.Context, c *Client, op, name string, body func(wait time.Duration, keep bool) any, o holdOptions) (*seat, error) {
	// sent is when the request left, on the monotonic clock: whatever
	// lease the server grants, it grants after that.
	var (
		sent   time.Time
		w      wireHold
		status int
	)
	err := c.inLine(ctx, op, o.Session, o.Wait, func(ctx context.Context, wait time.Duration, keep bool) (err error) {
		sent = time.Now()
		status, err = c.do(ctx, request{
			op: op, method: http.MethodPost, path: k.thingPath(name), body: body(wait, keep), timeout: c.timeout + max(wait, 0),
		}, &w)
		return err
	}, func() { _ = k.release(context.WithoutCancel(ctx), c, name, w.Token) })
	if err != nil {
		return nil, err
	}
	s := &seat{hold: newHold(c, holdKey{thing{k.kind, w.Name}, w.Token}), info: w}
	s.hold.ops = holdOps{
		renew: func(ctx context.Context, timeout time.Duration) (time.Duration, error) {
			w, err := k.renew(ctx, c, s.hold.key.name, s.hold.key.token, timeout)
			if err != nil {
				return 0, err
			}
			return s.renewed(w), nil
		},
		release: func(ctx context.Context) error { return k.release(ctx, c, s.hold.key.name, s.hold.key.token) },
	}
	acquired, expires := time.Time(w.AcquiredAt), time.Time(w.ExpiresAt)
	g := grant{status: status, sent: sent, ttl: time.Duration(w.TTL), left: expires.Sub(acquired), inSession: o.Session != ""}
	if err := s.hold.start(ctx, op, g); err != nil {
		return nil, err
	}
	return s, nil
}

// get reads the thing name with its holds and waiters. Retried.
func (k *seatKind[H, T]) get(ctx context.Context, c *Client, name string) (*T, error) {
	var w wireSeats
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("get %s %q", k.kind, name), method: http.MethodGet, path: k.thingPath(name), idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	t := k.thing(&w)
	return &t, nil
}

// page reads a page of the listing. Retried.
func (k *seatKind[H, T]) page(ctx context.Context, c *Client, o ListOptions) ([]T, string, error) {
	var w wireSeatsPage
	if _, err := c.do(ctx, request{op: "list " + k.list, method: http.MethodGet, path: k.path, query: o.query(), idempotent: true}, &w); err != nil {
		return nil, "", err
	}
	things := k.listed(&w)
	out := make([]T, len(things))
	for i := range things {
		out[i] = k.thing(&things[i])
	}
	return out, w.NextCursor, nil
}

// renewInfo renews the hold that token is, and describes it. Retried.
func (k *seatKind[H, T]) renewInfo(ctx context.Context, c *Client, name string, token int64) (*H, error) {
	w, err := k.renew(ctx, c, name, token, 0)
	if err != nil {
		return nil, err
	}
	h := k.hold(w)
	return &h, nil
}

// renew renews the hold that token is, each attempt bounded by timeout
// (0: the client's). Retried: renewing twice is renewing.
func (k *seatKind[H, T]) renew(ctx context.Context, c *Client, name string, token int64, timeout time.Duration) (*wireHold, error) {
	var w wireHold
	if _, err := c.do(ctx, request{
		op: k.holdOp("renew", name, token), method: http.MethodPost, path: k.thingPath(name) + "/renew",
		body: struct {
			Token int64 `json:"token"`
		}{token}, idempotent: true, timeout: timeout,
	}, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// release ends the hold that token is. Retried: it names the token.
func (k *seatKind[H, T]) release(ctx context.Context, c *Client, name string, token int64) error {
	_, err := c.do(ctx, request{
		op: k.holdOp("release", name, token), method: http.MethodDelete, path: k.thingPath(name),
		query: url.Values{"token": {strconv.FormatInt(token, 10)}}, idempotent: true,
	}, nil)
	return err
}

// revoke ends the hold that token is, recorded with reason. Retried: it
// names the token, so a repeat can end no other hold.
func (k *seatKind[H, T]) revoke(ctx context.Context, c *Client, name string, token int64, reason string) error {
	_, err := c.do(ctx, request{
		op: k.holdOp("revoke", name, token), method: http.MethodPost, path: k.thingPath(name) + "/revoke",
		body: struct {
			Token  int64  `json:"token"`
			Reason string `json:"reason,omitempty"`
		}{token, reason}, idempotent: true,
	}, nil)
	return err
}

// seat is a held permit or read/write lock hold, behind a *Permit or an
// *RWHold: the hold machinery, and the hold as the latest acquire or renew
// described it.
type seat struct {
	hold *hold

	mu   sync.Mutex
	info wireHold
}

// renewed records a renew's answer and returns the TTL it reports. What
// the answer leaves out (metadata, a read/write lock hold's mode) is kept.
func (s *seat) renewed(w *wireHold) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	md, mode := s.info.Metadata, s.info.Mode
	s.info = *w
	if s.info.Metadata == nil {
		s.info.Metadata = md
	}
	if s.info.Mode == "" {
		s.info.Mode = mode
	}
	return time.Duration(w.TTL)
}

// current returns the hold as last described, with metadata of its own.
func (s *seat) current() *wireHold {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.info
	w.Metadata = maps.Clone(w.Metadata)
	return &w
}
