// Package store is baton's data in etcd as every part of the service
// sees it: the key schema, the records kept under it, the events of the
// audit trail, and how etcd's failures map to baton's errors. It holds
// no state and makes no etcd call, so the hold engine (lock) and the
// audit trail both build on it and neither needs the other.
//
// The key schema, the records and the events are a storage format: a
// node reads what every other node of its cluster writes, across
// versions (lock/format.go gates what a node may write). Change them
// only in ways an older node reads, or behind that gate.
package store
