package store

import (
	"encoding/json"
	"strings"
	"time"
)

// Keys of coordination data (lock/internal/kv) are hierarchical: one or
// more names (ValidName) joined by "/", such as "config/billing/db". Each
// is kept at kv/<key>, its value a KeyRecord; its revisions are the
// trail's events of kind key, derived as a hold's are (trail/derive.go).

// MaxKeyLen bounds a key, "/"s included.
const MaxKeyLen = 512

// CheckKey validates key, the value of the request field field.
func CheckKey(field, key string) error {
	if key == "" {
		return Invalid(field, "must not be empty")
	}
	if len(key) > MaxKeyLen {
		return Invalid(field, "must be at most %d bytes", MaxKeyLen)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if !ValidName(seg) {
			return Invalid(field, "must be names of 1-128 characters from A-Z a-z 0-9 . _ : - joined by single \"/\"s")
		}
	}
	return nil
}

// CheckKeyPrefix validates prefix, a listing's or a stream's key prefix:
// empty, or a key's start ("config/" and "config/bil" are both prefixes).
func CheckKeyPrefix(field, prefix string) error {
	if prefix == "" {
		return nil
	}
	if len(prefix) > MaxKeyLen {
		return Invalid(field, "must be at most %d bytes", MaxKeyLen)
	}
	if err := CheckKey(field, strings.TrimSuffix(prefix, "/")); err != nil {
		return Invalid(field, "must be the start of a key: names joined by single \"/\"s, with an optional \"/\" at the end")
	}
	return nil
}

// KV is key's record, and KVs their prefix.
func (k Keys) KV(key string) string { return k.KVs() + key }
func (k Keys) KVs() string          { return k.Prefix + "kv/" }

// KeyAudit is the pending record of a delete of key by a request (id
// makes it the first write of its key: the trail reads only those).
func (k Keys) KeyAudit(id, key string) string {
	return k.Audit() + "~key/" + id + "/" + EscapeKey(key)
}

// EscapeKey is key with its "/"s as "~", which no name holds: it names
// key where a "/" would split a path (the trail's index, its entries).
// Distinct keys have distinct escapes.
func EscapeKey(key string) string { return strings.ReplaceAll(key, "/", "~") }

// UnescapeKey undoes EscapeKey.
func UnescapeKey(s string) string { return strings.ReplaceAll(s, "~", "/") }

// KeyRecord is the value of a key's record: the value a put stored and
// who put it. The key's revisions say the rest: its ModRevision is the
// put's revision, its Lease the session's it is bound to.
type KeyRecord struct {
	Value json.RawMessage `json:"v"`
	// Time is when the put was made, by the writing node's clock.
	Time time.Time `json:"t"`
	// Credential is the writer's (see Caller); empty without
	// authentication.
	Credential string `json:"c,omitempty"`
	// Session is the session the key is bound to, if any: it is deleted
	// with it.
	Session string `json:"s,omitempty"`
}
