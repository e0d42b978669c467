// Package zookeeper is the bench's zookeeper peer: a standalone ZooKeeper
// server the bench starts from Debian's package (Start, stopped by Close),
// and Curator's recipes on it over go-zookeeper, one session per worker:
// the lock (InterProcessMutex: a protected ephemeral-sequential child,
// lowest wins, a watch on the predecessor only), and on it
// LeaderSelector's leadership, InterProcessSemaphoreV2 and
// InterProcessReadWriteLock (zkholds.go).
//
// The recipes run in the bench's process, not in a load generator, so a
// scenario's figures have the server's CPU as the node's and the bench's
// own as the load generator's; nothing goes through raft. The contention
// scenarios run package contend's loop on them, the very loop baton's
// run in, so that both sides are timed and judged alike.
package zookeeper
