// Package chaos is baton's fault-injection suite, in the spirit of
// Jepsen's tests of etcd and etcd's own robustness suite. Its test starts
// three real baton processes (tests/testcluster), runs clients on every
// node while a nemesis kills, pauses and partitions members, moves etcd's
// leadership (MoveLeader), makes a few hundred clients of one node leave
// together (a burst) and pauses a client holding a lock, records every
// request (Op, History, Driver), and then checks the history:
// linearizability for a lock with its fenced register (porcupine,
// LockModel), token order in real time, and an exactly-once audit trail.
//
// This package runs the cluster, the nemesis and the clients; its drivers
// (Driver) send each request and record it (History) as an Op. Everything
// that reads a recorded run is package check (tests/chaos/check): the Op
// and AuditEvent types, the porcupine models, the order checks, the
// audits and the resolvers named below. It needs no process, so its unit
// tests are fast and TestReplay checks a saved run with it alone; it
// imports nothing from here.
//
// Beside the lock clients, election clients campaign (half of them waiting
// in line), renew, proclaim, write to a fenced resource under their
// leadership (a write that names the election), read the leader and
// resign, and sometimes stall past their TTL and act as leader after. Their
// ops are checked against ElectionModel (CheckElections: one leader at a
// time, terms one apart, proclaim, renew and resign only by the current
// leader, fenced writes only while leading), once ResolveCampaigns has
// settled each Unknown campaign by the trail, and the trail against them
// (CheckElectionAudit: terms 1, 2, 3, … with rising tokens, every
// acknowledged campaign, proclaim and resign recorded exactly once, no
// refused candidate elected).
//
// Semaphore clients take permits of two semaphores (limits 2 and 3; the
// second's acquires wait in line half the time, the first's never), renew
// and read them, give them back (sometimes twice), abandon them, and
// sometimes stall past their TTL and renew and release after. Their ops
// are checked against SemaphoreModel (CheckSemaphores: never more than
// the limit held, rising tokens, renew and release only of a permit held,
// reads that show exactly the permits held, the holders a refusal
// answers with among them), once ResolvePermits has
// settled each Unknown acquire by the trail and marked which permits the
// trail shows expired (only those may vanish unseen; one released was
// held until its release) and which refusals are strict (no waiter can
// have been ahead, so every permit was held: checked on the first
// semaphore, whose queue stays empty; a refusal behind a waiter is not
// checkable without the queue, and passes). The trail is checked against
// them too (CheckSemaphoreAudit: replayed in revision order, with each
// expiry at the revision etcd deleted the permit, never more than the
// limit held; acquired events under the limit asked for, with rising
// tokens; every acknowledged acquire and release recorded exactly once;
// no refused acquire granted).
//
// Read/write lock clients take read holds (four in five) and write holds
// of two rwlocks (the first's acquires never wait, the second's wait in
// line half the time), renew and read them, write to the fenced resource
// named like the rwlock naming it as the guard (a writer each round, a
// reader now and then, which must be refused), release them (sometimes
// twice), abandon them, and sometimes stall past their TTL and write,
// renew and release after. Their ops are checked against RWLockModel
// (CheckRWLocks: one writer or any number of readers at a time, rising
// tokens, renew and release only of a hold held, reads that show exactly
// the holds held in their mode, the holders a refusal answers with among
// them, fenced writes naming the rwlock accepted only for the current
// write hold and never below a token already accepted), once
// ResolveRWLocks has settled each Unknown acquire by the trail, marked
// the holds the trail shows expired and the refusals that are strict (no
// waiter can have been ahead: on the first rwlock; a strict refusal fails
// only when nothing in its way is known to be held, as the model cannot
// tell a mortal hold that expired unseen from one still held, and a
// refusal behind a waiter passes). The trail is checked against them too
// (CheckRWLockAudit: replayed in revision order, never a writer beside
// another hold; every write grant's token above every token of a hold
// ended before it; rising tokens; every acknowledged acquire and release
// recorded exactly once, in its mode; no refused acquire granted; and
// FIFO where it can be told: an acquire called after a read showed W
// waiting is not granted before W, and, from the trail alone, a hold
// whose queued_at is more than fifoSlack after another's is not granted
// before it; queued_at is read before the txn that queues, so closer
// ones say nothing of the queue's order).
//
// Lock set clients take sets of two or three locks of one pool (six by
// default) at once, in random orders, three times in four waiting in
// line, renew them, write with the set's token to the fenced resource
// named like each member, read members, release them (sometimes twice),
// abandon them, and sometimes stall past their TTL and write, renew and
// release after; two of the lock clients take single locks of the same
// pool, so that sets and single locks contend. Their ops are checked
// against LockSetModel (CheckLockSets: one model over the whole pool, as
// a set couples its locks; a set's grant is one step that takes every
// member, with a token above every grant of each, a set's renew needs
// every member held by it, its release one, single locks step as in
// LockModel, and a set's members end together, so a member seen free or
// held by another while another is still seen held by the set is a set
// held in part; a hold is known by its grant, as grants batched into one
// txn share a token), once ResolveLockSets has settled each Unknown
// acquire by the trail and turned the holders a refusal shows into reads.
// The trail is checked against them too
// (CheckLockSetAudit: every acknowledged set grant is one acquired event
// per member, each naming the set, all at one revision equal to the
// token, under one owner; every member's hold ends exactly once, and a
// set's members end together, at one revision; every release OK ends
// each member as released; no refused set acquire granted, no grant that
// no OK or Unknown acquire explains; and no two holds of a pool's lock,
// a set's or a single lock's, overlap in the trail).
//
// Key clients read, put, compare-and-set (from the revision a read just
// found, or create only) and delete (comparing half the time) a few keys
// whose names hold a "/", put them fenced by a lock they take (sometimes
// stalling past its TTL and putting again, which must be refused once
// the lock has passed on), and bind them to sessions that they renew and
// delete, let expire or abandon. Their ops are checked, by package
// kvcheck (tests/chaos/check/kvcheck), against KeyModel (CheckKeys: per
// key, a register with compare-and-set whose revisions are etcd's; a
// put at a revision above every one placed before it, a compare-and-set
// that takes effect exactly at its if_revision, 0 for none, a
// revision_mismatch that shows the key's revision then, reads of the
// latest put or of the key's absence at a revision no lower than the
// last placed), once ResolveKeys has marked the incarnations the trail
// shows deleted by their session's end (only those may vanish without
// an op, and at that revision); across keys in real time (CheckKeyOrder:
// a put's revision above every revision seen before its call, a key read
// missing at no lower one, no two puts at one revision, no fenced put
// accepted after a later grant of its lock or a release of its token
// had returned); and the trail against them (CheckKeyAudit: versions 1,
// 2, 3, … per incarnation; every acknowledged put once, at its
// revision, and every read's put there; every acknowledged delete
// matched to one of its own between what was seen before and after it;
// no write that no acknowledged or Unknown op could have made; a
// session's keys deleted in one revision, never while an op found the
// session alive after, nor after an op said it had ended, and no key
// outliving its session; a fenced put accepted only within its lock's
// hold, and not refused while the hold was current all along). Once the
// run settles they wait for every session to end, read every key and
// put one more, so that the trail they check is whole.
//
// Some clients ask for at-least windows (min_hold, from half of
// -chaos.min-hold to all of it, well below the TTL): the odd lock clients
// that do not share the lock sets' pool, with every acquire, and the
// acquires of every semaphore but the first (whose refusals stay strict:
// a window keeps a seat, so a refusal beside one says nothing of the
// permits held). Package windowcheck (tests/chaos/check/windowcheck)
// holds the trail against them (CheckWindows: no grant of a lock inside
// an earlier hold's window, however that hold ended, and no grant of a
// semaphore that the seats held and the windows still open take past its
// limit; a window starts at its acquired event's time, the hold's
// acquired_at, and the nodes share one clock).
//
// Stream-bound session clients create sessions bound to a stream with a
// grace of 600ms to 1s, open the stream (GET /v1/sessions/{id}/stream) on
// a node, take one or two locks in the session, hold the stream for a
// while and cancel it, then reopen it on another node within the grace,
// after it, or never (and at once when it broke); a watch of etcd's
// stream records gives the server's time of each detach. Package
// streamcheck (tests/chaos/check/streamcheck) holds the trail's ends of
// the sessions' holds against them (CheckStreams: after a close with no
// reattach within the grace, the session's holds end (session_expired)
// within the grace, one keep-alive interval (500ms) and 250ms of slack of
// the server's detach (of the client's cancel when the watch missed it),
// and no attach takes after that; a close with a fault from it to that
// deadline (a node killed, paused or cut off, leadership moved, a burst)
// or a stream that broke gets the lease's TTL and an election timeout
// from the close or the fault's end instead, as the node that would end
// the session may be dead and the lease ends it; no session ends while a
// stream of it is open on a node without a fault within a lease TTL
// before, nor before its grace has passed since its last close). A run
// with stream clients keeps the records and the faults in streams.json.
//
// Every run's nodes start with an auth policy file (policy.go) of two
// credentials: the operator's, "": admin, with which every client and
// checker above acts, as it would without authentication, and the narrow
// clients', which may write names under "n." and read those under
// "shared." (narrowRules). A narrow client, on a random node each
// request, takes and ends holds of its own names of every kind (locks
// with fenced writes, permits, rwlock holds, leaderships, lock sets,
// keys, fenced keys, sessions with owners under "n.") and asks to revoke
// them (an admin's call); tries every write and read of every kind on
// the other clients' names and on names under "shared.", which a shared
// writer fills with the operator's credential (holds, sets, keys,
// sessions, and a session with an owner outside the rules that the
// narrow client reads, renews, deletes and acquires into); lists every
// kind one to three entries a page, following cursors, with prefixes
// inside, outside and across its rules; and reads history pages. Two
// more hold /v1/events and /v1/kv/events from revision 0 with the narrow
// credential, moving to another node every 1 to 5 s or when a node
// fails them, and resuming with Last-Event-ID. Package scopecheck
// (tests/chaos/check/scopecheck) holds what they did and saw against
// the rules (Check: no request outside the rules succeeded, each was
// refused 403 forbidden, naming the credential's prefixes and the role
// the call needs, or got no answer, 503 or 429, or session_not_found
// for an ended session's ID; none inside them was refused as forbidden;
// no list entry, history or stream event, session or holder it was
// given names anything it may not read; each stream gave every event of
// the trail about a name it may read between the revision each
// connection resumed after and the last it gave; the trail has no event
// of its credential on a name it may not write; and the run was not
// vacuous: writes in its rules succeeded, writes under "shared." were
// refused, the streams gave events, the trail has its events). The
// other checkers read the trail without the names under "n." and
// "shared." (scopecheck.Without): no op of theirs explains those.
//
// TestChaos_TrailStopped runs the same workload and checks with another
// nemesis: it halts every node's audit trail writer (the failpoint of a
// baton built with -tags failpoints, testcluster.Node.HaltTrail) for three
// times etcd's compaction retention, moving etcd's leadership meanwhile,
// checks that compaction was held back behind the trail, and resumes
// them. Every run checks that the trail holds no gap event.
//
// Flags (after the package on go test's command line): -chaos.duration is
// how long each seed injects faults (40s by default, the CI profile),
// -chaos.seeds the fixed seeds, -chaos.random one more random seed,
// -chaos.electors and -chaos.elections the election workload (0 electors:
// none), -chaos.campaign-wait=false campaigns that never wait,
// -chaos.semaphores the semaphore clients (0: none), -chaos.semaphore-limits
// the semaphores' limits (one semaphore each, up to 8),
// -chaos.permit-wait=false acquires that never wait, -chaos.rwlocks
// the read/write lock clients (0: none), -chaos.locksets the lock set
// clients (0: none), -chaos.lockset-locks the locks of their pool,
// -chaos.lockset-sharers how many lock clients take single locks of it,
// -chaos.min-hold the longest at-least window (0: none), -chaos.kv
// the key clients (0: none) and -chaos.kv-keys their keys,
// -chaos.streams the stream-bound session clients (0: none), and
// -chaos.narrow the narrow clients (0: none, and no stream holders or
// shared writer either).
// Two-minute seeds,
// with go test's timeout lifted:
//
//	go test -race ./tests/chaos -run TestChaos -chaos.duration 2m -chaos.seeds 1,2,3 -timeout 0 -v
//
// A run's folder (history.json, audit.json, scope.json with the narrow
// clients' requests, nemesis.log, node logs and any porcupine
// visualisation, linearizability.html, elections.html,
// semaphores.html, rwlocks.html, locksets.html or keys.html) is
// kept when it fails, or with -chaos.keep; -chaos.replay FOLDER checks it
// again without a cluster (TestReplay) and logs the ops where a model
// first fails. docs/CLUSTER.md describes what the suite injects and how
// to run it for longer.
package chaos
