// Package etcdrecipe holds the bench's etcd peers that are etcd's own Go
// recipes, clientv3/concurrency over gRPC to the node's member: what a Go
// user with an etcd cluster would write instead of calling baton. Its
// Session and Mutex are the etcd-mutex peer (GenCycles, each worker on a
// Mutex of its own; GenContention, every worker on one), and its Election
// the etcd-election peer (GenElection); its KV is the keys scenario's
// peer (GenKV, WatchNotify). Each worker has a client, so a
// gRPC connection, and a Session of its own, made before the clock
// starts, as a client process keeps one.
//
// Each runs in a load generator process, as baton's HTTP scenarios do;
// the bench's main dispatches the load kinds to them. The contention and
// election loops time and judge their grants as package contend does
// baton's, and the Mutex's holds are checked for exclusion as well.
package etcdrecipe
