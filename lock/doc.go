// Package lock is baton's lock engine: sessions, locks with fencing
// tokens, leader elections, semaphores, read/write locks, lock sets, FIFO
// waiting, lock-delay and fenced values, all kept in etcd and reached only
// through a *clientv3.Client. It knows nothing of HTTP, so it runs the
// same over the embedded member's in-process client or over a client of
// an external etcd cluster.
//
// The engine writes holds; the audit trail (package trail), which runs
// beside it, reads them from etcd's revisions. The engine knows nothing
// of the trail: it writes only the few events revisions cannot tell (a
// revoke's reason, a fence reset, a proclaimed value), and, for holds
// begun before storage format 5, their pending records.
//
// # Guarantees
//
// A lock is one etcd key. Acquire creates it in a transaction guarded by
// CreateRevision == 0, so at most one holder exists at any revision. The
// key's ModRevision is the fencing token: the key is never rewritten while
// held, so the token never changes, and since etcd revisions only grow, a
// lock's tokens strictly increase (each is unique to its lock), and a
// grant's token is never lower than any token granted before it, of any
// lock, across restarts and leader changes. Acquires and releases that
// arrive while earlier ones are in flight go to etcd together, as nested
// txns of one txn (one raft entry), so concurrent grants of different
// locks may share a token value; two of one lock never do, and a grant
// still exceeds every token handed out before it was asked for. Release,
// revoke and renew are guarded by ModRevision == token, so a stale holder
// can never touch a newer one. Holding a lock does not stop a paused
// holder from acting late: only resources that check the token (see
// PutFenced) are safe.
//
// A release hands the lock to the oldest waiter in its own transaction
// when it can: it puts the holder record that the waiter's queue entry
// carries over its own, under the waiter's lease, and deletes the entry,
// if that entry is still there (a compare: it was the oldest in the
// release's read, and every entry queued since is younger). That begins
// the next hold at the release's revision, its token, in one raft entry;
// the waiter learns of it from the lock key's put. Its own lease is kept
// alive while it waits, so the hold starts with its TTL. The node that
// handed the lock over keeps the entry that was behind it, so that under
// contention the next release through it needs no read of the queue.
// The waiter behind the new holder learns from the same revision's events
// that it heads the queue now (its entry ahead deleted as the lock was
// put), and waits on the lock with no read either.
//
// # Ownership
//
// With a Caller in the context (WithCaller; the HTTP server puts the
// request's credential there when authentication is on), a hold records
// the credential that acquired it, and a session the one that created it.
// Release and Renew of a hold, RenewSession and DeleteSession, and an
// Acquire into a session then answer ErrNotOwner, changing nothing, to any
// other credential but an admin. The check reads the records these calls
// read anyway (only an Acquire into a session reads one more, the session
// record, and then requires that key's CreateRevision in its txn), and it
// holds at commit: a holder record is never rewritten and the end txn
// compares ModRevision with the token.
//
// # Leader changes
//
// While etcd's leadership moves, a member restarts or the quorum is lost,
// every call may fail with ErrUnavailable (the HTTP API answers 503 with
// Retry-After), never with another error for it. A request that etcd
// refused before applying it (a dropped proposal, a keep-alive to a member
// that just stopped leading) is sent again within the call, twice at most,
// before that. Otherwise the call may or may not have taken effect: an
// Acquire without a session that answers ErrUnavailable revokes its own
// lease, so a grant it could not report ends with it (in a session, such
// a grant shows among the session's locks); Release and Renew are safe to
// repeat. A waiting Acquire keeps its queued lease alive through the
// change; one whose wait runs out while its queue entry cannot be removed
// answers ErrUnavailable, not ErrHeld, since a release may still grant
// the entry (its own lease is revoked, which ends such a grant).
//
// # Key schema
//
// Every key lives under Config.Prefix (default "/baton/"):
//
//	locks/<name>                  holder record; lease: the lock's own or its session's; token = ModRevision
//	sessions/<id>                 session record; lease: the session (id is the lease ID in hex)
//	sessiontally/<id>/<which>[/<i>] a session's acquired and released tallies, in shards (Keys.TallyShard); lease: the session
//	sessionowners/<owner>\x00<id> the same record, to list sessions by owner prefix; lease: the session
//	queue/<name>/<waiter>         a waiting acquire, with the holder record it asks a release to grant; lease: the serving node's waiter lease; order = CreateRevision
//	delay/<name>                  lock-delay guard of the current or last hold (no lease)
//	leases/<lease>                a lease's marker, put by the first grant under a lease of a hold's own; lease: that one (trail/derive.go)
//	audit/<name>/<hold>/a         pending record of one hold: its "acquired" event, then, written over it, the event that ended it (released, expired, revoked, session_expired) with the acquired one inside; kept until its end is indexed (no lease)
//	audit/<name>/<hold>/e         the end's pending record instead, beside the acquired one, in storage format 1 (format.go)
//	audit/<name>/<id>/d           pending record of a delay_cleared (…/p: an election's proclaimed; …/y, under a hold's key name, a yield_requested); audit/~fence/<resource>/<id>: of a fence_reset
//	trail/<rev>/<entry>           the events of one revision (a JSON array), or from storage format 4 a chunk of revisions from this one on, up to 32 events ([[rev, JSON], …]), newest first in key order (trail/histkeys.go); lease: a retention bucket
//	trailname/<kind>/<name>/<rev>/<entry> one of them in its thing's index (its JSON), or from storage format 3 a chunk of its events from this one on ([[rev, JSON], …], trail/histchunks.go); same lease
//	meta/history                  the history index's cursor, size and buckets (trail/historyindex.go)
//	meta/format                   the storage format the cluster writes (format.go); absent: 1
//	fenced/<resource>             a fenced value: {token, value}
//	fencemax/<resource>           the largest token seen for resource, zero-padded so Value compares order it
//	meta/recorder                 revision up to which expiries have been recorded
//	term/<key>                    an election's latest term; put by every grant (election.go, termCmp)
//	value/<key>                   an election's proclaimed value; lease: its leader's (election.go)
//	seats/<key>                   a thing with seats' record (a semaphore's limit); put by each of its grants (internal/core/handover.go)
//	kv/<key>                      a key of coordination data: {v: value, t, c: credential, s: session}; lease: its session's, if bound (internal/kv)
//	audit/~key/<id>/<key~>        pending record of a key's delete by a request, the key's "/"s as "~"
//
// <name> above is a key name (internal/store/kinds.go): a lock's own name, or for any
// other kind its name behind a tag no lock name can hold, so an election
// is a lock of the engine under "~election:<name>", with its term and
// value beside it. A semaphore's permits and a read/write lock's holds
// are locks of the engine in seats, "~semaphore:<name>#3" or
// "~rwlock:<name>#w", which share their thing's queue. A lock set's
// members are ordinary locks (lockset.go), each with a hold ID of its own
// made of the set's, and the set's names in its record; a waiting set has
// an entry in each member's queue, all created at one revision.
//
// Each hold has a unique hold ID stored in its holder record. A hold with
// pending records (before storage format 5) has one possible place for
// its end event, its record's second version: whichever of release,
// revoke or the expiry recorder of any node writes it first wins, and it
// is written exactly once. The trail's history index copies each pending
// record into trail/ and trailname/ under keys its revision gives, once,
// and deletes the records it replaced.
//
// # Usage
//
//	eng, err := lock.New(ctx, cli, lock.DefaultConfig())
//	if err != nil { ... }
//	defer eng.Close()
//	l, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: "nightly-recon", Owner: "w1"})
//	if errors.Is(err, lock.ErrHeld) { ... }
//	// write to storage with l.Token, then:
//	err = eng.Release(ctx, "nightly-recon", l.Token)
//
//	// Leader election: the leadership is a hold with a term and a value.
//	ld, _, err := eng.Campaign(ctx, lock.CampaignRequest{Name: "billing", Candidate: "node-a", Wait: time.Minute})
//	// lead, writing with ld.Token; then:
//	err = eng.Resign(ctx, "billing", ld.Token)
//
//	// A lock set: both accounts or neither, one token for both.
//	set, _, err := eng.AcquireSet(ctx, lock.LockSetRequest{Names: []string{"acct-1", "acct-2"}, Owner: "transfer-7", Wait: time.Minute})
//	// move the money, writing to both with set.Token; then:
//	err = eng.ReleaseSet(ctx, set.Names, set.Token)
package lock
