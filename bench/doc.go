// Command bench measures baton against the floor it is built on, in one
// run on one machine, and prints the figures as a table (each as a ratio to
// the floor where that means something) and as JSON.
//
//	go run ./bench                                  # every scenario, defaults
//	go run ./bench -only floor,session -duration 5s # a subset
//	go run ./bench -only floor,session,redis -redis 127.0.0.1:6379
//	go run ./bench -only session -cpuprofile cpu.out && go tool pprof -top cpu.out
//	go run ./bench -only history -history-events 100000
//	go run ./bench -only session -trail-events 1000000 # beside a full trail
//	go run ./bench -only election,zookeeper -clients 1  # elections beside both peers
//	go run ./bench -only session -auth-rules 1000       # with a policy of 1,000 rules
//
// It starts one baton node (embedded etcd, engine and HTTP server) in this
// process on a temporary data dir. With -trail-events N it first makes N
// audit events as the history scenario does, waits for the history index
// to hold them and compacts etcd (not with -trail-keeps-history), so that
// what follows runs beside the trail of a node that has served a while
// rather than an empty one. Then
// it runs, in this order:
//
//   - floor: acquire+release cycles straight through the node's
//     in-process etcd client, the two txns a lock needs and nothing else;
//     each client takes and gives back a key of its own, the same one
//     every cycle, in this and every cycle scenario below;
//   - lease and session: the same cycles through baton's HTTP API, a lease
//     per lock or one session per client;
//   - etcd-gateway, the peer: the same cycles through etcd's own lock API
//     (v3lock) on the embedded member's HTTP gateway, one shared lease;
//   - redis, the other peer, only with -redis host:port: the same cycles as
//     SET key token NX PX 30000 and a compare-and-delete script (EVALSHA),
//     with the CPU of redis-server when it is a process of this machine;
//   - zookeeper, when Debian's zookeeper package is installed (-zookeeper-jar):
//     a standalone server the bench starts on a temp dir, fsync on as
//     shipped, and Curator's lock recipe (InterProcessMutex: a protected
//     ephemeral-sequential child, lowest wins, a watch on the predecessor
//     only) over go-zookeeper, one session per worker: the same cycles, then
//     the contention scenario on one lock, with the server's CPU;
//   - etcd-mutex, what a Go user of etcd would write: clientv3/concurrency's
//     Session and Mutex over gRPC to the same member, a session and client
//     per worker: the same cycles, then -contention-clients workers on one
//     Mutex;
//   - httpfloor, the limit of an HTTP/JSON lock on embedded etcd, not a
//     competitor: a bare net/http server in the node's process, one txn per
//     acquire and one per release on the in-process client, one shared
//     lease, driven by the session scenario's own load generator; then the
//     contention scenario's clients on one lock, acquiring with wait: each
//     waiter puts an entry, and a release hands the lock to the oldest in
//     its one txn, the order kept in the server's memory (the limit of a
//     FIFO lock in that shape);
//   - httpfloor-batched, the same floor with its txns group-committed by
//     the batcher baton's engine uses (internal/txnbatch), so that
//     concurrent cycles share raft entries as baton's do: the limit of the
//     shape for a design that batches; cycles only;
//   - contention: clients queueing with wait on one key: handoffs/s,
//     handoff latency and grant order against arrival order;
//   - election: the contention loop on one election, -contention-clients
//     candidates each campaigning (waiting) and resigning as soon as it
//     leads: handovers of leadership per second, beside etcd's own
//     recipe (clientv3/concurrency's Election, Campaign then Resign, a
//     session per candidate) and, when the zookeeper peer runs,
//     Curator's LeaderSelector, whose leadership is its lock recipe on
//     the election's path;
//   - semaphore: the contention loop on one semaphore of 4 permits,
//     -contention-clients workers each taking a permit (waiting) and
//     giving it back at once: permits granted per second and the wait
//     (request sent to permit granted), beside Curator's
//     InterProcessSemaphoreV2 when the zookeeper peer runs (its lock
//     recipe on a locks node lets one taker at a time create a lease and
//     wait, under a child watch, until at most 4 leases are left). etcd's
//     client has no semaphore recipe, so there is no etcd peer;
//   - rwlock: the same workers on one read/write lock, each turn a read
//     or, one turn in ten (seeded), a write, held for a millisecond:
//     holds per second and the wait of each mode, beside Curator's
//     InterProcessReadWriteLock (one queue of read and write children: a
//     writer waits for the child ahead of it, a reader for the first
//     writer ahead). Both scenarios count the holds inside their critical
//     sections and fail if more than 4 permits, or a write beside any
//     other hold, were ever held at once;
//   - lockset: -contention-clients workers over 128 names, each turn two
//     distinct names drawn at random (seeded), taken with wait and
//     released at once, first as one lock set (POST /v1/locksets, then
//     /v1/locksets/release), then as two single locks taken one by one in
//     sorted order, the classic deadlock-free way, and released in
//     reverse: cycles/s of each, the ratio, and the acquire latency (first
//     acquire sent to every name granted). Both count each name's holders
//     inside the critical section and fail if a name was ever held by two
//     workers at once;
//   - kv: keys of coordination data, at each -clients count: puts
//     (PUT /v1/kv/{key}, unconditional, a 99-byte JSON value) and then
//     gets of a key of each worker's own, back to back, beside etcd's KV
//     over gRPC (Put and Get, a client per worker, from a load generator)
//     and, when the zookeeper peer runs (-only kv,zookeeper), setData and
//     getData of a znode of each worker's own; then how soon a watch
//     hears of a put on an idle node, 200 puts 10 ms apart, from just
//     before each put to its event: GET /v1/kv/events, etcd's Watch, and
//     ZooKeeper's exists watch, set again after each event;
//   - history, only when -only names it (it takes minutes at its default
//     million events): the audit trail filled through the node's engine in
//     this process (acquire+release cycles in sessions on 1,000 locks, a
//     few revoked, a few left to expire), then read through the HTTP API
//     one request at a time: the newest, a middle and an old page,
//     filtered pages (an owner nobody is, the rare revokes), one lock's
//     page, RSS before and after 100 filtered reads, and the SSE replay
//     from revision 0, each beside its target;
//   - scale: sessions holding many locks, renewed on schedule, with a small
//     acquire+release probe alongside: RSS, renew and probe latency.
//
// The HTTP load comes from a second process, this binary re-executed with
// BATON_BENCH_LOADGEN set, so the CPU time this process spends (measured
// with getrusage around each scenario) is baton's and etcd's alone. The
// load generator does its setup, says it is ready, waits until this process
// has read its counters, runs, and reports its counts and latencies as JSON
// on its stdout. Raft entries are counted from etcd's own
// etcd_server_proposals_committed_total, read from this process's default
// Prometheus registry, where the embedded member registers it.
//
// Speed is reported, never asserted: the smoke test checks only that every
// figure is there and sane.
//
// This package is the command: the flags, the node, the order of the
// scenarios, baton's own scenarios and the load generator's dispatch.
// What it wires together lives under internal/, each imported one way,
// downwards:
//
//   - measure: latency histograms and what a scenario cost (CPU, raft
//     entries, key writes, RSS), the bottom of the bench;
//   - load: the load generator process and the loops workers run in it;
//   - contend: the contention loop and how its grants are judged, shared
//     by baton's scenarios and the peers' so that both are judged alike;
//   - httpapi: the client of baton's HTTP API the load generators use;
//   - httpfloor: the floor server, a server under test rather than the
//     harness;
//   - peer/redis, peer/zookeeper, peer/etcdrecipe: each peer's recipe and
//     what it measures of its own server, apart from baton's scenarios
//     and from one another, each with its own client library;
//   - report: the results, their ratios and the tables; it knows the
//     peers' servers only as they describe themselves.
package main
