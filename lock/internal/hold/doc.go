// Package hold is what every layer of the lock engine shares: what a hold
// is (Lock, the events, the request limits), the records the engine keeps
// in etcd beside a hold (queue entries, sessions, lock-delay guards), the
// engine's errors, who makes a request (Caller), the lease clock and the
// engine's metrics.
//
// It imports only internal/store, and holds no state of its own beyond
// what its values carry: the engine (package lock and the packages under
// it) owns the etcd client, the caches and the goroutines. Package lock
// re-exports what its callers use.
package hold
