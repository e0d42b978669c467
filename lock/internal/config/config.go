package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/internal/watchfeed"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Config tunes an Engine. Start from Default (lock.DefaultConfig).
type Config struct {
	// Prefix is prepended to every key baton writes.
	Prefix string
	// DefaultTTL is used when an acquire or a session names no TTL.
	DefaultTTL time.Duration
	// MinTTL and MaxTTL bound requested TTLs. MinTTL should not be below
	// etcd's lease floor (1.5 × election timeout), or etcd raises it.
	MinTTL, MaxTTL time.Duration
	// MaxWait bounds an acquire's wait.
	MaxWait time.Duration
	// MaxLockDelay bounds lock_delay.
	MaxLockDelay time.Duration
	// MaxMinHold bounds min_hold.
	MaxMinHold time.Duration
	// OpTimeout bounds each etcd call, so that a request to a node cut off
	// from its quorum answers ErrUnavailable instead of hanging.
	OpTimeout time.Duration
	// WaiterTTL is the TTL of the lease that holds this node's queue
	// entries: if the node dies, its waiters leave the queue within it.
	WaiterTTL time.Duration
	// MaxWaitersPerLock caps the acquires queued for one lock, cluster
	// wide; the next one fails with ErrTooManyWaiters. 0 means no cap.
	// Each waiter holds an HTTP request, a queue key and a registration
	// with the waiter hub for up to MaxWait, so an unbounded queue is
	// memory anyone can take.
	MaxWaitersPerLock int
	// MaxLocksPerSession caps the locks one session holds; the next
	// acquire in it fails with ErrTooManyLocks. 0 means no cap, the
	// default: the cap costs every session acquire and release one more
	// write (a third more per cycle, BenchmarkEngine_CycleSession), and it
	// bounds little, since locks without a session are not capped. Holds
	// acquired while it was off are not counted when it is turned on.
	MaxLocksPerSession int
	// MaxSessions caps the sessions of the cluster; the next
	// CreateSession fails with ErrTooManySessions. 0 means no cap.
	MaxSessions int
	// MaxLocks caps the locks held in the cluster, with or without a
	// session; the next acquire fails with ErrTooManyHeldLocks. 0 means no
	// cap. Without it a client takes etcd's space and every node's memory
	// one lease at a time. It is approximate: see CountRefresh.
	MaxLocks int
	// MaxFencedValues caps the fenced values (resources) of the cluster;
	// a write that would make a new one fails with ErrTooManyFencedValues.
	// 0 means no cap. Approximate: see CountRefresh.
	MaxFencedValues int
	// MaxFencedValueBytes bounds a fenced value's JSON; a larger one fails
	// with ErrValueTooLarge. It must be positive.
	MaxFencedValueBytes int
	// MaxKeys caps the keys of coordination data (lock/internal/kv) of
	// the cluster; a put that would make a new one fails with
	// ErrTooManyKeys. 0 means no cap. Approximate: see CountRefresh.
	MaxKeys int
	// MaxKeyValueBytes bounds a key's value, in bytes of JSON; a larger
	// one fails with ErrValueTooLarge. It must be positive.
	MaxKeyValueBytes int
	// CountRefresh is how often the engine counts the keys that
	// MaxSessions, MaxLocks, MaxFencedValues and MaxKeys cap. A create costs no
	// count: it is checked against that count plus this engine's own
	// creates since. So a cap can be overshot by what other nodes create
	// within one CountRefresh (never with one node), and a slot freed by
	// a release or an expiry is offered again within it.
	CountRefresh time.Duration
	// BackendQuota is etcd's backend quota in bytes, for Recover to tell
	// whether defragmenting freed enough; 0 means etcd's default, 2 GiB.
	BackendQuota int64
	// DialMember, when set, returns a client of the etcd member reached at
	// clientURLs, closed by the caller: Recover defragments every member
	// through one, because the in-process client reaches only its own
	// member. Without it, Recover reaches other members through the
	// engine's client, which works only over external etcd.
	DialMember func(ctx context.Context, clientURLs []string) (*clientv3.Client, error)
	// WatchStallTimeout is how long one of the engine's etcd watches may
	// go without a response, while it asks for progress notifications,
	// before it is declared stalled and opened again (internal/watchfeed). The
	// engine is not ready while a watch is not hearing etcd.
	WatchStallTimeout time.Duration
	// Logger receives the engine's logs; nil means slog.Default().
	Logger *slog.Logger
	// Member is the embedded etcd member whose in-process client cli is
	// (embedetcd.Member is one); nil means cli reaches etcd over the
	// network. It is what tells the engine it runs on its own member:
	// requests then fail fast with ErrUnavailable while the member knows
	// no leader, a new leader ends the calls in flight, local reads see
	// the engine's own writes, and NOSPACE and defragmenting go through
	// the member (see EmbeddedMember).
	Embedded EmbeddedMember
	// StorageFormat, when above the cluster's storage format, raises it
	// as the engine starts (lock/format.go): set it once every node of the
	// cluster runs a baton that reads it. 0 keeps the cluster's format.
	StorageFormat int

	// RecorderSaveEvery is how often the expiry recorder saves its cursor,
	// when it has moved; 0 means 5 s (recorderSaveEvery). Tests shorten
	// it, to see the saves a quiet cluster makes without waiting.
	RecorderSaveEvery time.Duration
}

// EmbeddedMember is what the engine needs of the etcd member it is
// embedded with (store.Member says what each method is for).
type EmbeddedMember = store.Member

