package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"
	"github.com/baton-dev/baton/api/internal/sse"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// Key is a key of coordination data.
type Key struct {
	Key   string          `json:"key" example:"config/billing/db"`
	Value json.RawMessage `json:"value" swaggertype:"object"`
	// Revision is the revision of the key's last put; created_revision
	// that of the put that created it; version how many puts it has had
	// since (1 for a new key).
	Revision        int64 `json:"revision" format:"int64" example:"4712"`
	CreatedRevision int64 `json:"created_revision" format:"int64" example:"4650"`
	Version         int64 `json:"version" format:"int64" example:"3"`
	// Session is the session the key is bound to: it is deleted when the
	// session ends.
	Session string `json:"session,omitempty" example:"694d2279b4919071"`
}

func toKey(e *lock.KeyEntry) Key {
	return Key{Key: e.Key, Value: e.Value, Revision: e.Revision, CreatedRevision: e.CreatedRevision, Version: e.Version, Session: e.Session}
}

// KeyList is a page of keys, in key order.
type KeyList struct {
	Keys []Key `json:"keys"`
	// NextCursor, when present, fetches the next page.
	NextCursor string `json:"next_cursor,omitempty"`
	// Revision is the revision the page was read at: GET /v1/kv/events
	// with since=revision (or Last-Event-ID) streams every change after
	// it.
	Revision int64 `json:"revision" format:"int64" example:"4712"`
}

// KeyFence names the hold a key's write requires: one of lock, election,
// semaphore and rwlock (its write hold), with the hold's token.
type KeyFence struct {
	Lock      string `json:"lock,omitempty" example:"inventory"`
	Election  string `json:"election,omitempty"`
	Semaphore string `json:"semaphore,omitempty"`
	RWLock    string `json:"rwlock,omitempty"`
	Token     *int64 `json:"token,omitempty" format:"int64" example:"4711"`
}

// PutKeyRequest is the body of PUT /v1/kv/{key}.
type PutKeyRequest struct {
	Value json.RawMessage `json:"value" swaggertype:"object"`
	// IfRevision makes the put a compare-and-set: it happens only if the
	// key's revision is this one; 0 creates only.
	IfRevision *int64 `json:"if_revision,omitempty" format:"int64" example:"4712"`
	// Session binds the key to a session: it is deleted when the session
	// ends. A put without it unbinds the key.
	Session string `json:"session,omitempty" example:"694d2279b4919071"`
	KeyFence
}

// DeleteKeyRequest is the optional body of DELETE /v1/kv/{key}: the hold
// the delete requires.
type DeleteKeyRequest struct {
	KeyFence
}

// fence is the engine's fence of f, or a 400 naming the field at fault,
// or a 403 when c's credential may not read the fence's hold.
func (f KeyFence) fence(c echo.Context) (lock.KeyFence, error) {
	var out lock.KeyFence
	for _, h := range []struct {
		kind lock.EventKind
		name string
	}{{lock.KindLock, f.Lock}, {lock.KindElection, f.Election}, {lock.KindSemaphore, f.Semaphore}, {lock.KindRWLock, f.RWLock}} {
		if h.name == "" {
			continue
		}
		if out.Kind != "" {
			return out, badRequest(string(h.kind), "give one of lock, election, semaphore and rwlock, not two")
		}
		out.Kind, out.Name = h.kind, h.name
	}
	switch {
	case out.Kind != "" && f.Token == nil:
		return out, badRequest("token", fmt.Sprintf("a write fenced by a %s needs the hold's token", out.Kind))
	case f.Token != nil && out.Kind == "":
		return out, badRequest("token", "a token fences a write only with the hold it holds: give lock, election, semaphore or rwlock")
	case f.Token != nil:
		out.Token = *f.Token
	}
	if out.Name != "" {
		return out, scope.Check(c, auth.Read, out.Name)
	}
	return out, nil
}

// keyParam is the key a route's wildcard names. "events" is the event
// stream's path (GET /v1/kv/events), so no key may be called that.
func keyParam(c echo.Context) (string, error) {
	key := request.PathParam(c, "*")
	if key == "events" {
		return "", badRequest("key", `"events" is the path of the keys' event stream (GET /v1/kv/events); choose another key`)
	}
	return key, nil
}

