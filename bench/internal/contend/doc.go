// Package contend is the contention loop: workers taking turns on one
// primitive (a lock, an election, a semaphore, a read/write lock), each
// turn a take that waits in line and a give at once, and what the turns
// say: handoffs from one holder to the next, fairness (grant order
// against the order the requests were sent in), and, for the primitives
// with several holds at once, breaches of what they allow.
//
// baton's contention, election, semaphore and rwlock scenarios run it in
// a load generator (Generate), and the peers run it in the bench's process
// on their own recipes (Turns), so that every side of a comparison is
// timed and judged by the same code: a Contender is all that differs. The
// workload of the semaphore and rwlock scenarios (SemaphoreLimit, RWModes,
// RWHold) is here for the same reason.
//
// Every time of a run is taken on one monotonic clock, in one process, so
// that a grant's times can be compared with another worker's.
package contend
