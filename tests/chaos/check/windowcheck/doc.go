// Package windowcheck is the fault-injection suite's check of at-least
// windows (tests/chaos): a hold acquired with min_hold keeps its lock, or
// its semaphore's seat, until its acquired_at plus min_hold, however
// early it ends, so no grant of that lock (no grant past the semaphore's
// limit, counting the seats windows keep) happens inside the window.
//
// It is a package of its own, beside package check, because check is at
// its size limit: the record (check.Op with MinHold, check.AuditEvent with
// Time) stays there, and the check is here.
//
// A window is known from the op that asked for it (Op.MinHold, matched to
// the trail's acquired event by the thing and its owner, which the
// workload keeps unique, so an Unknown acquire that took effect has its
// window too) and starts at that event's Time, the hold's acquired_at.
// Every node runs on one machine, so the nodes' clocks agree; the only
// slack is the millisecond the events' times are rounded to.
//
// Like check, it starts nothing and never fails a test: it returns what
// it found.
//
//	problems := windowcheck.CheckWindows(ops, events)
package windowcheck
