// Package measure is how the bench reads what a scenario took and what it
// cost: latency histograms, a count of failures, and the usage of the
// machine around a scenario (the CPU time of this process, of any other
// process and of the machine, the raft entries, key writes and backend
// size of the embedded etcd member, read from its Prometheus metrics) and
// this process's RSS.
//
// It is the bottom of the bench: it makes no load and knows no scenario,
// so the load, the peers and the report all read their figures through
// it. Its readers are Linux's: getrusage, /proc/stat and /proc/PID.
package measure
