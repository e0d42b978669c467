package lock

import (
	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/kv"
)

// Keys of coordination data are package kv's (lock/internal/kv), which
// says what each type means: KV serves them (Engine.KV), KeyEntry is a
// key as read or written, and the requests and errors are its.
type (
	KV                    = kv.Store
	KeyEntry              = kv.Entry
	PutKeyRequest         = kv.PutRequest
	DeleteKeyRequest      = kv.DeleteRequest
	KeyListOptions        = kv.ListOptions
	KeyPage               = kv.Page
	KeyFence              = kv.Fence
	KeyNotFoundError      = kv.NotFoundError
	RevisionMismatchError = kv.RevisionMismatchError
)

// The errors of keys (package kv says what each means). ErrStaleHold is
// an ErrStaleToken too.
var (
	ErrKeyNotFound      = kv.ErrKeyNotFound
	ErrRevisionMismatch = kv.ErrRevisionMismatch
	ErrTooManyKeys      = kv.ErrTooManyKeys
	ErrStaleHold        = kv.ErrStaleHold
)

// KV is the engine's keys: put, get, wait, list and delete, each
// compared, bound to a session or fenced as its request asks.
func (e *Engine) KV() *KV { return e.kv }

// CheckKey validates a key, the value of the request field field: names
// (ValidName) joined by single "/"s, at most MaxKeyLen bytes. CheckKeyPrefix
// validates a listing's or a stream's prefix: empty, or a key's start.
func CheckKey(field, key string) error          { return store.CheckKey(field, key) }
func CheckKeyPrefix(field, prefix string) error { return store.CheckKeyPrefix(field, prefix) }
