// Package kv is the engine's coordination data: keys with revisions, as
// ZooKeeper's znodes, Consul's KV and etcd's own keys are, that a client
// reads, compares and sets, binds to a session (an ephemeral key, deleted
// with the session at its end's revision), and fences with a hold (a
// write that happens only while that hold is current, compared in the
// write's own txn).
//
// A key is one etcd key, kv/<key> (internal/store/kv.go), whose revisions
// are the key's: its ModRevision is the revision of its last put, its
// CreateRevision and Version etcd's. A put is one txn, a delete one txn
// that also writes its pending audit record; the trail derives every put,
// and a delete by a session's end, from the key's revisions
// (trail/derive.go), so a put writes nothing but the key.
//
// A blocking read waits on the engine's waiter hub (lock/internal/core,
// hub.go), which follows kv/ with the lock keys: no etcd watch per
// reader. It sits above the hold engine, whose reads of sessions and
// seats it uses, and below package lock, which re-exports its types.
package kv
