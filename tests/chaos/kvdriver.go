package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// keyPath is a key's path, its "/"s escaped as %2F: one path parameter,
// as the OpenAPI document has it.
func keyPath(key string) string { return "/v1/kv/" + url.PathEscape(key) }

func sessionPath(id, rest string) string { return "/v1/sessions/" + url.PathEscape(id) + rest }

// KeyWrite is what a put asks beyond its value, every part optional: a
// compare (IfRevision; 0 creates only), a session to bind the key to,
// and a fence, Lock held with Token.
type KeyWrite struct {
	IfRevision *int64
	Session    string
	Lock       string
	Token      int64
}

// keyAnswer is a Key answer.
type keyAnswer struct {
	Key             string          `json:"key"`
	Value           json.RawMessage `json:"value"`
	Revision        int64           `json:"revision"`
	CreatedRevision int64           `json:"created_revision"`
	Version         int64           `json:"version"`
	Session         string          `json:"session"`
}

// keyOut fills op's outcome from its answer b: an OK's Key (which must be
// op's key, with a revision and a value, else its effect is unknown and
// the checker reports the op), a refusal's revision (refusedAt).
func keyOut(op check.Op, b []byte) check.Op {
	if op.Result != check.OK {
		return refusedAt(op, b)
	}
	var k keyAnswer
	if err := json.Unmarshal(b, &k); err != nil || k.Key != op.Key || k.Revision <= 0 || len(k.Value) == 0 {
		op.Result, op.Err = check.Unknown, fmt.Sprintf("%s answer %q is not the Key %q", op.Kind, b, op.Key)
		return op
	}
	op.OutRevision, op.OutCreated, op.OutVersion, op.OutSession = k.Revision, k.CreatedRevision, k.Version, k.Session
	op.OutValue = string(k.Value)
	return op
}

// refusedAt fills a refused op's OutRevision from its problem b: the
// key's revision (revision_mismatch) or the read's (key_not_found).
func refusedAt(op check.Op, b []byte) check.Op {
	if op.Result != check.Rejected {
		return op
	}
	var p struct {
		Revision int64 `json:"revision"`
	}
	json.Unmarshal(b, &p)
	op.OutRevision = p.Revision
	return op
}

// PutKey writes value, JSON, to key, with what w asks. On OK the op has
// the key as written; refused as revision_mismatch, the key's revision.
func (d *Driver) PutKey(ctx context.Context, key, value string, w KeyWrite) check.Op {
	op := check.Op{Kind: check.KVPut, Key: key, Value: value, IfRevision: w.IfRevision, Session: w.Session, Lock: w.Lock, Token: w.Token}
	body := map[string]any{"value": json.RawMessage(value)}
	if w.IfRevision != nil {
		body["if_revision"] = *w.IfRevision
	}
	if w.Session != "" {
		body["session"] = w.Session
	}
	if w.Lock != "" {
		body["lock"], body["token"] = w.Lock, w.Token
	}
	op, b := d.do(ctx, op, http.MethodPut, keyPath(key), body)
	op = classify(op, "revision_mismatch", "stale_token", "session_not_found")
	return d.H.Add(keyOut(op, b))
}

// GetKey reads key; Rejected means it does not exist, at the revision in
// op.OutRevision.
func (d *Driver) GetKey(ctx context.Context, key string) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.KVGet, Key: key}, http.MethodGet, keyPath(key), nil)
	op = classify(op, "key_not_found")
	return d.H.Add(readResult(keyOut(op, b)))
}

// DeleteKey deletes key, if it is at ifRevision when that is set.
func (d *Driver) DeleteKey(ctx context.Context, key string, ifRevision *int64) check.Op {
	path := keyPath(key)
	if ifRevision != nil {
		path += fmt.Sprintf("?if_revision=%d", *ifRevision)
	}
	op, b := d.do(ctx, check.Op{Kind: check.KVDelete, Key: key, IfRevision: ifRevision}, http.MethodDelete, path, nil)
	op = classify(op, "key_not_found", "revision_mismatch")
	return d.H.Add(refusedAt(op, b))
}

// CreateSession makes a session of d's TTL; on OK, op.Session is its ID.
func (d *Driver) CreateSession(ctx context.Context, owner string) check.Op {
	op, b := d.do(ctx, check.Op{Kind: check.SessionCreate, Owner: owner}, http.MethodPost, "/v1/sessions",
		map[string]any{"owner": owner, "ttl": d.TTL.String()})
	op = classify(op)
	if op.Result == check.OK {
		var s struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.ID == "" {
			op.Result, op.Err = check.Unknown, fmt.Sprintf("session answer %q has no id", b)
		}
		op.Session = s.ID
	}
	return d.H.Add(op)
}

// RenewSession extends the session id's lease.
func (d *Driver) RenewSession(ctx context.Context, id string) check.Op {
	op, _ := d.do(ctx, check.Op{Kind: check.SessionRenew, Session: id}, http.MethodPost, sessionPath(id, "/renew"), nil)
	return d.H.Add(classify(op, "session_not_found"))
}

// DeleteSession ends the session id, and with it the keys bound to it.
func (d *Driver) DeleteSession(ctx context.Context, id string) check.Op {
	op, _ := d.do(ctx, check.Op{Kind: check.SessionDelete, Session: id}, http.MethodDelete, sessionPath(id, ""), nil)
	return d.H.Add(classify(op, "session_not_found"))
}
