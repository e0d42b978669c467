package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Key is a key of coordination data (docs/API.md, "Keys").
type Key struct {
	Key   string
	Value json.RawMessage
	// Revision is the revision of the key's last put; CreatedRevision
	// that of the put that created it; Version how many puts it has had
	// since (1 for a new key).
	Revision, CreatedRevision, Version int64
	// Session is the session the key is bound to: it is deleted when the
	// session ends.
	Session string
}

// Decode decodes the key's value into v, as json.Unmarshal does.
func (k *Key) Decode(v any) error { return json.Unmarshal(k.Value, v) }

type wireKey struct {
	Key             string          `json:"key"`
	Value           json.RawMessage `json:"value"`
	Revision        int64           `json:"revision"`
	CreatedRevision int64           `json:"created_revision"`
	Version         int64           `json:"version"`
	Session         string          `json:"session"`
}

func (w *wireKey) key() *Key {
	return &Key{Key: w.Key, Value: w.Value, Revision: w.Revision, CreatedRevision: w.CreatedRevision, Version: w.Version, Session: w.Session}
}

// Fence names the hold a key's write requires: Kind "lock", "election",
// "semaphore" or "rwlock" (its write hold), the thing's Name, and the
// hold's Token. The write happens only while that hold is current;
// otherwise it returns ErrStaleToken.
type Fence struct {
	Kind, Name string
	Token      int64
}

// fenceBody is a Fence as a request body's members.
type fenceBody struct {
	Lock      string `json:"lock,omitempty"`
	Election  string `json:"election,omitempty"`
	Semaphore string `json:"semaphore,omitempty"`
	RWLock    string `json:"rwlock,omitempty"`
	Token     *int64 `json:"token,omitempty"`
}

func (f *Fence) body() (fenceBody, error) {
	var b fenceBody
	if f == nil {
		return b, nil
	}
	switch f.Kind {
	case "lock":
		b.Lock = f.Name
	case "election":
		b.Election = f.Name
	case "semaphore":
		b.Semaphore = f.Name
	case "rwlock":
		b.RWLock = f.Name
	default:
		return b, fmt.Errorf("client: a fence's Kind is lock, election, semaphore or rwlock, not %q", f.Kind)
	}
	b.Token = &f.Token
	return b, nil
}

// PutKeyOptions say what a put compares, binds and requires. The zero
// value puts unconditionally.
type PutKeyOptions struct {
	// IfRevision, when set, makes the put a compare-and-set: it happens
	// only if the key's revision is *IfRevision (0: the key must not
	// exist). Otherwise ErrRevisionMismatch, with the key's revision in
	// Error.Revision.
	IfRevision *int64
	// Session binds the key to that session: it is deleted when the
	// session ends (ZooKeeper's ephemeral node). A put without it unbinds
	// the key.
	Session string
	// Fence makes the put happen only while that hold is current.
	Fence *Fence
}

// Revision is a helper for PutKeyOptions.IfRevision and
// DeleteKeyOptions.IfRevision: Revision(0) creates only.
func Revision(n int64) *int64 { return &n }

// PutKey writes value (anything encoding/json can encode; a
// json.RawMessage goes as is) under key, in one transaction with what o
// compares, and returns the key as written. Errors: ErrRevisionMismatch,
// ErrStaleToken, ErrSessionNotFound, ErrValueTooLarge, ErrTooManyKeys.
// Retried only with IfRevision or a Fence, which make a repeat refuse
// what the first attempt did (an unconditional put could land twice).
func (c *Client) PutKey(ctx context.Context, key string, value any, o PutKeyOptions) (*Key, error) {
	f, err := o.Fence.body()
	if err != nil {
		return nil, err
	}
	body := struct {
		Value      any    `json:"value"`
		IfRevision *int64 `json:"if_revision,omitempty"`
		Session    string `json:"session,omitempty"`
		fenceBody
	}{value, o.IfRevision, o.Session, f}
	var w wireKey
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("put key %q", key), method: http.MethodPut, path: keyPath(key), body: body,
		idempotent: o.IfRevision != nil || o.Fence != nil,
	}, &w); err != nil {
		return nil, err
	}
	return w.key(), nil
}

// GetKey reads a key, linearizably, or returns ErrKeyNotFound (with the
// revision it was found missing at in Error.Revision). Retried.
func (c *Client) GetKey(ctx context.Context, key string) (*Key, error) {
	var w wireKey
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("get key %q", key), method: http.MethodGet, path: keyPath(key), idempotent: true,
	}, &w); err != nil {
		return nil, err
	}
	return w.key(), nil
}

// WaitKey is a blocking read: it returns the key once its revision passes
// after, at once if it has already, else at its next put or delete
// (ErrKeyNotFound), or when wait runs out (the key as it is then; 0
// means the node's default, a minute). To follow a key, pass the last
// revision seen, a missing key's Error.Revision included. It may return
// early with the key unchanged.
func (c *Client) WaitKey(ctx context.Context, key string, after int64, wait time.Duration) (*Key, error) {
	q := url.Values{"wait_revision": {strconv.FormatInt(after, 10)}}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	var w wireKey
	if _, err := c.do(ctx, request{
		op: fmt.Sprintf("wait key %q", key), method: http.MethodGet, path: keyPath(key), query: q, idempotent: true,
		timeout: max(wait, time.Minute) + c.timeout,
	}, &w); err != nil {
		return nil, err
	}
	return w.key(), nil
}

// DeleteKeyOptions say what a delete compares and requires.
type DeleteKeyOptions struct {
	// IfRevision deletes the key only at this revision.
	IfRevision *int64
	// Fence deletes it only while that hold is current.
	Fence *Fence
}