// putKey godoc
//
//	@Summary		Write a key
//	@ID				putKey
//	@Description	Stores `value` (any JSON, at most 64 KiB by default) under the key, in one etcd transaction that also checks what the body asks: `if_revision` (the key's revision must be this one; 0 creates only), `session` (the key is bound to that session and is deleted when it ends), and a fence, `lock`, `election`, `semaphore` or `rwlock` with `token` (the write happens only while that hold is current). Keys are names as lock names are, joined by `/`. Answers 201 when the put created the key.
//	@Tags			kv
//	@Accept			json
//	@Produce		json
//	@Param			key			path		string				true	"Key: names of 1-128 characters from A-Z a-z 0-9 . _ : - joined by /" minlength(1) maxlength(512)
//	@Param			request		body		api.PutKeyRequest	true	"Value and optional compare, session and fence"
//	@Success		200			{object}	api.Key
//	@Success		201			{object}	api.Key
//	@Failure		400			{object}	api.Problem	"invalid_request, naming the field"
//	@Failure		404			{object}	api.Problem	"session_not_found"
//	@Failure		409			{object}	api.Problem	"revision_mismatch (with the key's `revision`, 0 when it does not exist), or stale_token: the fence's hold is not current"
//	@Failure		413			{object}	api.Problem	"body_too_large, or value_too_large (with `limit` in bytes)"
//	@Failure		415			{object}	api.Problem	"unsupported_media_type"
//	@Failure		507			{object}	api.Problem	"too_many_keys (with `limit`), or insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/kv/{key} [put]
func (a *API) putKey(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	var req PutKeyRequest
	if err := request.BodyUpTo(c, &req, false, request.MaxBodyBytes+a.eng.Config().MaxKeyValueBytes); err != nil {
		return err
	}
	f, err := req.fence(c)
	if err != nil {
		return err
	}
	e, err := a.eng.KV().Put(c.Request().Context(), lock.PutKeyRequest{
		Key: key, Value: req.Value, IfRevision: req.IfRevision, Session: req.Session, Fence: f,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if e.Version == 1 {
		status = http.StatusCreated
	}
	return c.JSON(status, toKey(e))
}

// getKey godoc
//
//	@Summary		Read a key
//	@ID				getKey
//	@Description	The key's value and revisions, read linearizably. With `wait_revision`, a blocking read as Consul's: it answers once the key's revision passes that one, at once if it has already, else at the key's next put or delete (404), or when `wait` runs out (the key as it is then). A 404's `revision` is the revision the key was found missing at: wait from it for the key to appear.
//	@Tags			kv
//	@Produce		json
//	@Param			key				path		string	true	"Key" minlength(1) maxlength(512)
//	@Param			wait_revision	query		int		false	"Block until the key's revision passes this one"	format(int64)
//	@Param			wait			query		string	false	"How long to block, as a duration (default 1m, at most the node's maximum wait, 5m by default)"
//	@Success		200				{object}	api.Key
//	@Failure		400				{object}	api.Problem	"invalid_request, naming the field"
//	@Failure		404				{object}	api.Problem	"key_not_found (with `revision`)"
//	@Security		BearerAuth
//	@Router			/v1/kv/{key} [get]
func (a *API) getKey(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	q := request.Query(c)
	after, blocking, err := request.Int(q, "wait_revision", 0, 1<<62)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var e *lock.KeyEntry
	if !blocking {
		if q.Get("wait") != "" {
			return badRequest("wait", "wait blocks only with wait_revision")
		}
		e, err = a.eng.KV().Get(ctx, key)
	} else {
		wait := defaultKeyWait
		if s := q.Get("wait"); s != "" {
			if wait, err = request.Duration("wait", &s); err != nil {
				return err
			}
		}
		e, err = a.eng.KV().Wait(ctx, key, after, min(wait, a.eng.Config().MaxWait))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toKey(e))
}

// defaultKeyWait is how long a blocking read waits when it names no wait.
const defaultKeyWait = time.Minute

// listKeys godoc
//
//	@Summary		List keys
//	@ID				listKeys
//	@Description	A page of keys with their values, in key order, read linearizably in one etcd range: its cost grows with the page, not with the keys stored. A page of large values may hold fewer keys than `limit`, with a cursor. `revision` is the revision the page was read at: stream the changes after it with GET /v1/kv/events?since=revision.
//	@Tags			kv
//	@Produce		json
//	@Param			prefix	query		string	false	"Keep keys that start with this (config/ or config/bil)" maxlength(512)
//	@Param			limit	query		int		false	"Page size (default 100)"	minimum(1)	maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page"
//	@Success		200		{object}	api.KeyList
//	@Failure		400		{object}	api.Problem	"invalid_request, naming the field"
//	@Security		BearerAuth
//	@Router			/v1/kv [get]
func (a *API) listKeys(c echo.Context) error {
	o, err := request.ListOf(c, lock.CheckKeyPrefix, func(key string) bool { return lock.CheckKey("cursor", key) == nil })
	if err != nil {
		return err
	}
	out := KeyList{Keys: []Key{}}
	// A page of a scoped credential may span several reads: its revision
	// is the first's, so a stream from it misses no change (it may repeat
	// some of the later reads').
	next, err := scope.Page(c, o.Prefix, o.After, o.Limit, func(prefix, after string, limit int) (int, string, string, error) {
		p, err := a.eng.KV().List(c.Request().Context(), lock.KeyListOptions{Prefix: prefix, After: after, Limit: limit})
		if err != nil {
			return 0, "", "", err
		}
		if out.Revision == 0 {
			out.Revision = p.Revision
		}
		last := ""
		for _, e := range p.Keys {
			out.Keys = append(out.Keys, toKey(e))
			last = e.Key
		}
		return len(p.Keys), last, p.Next, nil
	})
	if err != nil {
		return err
	}
	out.NextCursor = request.EncodeCursor(next) // "" on the last page
	return c.JSON(http.StatusOK, out)
}

// deleteKey godoc
//
//	@Summary		Delete a key
//	@ID				deleteKey
//	@Description	Deletes the key, in one etcd transaction that also checks `if_revision` (the key's revision must be this one) and, with a body, a fence: `lock`, `election`, `semaphore` or `rwlock` with `token`. The history records who deleted it.
//	@Tags			kv
//	@Accept			json
//	@Produce		json
//	@Param			key			path	string				true	"Key" minlength(1) maxlength(512)
//	@Param			if_revision	query	int					false	"Delete only at this revision"	format(int64)
//	@Param			request		body	api.DeleteKeyRequest	false	"The hold the delete requires"
//	@Success		204
//	@Failure		400	{object}	api.Problem	"invalid_request, naming the field"
//	@Failure		404	{object}	api.Problem	"key_not_found"
//	@Failure		409	{object}	api.Problem	"revision_mismatch (with `revision`), or stale_token"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		507	{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/kv/{key} [delete]
func (a *API) deleteKey(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	ifRev, compare, err := request.Int(request.Query(c), "if_revision", 1, 1<<62)
	if err != nil {
		return err
	}
	var req DeleteKeyRequest
	if err := request.Body(c, &req, true); err != nil {
		return err
	}
	f, err := req.fence(c)
	if err != nil {
		return err
	}
	dr := lock.DeleteKeyRequest{Key: key, Fence: f}
	if compare {
		dr.IfRevision = &ifRev
	}
	if err := a.eng.KV().Delete(c.Request().Context(), dr); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// keyEvents godoc
//
//	@Summary		Stream keys' changes (Server-Sent Events)
//	@ID				keyEvents
//	@Description	Every put and delete of the keys under `prefix`, live, as `text/event-stream`: `event: put` with the key (data: Key) and `event: delete` (data: `{"key","revision","session"}`), each with `id:` its revision. With `since` or the `Last-Event-ID` header (which wins), the changes after that revision come first, from the audit trail, then live ones, with no gap and no repeat; a put replayed from a revision etcd has compacted, of a key that changed since, comes without its value (GET the key). A comment line every 15 s keeps idle streams open. All streams share one etcd watch per node.
//	@Tags			kv
//	@Produce		text/event-stream
//	@Param			prefix			query		string		false	"Keys that start with this" maxlength(512)
//	@Param			since			query		int			false	"Replay the changes after this revision first"	format(int64)
//	@Param			Last-Event-ID	header		int			false	"Resume after this revision"	format(int64)
//	@Success		200				{string}	string		"An endless text/event-stream"
//	@Failure		400				{object}	api.Problem	"invalid_request, naming the field"
//	@Failure		429				{object}	api.Problem	"rate_limited, or too_many_streams (with `limit`): this client address or credential holds its maximum of streams on this node"
//	@Failure		503				{object}	api.Problem	"unavailable, shutting_down, or too_many_streams (with `limit`): this node serves its maximum of streams"
//	@Security		BearerAuth
//	@Router			/v1/kv/events [get]
func (a *API) keyEvents(c echo.Context) error {
	o, err := request.SubscribeOptions(c)
	if err != nil {
		return err
	}
	prefix := request.Query(c).Get("prefix")
	if err := lock.CheckKeyPrefix("prefix", prefix); err != nil {
		return err
	}
	o.Kind, o.NamePrefix, o.Scope = lock.KindKey, prefix, scope.Filter(c)
	ctx, valueAt := c.Request().Context(), a.eng.KV().ValueAt
	return a.serveEvents(c, o, func(b []byte, ev lock.Event) ([]byte, error) {
		if ev.Type == lock.EventGap {
			return appendEvent(b, ev), nil
		}
		return sse.AppendKeyEvent(ctx, b, ev, valueAt)
	})
}
