// Package redis is the bench's redis peer: the acquire+release cycles of
// Redis's documented single-instance lock (SET key token NX PX, then a
// compare-and-delete script) against a Redis server the bench is given,
// and what that server is (Inspect): its version, its persistence and
// replication, and its process when it runs on this machine, whose CPU
// time the peer's rows report in place of the node's.
//
// The cycles run in a load generator process as baton's HTTP scenarios
// do (GenCycles is its side); Server.Cycles is the bench's side. The
// peer's figures are the speed users give up for etcd's safety, which
// Caveat says under the table: Redis answers before any disk has the
// write unless it fsyncs every write, and replicates, if at all,
// afterwards.
package redis
