// Package httpfloor is the server of the bench's httpfloor scenarios: the
// limit of the shape "HTTP/JSON lock on embedded etcd", not a competitor.
// It is a bare net/http server, run in the node's process on the node's
// in-process etcd client, whose acquire is one create-if-absent txn and
// whose release is one delete-if-revision txn. No audit, no queue, no
// fencing checks, no lease per lock: every key is put on one lease
// granted when the server starts. It speaks baton's routes and status
// codes (201 on acquire, 204 on release, 409 when the lock is taken or no
// longer the caller's) and decodes package httpapi's request bodies, so
// the very load generator of baton's session scenario drives it.
//
// Batched (httpfloor-batched), its txns go through the group-commit
// batcher baton's engine uses (internal/txnbatch): concurrent acquires
// and releases share one raft entry, as baton's do. It is then the limit
// of the shape for a design that batches, where the server unbatched is
// the limit for one that does not. With records (-floor-records) it also
// puts that many records of an audit event's size a cycle, new keys each,
// half in the acquire's txn and half in the release's: the least an audit
// trail writing that many keys costs.
//
// An acquire with wait is the limit of a FIFO lock in the same shape
// (httpfloorwait.go), for the contention scenario.
//
// It is a package of its own because it is a server under test, not part
// of the harness: the bench's main starts it, points a load generator at
// its URL, and closes it.
package httpfloor
