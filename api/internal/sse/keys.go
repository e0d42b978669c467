package sse

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/baton-dev/baton/lock"
)

// keyEvent is the data of a key stream's event: a put's is the key as
// GET /v1/kv/{key} answers it (api.Key), a delete's its key, revision
// and session.
type keyEvent struct {
	Key             string          `json:"key"`
	Value           json.RawMessage `json:"value,omitempty"`
	Revision        int64           `json:"revision"`
	CreatedRevision int64           `json:"created_revision,omitempty"`
	Version         int64           `json:"version,omitempty"`
	Session         string          `json:"session,omitempty"`
}

// AppendKeyEvent appends ev, a put or a delete of a key, to b as the key
// stream sends it: a replayed put (the history keeps no values) with its
// value read at its revision by valueAt (lock.KV's ValueAt).
func AppendKeyEvent(ctx context.Context, b []byte, ev lock.Event, valueAt func(ctx context.Context, key string, rev int64) (json.RawMessage, bool, error)) ([]byte, error) {
	ke := keyEvent{Key: ev.Name, Value: ev.Value, Revision: ev.Revision, Session: ev.Session}
	if ev.Type == lock.EventPut {
		ke.CreatedRevision, ke.Version = ev.CreatedRevision, ev.Version
		if ke.Value == nil {
			v, _, err := valueAt(ctx, ev.Name, ev.Revision)
			if err != nil {
				return b, err
			}
			ke.Value = v
		}
	}
	data, _ := json.Marshal(ke)
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, ev.Revision, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Type...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, '\n', '\n'), nil
}