// Default returns the defaults that docs/API.md documents.
func Default() Config {
	return Config{
		Prefix:       "/baton/",
		DefaultTTL:   30 * time.Second,
		MinTTL:       2 * time.Second,
		MaxTTL:       24 * time.Hour,
		MaxWait:      5 * time.Minute,
		MaxLockDelay: time.Hour,
		MaxMinHold:   24 * time.Hour,
		OpTimeout:    5 * time.Second,
		WaiterTTL:    5 * time.Second,
		// Caps far above any sane use (the bench holds 1,000 sessions of
		// 100 locks; its contention scenario queues 64 waiters), low
		// enough that one client cannot take the node's memory: 1,000
		// waiters are 1,000 held requests and watches on one lock;
		// 100,000 sessions are 100,000 leases, which etcd's lessor
		// revokes at a bounded rate when they expire together
		// (docs/PERFORMANCE.md, "The HTTP path, memory and caps").
		MaxWaitersPerLock:  1000,
		MaxLocksPerSession: 0,
		MaxSessions:        100000,
		WatchStallTimeout:  5 * time.Second,
		// 200,000 locks are twice the bench's scale scenario (1,000
		// sessions of 100 locks), within one node's memory and etcd's
		// default quota even with full metadata; 10,000 fenced values of
		// the largest size stay well inside that quota too
		// (docs/PERFORMANCE.md, "The HTTP path, memory and caps").
		MaxLocks:            200000,
		MaxFencedValues:     10000,
		MaxFencedValueBytes: 32 << 10,
		// 100,000 keys of 1 KiB are a tenth of etcd's default quota; the
		// largest values (64 KiB, ZooKeeper's znodes hold up to 1 MiB)
		// are for configuration, of which there are few.
		MaxKeys:          100000,
		MaxKeyValueBytes: 64 << 10,
		CountRefresh:     time.Second,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Prefix == "":
		return errors.New("lock: Prefix must not be empty")
	case c.MinTTL < time.Second:
		return errors.New("lock: MinTTL must be at least 1s")
	case c.MaxTTL < c.MinTTL:
		return errors.New("lock: MaxTTL must be at least MinTTL")
	case c.DefaultTTL < c.MinTTL || c.DefaultTTL > c.MaxTTL:
		return errors.New("lock: DefaultTTL must lie within [MinTTL, MaxTTL]")
	case c.OpTimeout <= 0:
		return errors.New("lock: OpTimeout must be positive")
	case c.WaiterTTL < 2*time.Second:
		return errors.New("lock: WaiterTTL must be at least 2s")
	case c.WatchStallTimeout < 2*watchfeed.ProbeAfter:
		return fmt.Errorf("lock: WatchStallTimeout must be at least %s", 2*watchfeed.ProbeAfter)
	case c.MaxWaitersPerLock < 0, c.MaxLocksPerSession < 0, c.MaxSessions < 0:
		return errors.New("lock: MaxWaitersPerLock, MaxLocksPerSession and MaxSessions must not be negative (0 means no cap)")
	case c.StorageFormat < 0 || c.StorageFormat > NewestFormat:
		return fmt.Errorf("lock: StorageFormat (--storage-format) must be between 0 (the cluster's) and %d", NewestFormat)
	case c.MaxLocks < 0, c.MaxFencedValues < 0, c.MaxKeys < 0:
		return errors.New("lock: MaxLocks, MaxFencedValues and MaxKeys must not be negative (0 means no cap)")
	case c.MaxFencedValueBytes <= 0:
		return errors.New("lock: MaxFencedValueBytes must be positive")
	case c.MaxKeyValueBytes <= 0:
		return errors.New("lock: MaxKeyValueBytes must be positive")
	case c.CountRefresh <= 0:
		return errors.New("lock: CountRefresh must be positive")
	case c.BackendQuota < 0:
		return errors.New("lock: BackendQuota must not be negative (0 means etcd's default)")
	}
	return nil
}

// The storage format is the layout of the audit trail's keys (trail/histkeys.go,
// histchunks.go). A node reads every format it knows, and writes the
// cluster's, kept in meta/format:
//
//	1  (no meta/format) a hold's acquired record audit/<name>/<hold>/a,
//	   and its end record beside it, audit/<name>/<hold>/e: two keys, which
//	   the history index deletes once it holds both events
//	2  a hold's end is written over its acquired record (store.EndRecord): one
//	   key a hold, and one delete
//	3  the history index folds a thing's events into chunks, a key for
//	   chunkEvents of them (histchunks.go)
//	4  trail/ keeps the revisions one index txn holds whole in chunks,
//	   where it kept a key for each (trail/histkeys.go)
//	5  holds write no pending record of their acquire or of an end the
//	   trail can tell from their lock key's revisions: the history index
//	   derives those (trail/derive.go); a hold's record says which it is
//	   (store.Holder.Derived)
//
// A cluster moves to a format only once every node reads it. A node of an
// older baton misreads format 2: its expiry recorder would take a release
// written over the acquired record for an expiry and record the end twice,
// and its history index would never index the end. One that knows only
// format 2 would skip a chunk of format 3 when it reads a thing's history,
// and one that knows only format 3 a trail/ chunk of format 4. One that
// knows only format 4 would index no derived hold, nor record its expiry.
// So a cluster begun by a baton that knows the newest format starts at it,
// one begun before stays at its own, and an operator raises it, once every
// node runs a baton that reads it, by starting a node with
// Config.StorageFormat set (docs/OPERATIONS.md).
// The format never goes down. A node reads it when it starts, and writes
// that format until it restarts: a node still writing 1 after another
// raised it is read by every node all the same.
const NewestFormat = 5
