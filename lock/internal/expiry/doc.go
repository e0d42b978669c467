// Package expiry is the engine's expiry recorder: it writes the end event
// of every hold that etcd ended by itself, when a lease expired or was
// revoked with its session, so the audit trail has every end once.
//
// Ends the engine makes (release, revoke, a handover) write their events
// in their own transactions; this package records the rest, from a watch
// of its own, on every node, exactly once across them (Recorder). It
// sits above the hold engine (lock/internal/core), whose ends it uses for
// the event and the lock-delay guard, and below package lock, which
// starts one per engine.
package expiry
