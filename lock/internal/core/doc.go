// Package core is the hold engine: how any kind of hold is acquired,
// waited for, handed over and ended, over one etcd client.
//
// An acquire (Acquirer) runs one etcd txn guarded by the hold's key being
// absent; the key's ModRevision is the fencing token. When the hold is
// taken it joins the thing's queue and waits, woken by the waiter hub
// (hub.go) from one etcd watch, until a release grants it the hold in the
// release's own txn (handover.go) or its wait runs out. Ends (end.go)
// delete the hold, put the lock-delay guard and hand over to the head of
// the queue in one txn. Leases (leases.go) are pooled per node, and the
// records of the holds this node granted are kept (holdcache.go) so that
// their releases read nothing.
//
// What differs between kinds is a strategy, HoldKind (kind.go): the
// compares, ops and reads an acquire adds to its txn, and where in the
// queue it waits. LockKind is a plain lock's, and the base every other
// kind embeds; elections, semaphores, read/write locks and lock sets are
// package lock's, which makes one per acquire (NewKindFunc). The engine
// knows no kind by name beyond the key schema's (internal/store).
//
// Package core imports the storage layer and lock/internal/hold, nothing
// of the facade. Its exported names serve package lock only: it is
// internal, and its API is the engine's seams, not a public contract.
package core
