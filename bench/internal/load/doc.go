// Package load is how the bench makes load: the load generator process
// the bench re-executes itself as (Start and Main, speaking JSON over the
// generator's stdin and stdout), and the loops every scenario's workers
// run, in a generator or in the bench's own process: a closed loop of
// whole cycles, a paced schedule, and a pool of setup workers.
//
// The load of an HTTP scenario comes from a second process so that the
// CPU time the bench's process spends is baton's and etcd's alone. The
// generator does its setup, says it is ready, and waits until the parent
// has read its counters; closing its stdin says go. It then runs, and
// reports its counts and latencies with the CPU time it spent since.
//
// Package load knows no scenario: a Spec's Kind is dispatched by the
// bench's main, which owns the names.
package load