// DeleteKey deletes a key. Errors: ErrKeyNotFound, ErrRevisionMismatch,
// ErrStaleToken. Retried only with IfRevision or a Fence.
func (c *Client) DeleteKey(ctx context.Context, key string, o DeleteKeyOptions) error {
	f, err := o.Fence.body()
	if err != nil {
		return err
	}
	var q url.Values
	if o.IfRevision != nil {
		q = url.Values{"if_revision": {strconv.FormatInt(*o.IfRevision, 10)}}
	}
	r := request{
		op: fmt.Sprintf("delete key %q", key), method: http.MethodDelete, path: keyPath(key), query: q,
		idempotent: o.IfRevision != nil || o.Fence != nil,
	}
	if o.Fence != nil {
		r.body = f
	}
	_, err = c.do(ctx, r, nil)
	return err
}

// KeyPage is a page of keys, in key order.
type KeyPage struct {
	Keys []Key
	// Next is the cursor of the next page ("" on the last).
	Next string
	// Revision is the revision the page was read at: WatchKeys from it
	// misses no change after the page.
	Revision int64
}

// Keys lists the keys under prefix a page at a time (o.Prefix is
// ignored: prefix is the listing's). Retried.
func (c *Client) Keys(ctx context.Context, prefix string, o ListOptions) (*KeyPage, error) {
	o.Prefix = prefix
	var w struct {
		Keys       []wireKey `json:"keys"`
		NextCursor string    `json:"next_cursor"`
		Revision   int64     `json:"revision"`
	}
	if _, err := c.do(ctx, request{op: "list keys", method: http.MethodGet, path: "/v1/kv", query: o.query(), idempotent: true}, &w); err != nil {
		return nil, err
	}
	p := &KeyPage{Keys: make([]Key, len(w.Keys)), Next: w.NextCursor, Revision: w.Revision}
	for i := range w.Keys {
		p.Keys[i] = *w.Keys[i].key()
	}
	return p, nil
}

// keyPath is key's route. Its "/"s are escaped, so that the key is one
// path parameter, as the OpenAPI document says; a node takes them
// unescaped too.
func keyPath(key string) string { return "/v1/kv/" + pathEscape(key) }

// KeyEvent is a change of a key: Type "put" (the Key as the put left it)
// or "delete"; or "gap", when the audit trail lost the changes of
// revisions FromRevision to ToRevision (list the keys again).
type KeyEvent struct {
	Type string
	Key
	FromRevision, ToRevision int64
}

// WatchKeys streams the changes of the keys under prefix after revision
// since (0: from now on), in revision order, each once: GET
// /v1/kv/events. Pass a KeyPage's Revision to watch from a listing. When
// the stream breaks it reconnects by itself, to the next endpoint, with
// Last-Event-ID, and resumes without a gap or a repeat. The iteration
// ends when ctx ends, when the loop breaks, or with an error when a node
// refuses the request itself (a bad prefix, no valid token): no
// reconnection can mend that.
//
// A put replayed from a revision etcd has compacted, of a key that
// changed since, comes without its Value; GetKey reads it.
func (c *Client) WatchKeys(ctx context.Context, prefix string, since int64) iter.Seq2[KeyEvent, error] {
	return func(yield func(KeyEvent, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		out := make(chan KeyEvent, 16)
		s := &keyStream{c: c, prefix: prefix, out: out, since: since, haveBase: since > 0}
		errc := c.stream(ctx, "key events", 0, s, func() { close(out) })
		for ev := range out {
			if !yield(ev, nil) {
				return
			}
		}
		if err := <-errc; err != nil && ctx.Err() == nil {
			yield(KeyEvent{}, err)
		}
	}
}

// keyStream is the state of WatchKeys across connections, as eventStream
// is of Events'.
type keyStream struct {
	c        *Client
	prefix   string
	out      chan<- KeyEvent
	since    int64
	haveBase bool
	// last is the revision of the latest change delivered, and seen the
	// keys of that revision delivered: a connection may break within a
	// revision (a session's end deletes its keys in one).
	last int64
	seen map[string]bool
}

func (s *keyStream) prepare(ctx context.Context) (bool, error) {
	if s.haveBase {
		return true, nil
	}
	ci, err := s.c.Cluster(ctx)
	if err == nil {
		s.since, s.haveBase = ci.Revision, true
	}
	return s.haveBase, err
}

func (s *keyStream) target() (string, url.Values, int64) {
	var q url.Values
	if s.prefix != "" {
		q = url.Values{"prefix": {s.prefix}}
	}
	if s.last > 0 {
		return "/v1/kv/events", q, s.last - 1
	}
	return "/v1/kv/events", q, s.since
}

func (s *keyStream) dispatch(ctx context.Context, id, typ, data string) error {
	var w struct {
		wireKey
		FromRevision int64 `json:"from_revision"`
		ToRevision   int64 `json:"to_revision"`
	}
	if err := json.Unmarshal([]byte(data), &w); err != nil {
		return fmt.Errorf("%w: key stream: bad event %.100q: %w", ErrUnavailable, data, err)
	}
	ev := KeyEvent{Type: typ, Key: *w.key(), FromRevision: w.FromRevision, ToRevision: w.ToRevision}
	if ev.Revision == 0 {
		ev.Revision, _ = strconv.ParseInt(id, 10, 64)
	}
	k := ev.Type + " " + ev.Key.Key
	if ev.Revision < s.last || ev.Revision == s.last && s.seen[k] || s.last == 0 && ev.Revision <= s.since {
		return nil // delivered already, or from before where we began
	}
	select {
	case s.out <- ev:
	case <-ctx.Done():
		return ctx.Err()
	}
	if ev.Revision > s.last {
		s.last, s.seen = ev.Revision, map[string]bool{}
	}
	s.seen[k] = true
	return nil
}
