package fence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/baton-dev/baton/internal/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors of fenced writes and reads; package lock re-exports each.
var (
	// ErrStaleToken means a fenced write carried a token below the largest
	// one seen for the resource. The error is a *StaleTokenError.
	ErrStaleToken = errors.New("stale token")
	// ErrNotHolder means a fenced write named a lock that its token does not hold.
	ErrNotHolder = errors.New("token does not hold the named lock")
	// ErrNotFound means a fenced value does not exist.
	ErrNotFound = errors.New("not found")
	// ErrValueTooLarge means a fenced value exceeds Config.MaxValueBytes
	// (or, in package lock, an election's value its maximum); the error
	// is a *store.LimitError. Nothing was written.
	ErrValueTooLarge = errors.New("value too large")
	// ErrUnknownToken means a fenced write carried a token greater than
	// the cluster's current revision: no lock was ever granted with it
	// (a typo, or a timestamp passed as a token). Nothing was written.
	ErrUnknownToken = errors.New("token was never issued")
)

// StaleTokenError is returned by Put when the token is below the largest
// token already seen for the resource.
type StaleTokenError struct {
	Token, MaxToken int64
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("stale token %d: a write with token %d was already accepted", e.Token, e.MaxToken)
}

// Unwrap makes errors.Is(err, ErrStaleToken) hold.
func (e *StaleTokenError) Unwrap() error { return ErrStaleToken }

// Value is the content of a fenced register.
type Value struct {
	Resource string
	// Token is the token of the write that stored Value.
	Token int64
	Value json.RawMessage
	// Revision is the etcd revision of that write.
	Revision int64
}

// Holder names the hold a fenced write requires: the lock, the election
// or the read/write lock's write hold, Name held with exactly the write's
// token. The zero Holder requires none.
type Holder struct {
	Kind store.EventKind // store.KindLock, KindElection or KindRWLock
	Name string
}

// field is the request field that names the holder.
func (h Holder) field() string { return string(h.Kind) }

// record is a register's value key: the value and the token that wrote it.
type record struct {
	Token int64           `json:"token"`
	Value json.RawMessage `json:"value"`
}

// Config is what the registers need of the engine they serve.
type Config struct {
	Client *clientv3.Client
	Etcd   *store.Etcd
	Keys   store.Keys
	// MaxValueBytes bounds a value's JSON.
	MaxValueBytes int
	// Reserve takes a slot for a write that may make a new resource, or
	// refuses it with a *store.LimitError; the write then calls release
	// once, saying whether it made the resource.
	Reserve func(ctx context.Context) (release func(created bool), err error)
	// Recorded counts n audit events of typ written by this node.
	Recorded func(typ store.EventType, n int)
}

// Registers are the fenced values of one engine.
type Registers struct {
	cfg  Config
	cli  *clientv3.Client
	etcd *store.Etcd
	keys store.Keys
}

// New returns the registers cfg describes.
func New(cfg Config) *Registers {
	return &Registers{cfg: cfg, cli: cfg.Client, etcd: cfg.Etcd, keys: cfg.Keys}
}

// maxTries bounds the attempts of a write that loses to concurrent
// writes raising the maximum between its read and its txn.
const maxTries = 16
