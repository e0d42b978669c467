// Package cli holds baton's client subcommands (acquire, release, renew,
// status, list, history, revoke, yield, watch, sessions, exec, elect, leader,
// member, healthcheck), built on package client (member on etcd's
// client). main adds them next to "serve".
//
//	root.AddCommand(cli.Commands()...)
//
// Semaphores go by the lock commands with a flag: "exec --permits N"
// runs a command holding one of N permits, "status --semaphore",
// "list --semaphores", "revoke --semaphore --token", and "history" and
// "watch" with --semaphore NAME, as elections have --election.
// Read/write locks likewise: "exec --read" and "exec --write" run a
// command under a read hold or the write hold, "status --rwlock",
// "list --rwlocks", "revoke --rwlock --token", and "history" and "watch"
// with --rwlock NAME. Several names before "--" make "exec" take them as
// one lock set, all at once or none, with one token (BATON_LOCKS,
// BATON_TOKEN).
//
// Exit codes: 0 success; 1 any other error; 2 bad usage (a semaphore's
// permits held under another limit included); 3 the lock is held by
// someone else (every permit of the semaphore is; holds of the read/write
// lock are in the way); 4 not held or not
// found; 5 stale token or token mismatch; 6 baton unavailable (a full
// data store included); 7 refused: no valid bearer token (--auth-token,
// BATON_AUTH_TOKEN) or a role too weak for the call; 8 a cap or rate
// limit was reached (too_many_waiters, rate_limited, …): try later. Each
// server answer's exit code comes from its problem code, in package
// problem. "baton exec" and "baton elect" exit with their command's exit
// code, or 10 if the lock (any lock of the set, the leadership, the
// permit, the read/write lock's hold) was lost while the command ran.
// "baton healthcheck" exits 0 or 1 only, as a container HEALTHCHECK must.
//
// Errors: one line on stderr, "baton: " and the call and what the server
// said, with its status and code: baton: revoke "wlock": lock not held
// (404 not_held). With -o json a failure also prints one JSON object on
// stdout: the server's problem document (type, title, status, code,
// detail; field, holder, holders, max_token, retry_after, limit when
// set), or for the CLI's own failures code "unavailable" (no node
// answered), "usage", "lock_lost" or "error"; with message (the stderr
// line) and exit_code.
package cli
