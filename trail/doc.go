// Package trail is baton's audit trail: every grant and end of a hold,
// and the few actions revisions cannot tell, exactly once, in the order
// of etcd's revisions, kept in etcd for a retention and served as
// history pages, event streams and election observations.
//
// It runs beside the hold engine (package lock), which knows nothing of
// it: the engine writes holds, and the trail reads them from etcd's
// revisions.
//   - The history index (historyindex.go), on the node whose embedded
//     etcd member leads (on every node over an external etcd), watches the engine's keys with their previous values and
//     derives each revision's events from them (derive.go): a lock key
//     put is an acquire, its delete a release, and a delete in the
//     revision a lease ended an expiry. It writes them, in batched txns
//     that compare its cursor, under trail/ and trailname/ (histkeys.go,
//     histchunks.go): however many nodes run an index, each revision is
//     written once.
//   - Compaction waits for it (compactor.go): on the embedded member,
//     the trail compacts etcd itself, never past its cursor, up to
//     bounds of time and space; a stretch of revisions it could not read
//     is recorded as a gap event (historybackfill.go), never lost
//     silently.
//   - Retention drops the oldest events a slice at a time, by lease
//     (historyretention.go).
//   - History pages read newest first with one range per page, whatever
//     the trail holds (history.go, trailread.go); event streams replay
//     from the trail and then follow one shared etcd watch
//     (events.go, streamhub.go); Observe follows an election (observe.go).
//
// Usage, beside an engine:
//
//	eng, err := lock.New(ctx, cli, lock.DefaultConfig())
//	if err != nil { ... }
//	tr, err := trail.New(ctx, eng, trail.DefaultConfig())
//	if err != nil { ... }
//	defer eng.Close()
//	defer tr.Close() // before the engine
//	evs, next, err := tr.History(ctx, trail.HistoryOptions{Lock: "nightly-recon", Limit: 100})
package trail
