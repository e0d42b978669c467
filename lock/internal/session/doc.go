// Package session is the engine's sessions: etcd leases that many holds
// share, so that a client renews one lease for all of them and they all
// end when it stops renewing (Registry).
//
// A session is its lease, a record under sessions/ (owner, TTL, the
// credential that created it) and an index entry by owner, for paged
// listings. Deleting a session ends its holds as releases do, handing each
// to the head of its queue, in batches of bounded txns that keep a lock
// set's members together, before the lease is revoked. A session bound
// to a stream lives while a client holds its stream open instead, and
// ends a grace after the last stream closed (stream.go). It sits above the
// hold engine (lock/internal/core), whose ends it uses, and below package
// lock, which re-exports Session and serves its API.
package session
