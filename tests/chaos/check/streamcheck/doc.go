// Package streamcheck is the fault-injection suite's check of sessions
// bound to a stream (tests/chaos): such a session lives while its stream
// (GET /v1/sessions/{id}/stream) is open on some node, and once none has
// been open for its grace, the node where the last one closed ends it,
// with its holds (session_expired).
//
// It is a package of its own, beside package check, because check is at
// its size limit: the record (check.Op with the stream kinds, Grace, and
// Value naming a stream; check.AuditEvent) stays there, and the check is
// here, with the two records only this check reads: Record, a write of a
// session's stream record as a watch of etcd saw it (the server's own
// time of each attach and detach, Since), and Fault, when a node could
// not serve or end streams.
//
// CheckStreams holds the trail's session_expired events of each
// session's holds (the session's end: the earliest, at the time the
// trail read the revoke's revision) against the streams the clients
// opened and closed:
//
//   - after a close with no reattach within the grace, the session ends
//     by the close plus the grace, one keep-alive interval and Slack,
//     measured from the server's detach (its stream record's Since) when
//     the watch saw it, else from the client's cancel, which is earlier:
//     a stricter bound. A later attach that succeeds past that deadline
//     is a session outliving it too. The bound holds while no fault
//     touched the cluster from the close to the deadline; a close with a
//     fault in that time (a node killed, paused or cut off, leadership
//     moved), and a stream lost rather than cancelled, get the lease's
//     TTL and etcd's election timeout instead, from the close or the
//     fault's end, whichever is later: the node that would have ended
//     the session may be dead, and then the lease ends it;
//   - no session ends while a stream of it is open (from its attached
//     event to its close, as the client saw them), unless that stream's
//     node had a fault within a lease TTL and an election timeout before
//     the end, as the lease then runs out unrenewed;
//   - no session ends before its grace has passed since its last close
//     (the server's detach, else the client's cancel), with the same
//     exception.
//
// Every process runs on one machine, so the server's times (the trail's
// and the stream records') and the client's share one clock; Start maps
// the run's relative times onto it.
//
//	rep := streamcheck.CheckStreams(ops, events, records, faults, cfg)
package streamcheck
