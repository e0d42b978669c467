// Package check is the fault-injection suite's checker (tests/chaos):
// functions of what a run recorded, the clients' operations (Op) and the
// audit trail (AuditEvent, from GET /v1/history). It starts no process,
// needs no namespace and opens no connection; its only I/O is porcupine's
// visualisation, written where a caller asks. So its unit tests take
// milliseconds, and TestReplay checks a saved run again with it alone.
//
// The seam runs between running a cluster and reading a run, and all of
// the reading is here:
//
//   - The record: Op, its Kinds and Results, and AuditEvent. The drivers
//     fill them in, but the checkers define them: which model an op
//     belongs to, and the marks a resolver leaves on an op for a model
//     (mortal, strict), which never reach history.json.
//   - The porcupine models (LockModel, ElectionModel, SemaphoreModel,
//     RWLockModel, LockSetModel), each with its Check function, and the
//     real-time orders of tokens and fenced writes (CheckTokenOrder,
//     CheckFencedOrder). The keys' model, order check, audit and resolver
//     are package kvcheck's, under this one: the record of their ops is
//     here, with Model and CheckModel, the plumbing every model shares.
//   - The audits (CheckAudit, CheckElectionAudit, …), which hold the
//     trail against the ops, and the resolvers (ResolveCampaigns,
//     ResolvePermits, …), which settle Unknown ops by the trail for the
//     models. Audits and resolvers read the trail through the same
//     readers, and the resolvers' marks are read only by the models: the
//     three are one unit, which splitting would turn into exports.
//
// Invariants: check imports nothing of the suite, which imports it; no
// checker fails a test or logs: each returns what it found (a line per
// violation, or ok false with an error), and the suite or TestReplay
// reports it.
package check
