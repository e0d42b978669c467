// Package kvcheck is the fault-injection suite's checker of keys (tests/chaos,
// kvdriver.go): what a run recorded of the key ops (check.Op with Key set:
// kv-put, kv-get, kv-delete) and the session ops beside them, held against
// a model and against the audit trail's key events (kind "key", types
// "put" and "delete").
//
// It is a package of its own, beside package check, because check is at
// its size limit: the record (check.Op, check.AuditEvent, the kinds) and
// the porcupine plumbing (check.Model, check.CheckModel) stay there, and
// everything that reads keys is here, as one unit: the model (KeyModel,
// CheckKeys), the resolver whose marks it reads (ResolveKeys), the
// real-time order of revisions and fenced puts (CheckKeyOrder) and the
// audit (CheckKeyAudit).
//
// A key's revision is etcd's ModRevision, one sequence for every key and
// lock, so revisions order ops across keys in real time: what an op
// returned having seen bounds what any op called after it may be at
// (clock). The model is per key, as porcupine's partitions are; the
// order across keys is CheckKeyOrder's and CheckKeyAudit's.
//
// Like check, it starts nothing and never fails a test: each checker
// returns what it found.
//
//	vanishes := kvcheck.ResolveKeys(events)
//	ok, err := kvcheck.CheckKeys(ops, vanishes, 5*time.Minute, "keys.html")
//	problems := append(kvcheck.CheckKeyOrder(ops), kvcheck.CheckKeyAudit(ops, events)...)
package kvcheck
