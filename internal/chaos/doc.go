// Package chaos is baton's fault-injection suite, in the spirit of
// Jepsen's tests of etcd and etcd's own robustness suite. Its test starts
// three real baton processes (internal/testcluster), runs clients on every
// node while a nemesis kills, pauses and partitions members, moves etcd's
// leadership (MoveLeader), makes a few hundred clients of one node leave
// together (a burst) and pauses a client holding a lock, records every
// request (Op, History, Driver), and then checks the history:
// linearizability for a lock with its fenced register (porcupine,
// LockModel), token order in real time, and an exactly-once audit trail.
// docs/CLUSTER.md describes what it injects and
// how to run it for longer.
package chaos
