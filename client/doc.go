// Package client is the Go client of baton, the distributed lock service
// with fencing tokens. It speaks baton's HTTP API, turns the server's
// problem+json answers back into errors that errors.Is and errors.As
// understand, renews held locks in the background, and says when a lock is
// lost. It imports nothing but the standard library and package problem,
// the vocabulary of problem codes it shares with the server.
//
// # The fencing pattern
//
// A lock alone cannot protect a resource: its holder may stall (a GC
// pause, a frozen VM, a partition) for longer than the lease, wake up and
// write, unaware that somebody else holds the lock by now. So every grant
// carries a token, a number greater than any granted before for that
// lock and never lower than any granted before for another; the holder
// passes it with each write, and the resource refuses a write whose token
// is below one it has already seen:
//
//	c, err := client.New() // BATON_ADDR, or http://127.0.0.1:8080
//	if err != nil { … }
//	lk, err := c.Acquire(ctx, "ledger-writer", client.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute})
//	if err != nil { … } // errors.Is(err, client.ErrHeld) when the wait ran out
//	defer lk.Release(context.Background())
//
//	// The storage checks the token. For storage that cannot, baton keeps
//	// a fenced register that does:
//	_, err = c.PutFenced(ctx, "ledger", lk.Token(), balance, "")
//	if errors.Is(err, client.ErrStaleToken) {
//		// A newer holder has written: we lost the lock at some point.
//	}
//
// Stop working when Lost is closed: the lock was revoked or released
// elsewhere, or its lease ran out, judged by this client's own clock,
// before a renew got through:
//
//	select {
//	case <-lk.Lost():
//		log.Print(lk.Err()) // wraps client.ErrLockLost
//	case <-workDone:
//	}
//
// Lost can only fire after the fact, so the token check remains what makes
// writes safe. While a Client holds locks it keeps one event stream open
// (GET /v1/events, filtered to the lock when all its holds have one
// name), so a revoke or an expiry reaches Lost within milliseconds, not
// at the next renew; renewals stay the liveness check, and a stream that
// cannot connect never makes a lock look lost.
//
// # Leader election
//
// Campaign makes the caller the leader of an election, or waits in line
// for it (first come, first served, across nodes). A *Leadership is kept
// as a *Lock is, by the same renewal, client clock and event stream, so
// its Lost fires within a second of a revoke, an expiry or a resignation
// elsewhere. Its token fences the leader's writes, and a fenced write may
// require exactly that leadership:
//
//	ld, err := c.Campaign(ctx, "billing", client.CampaignOptions{Value: "10.0.0.5:8080", Wait: time.Minute})
//	if err != nil { … } // errors.Is(err, client.ErrElectionHeld) when the wait ran out
//	defer ld.Resign(context.Background())
//	_, err = c.PutFencedWith(ctx, "ledger", ld.Token(), balance, client.PutFencedOptions{Election: "billing"})
//
// Leader says who leads; Observe follows every change of leader or value,
// resuming after a broken stream without a gap or a repeat.
//
// # Semaphores
//
// AcquirePermit takes one of a semaphore's limit permits, or waits in line
// for one (first come, first served, across nodes). A *Permit is kept as
// a *Lock is, by the same renewal, client clock and event stream, and has
// a fencing token of its own; its Lost fires within a second of a revoke,
// an expiry or a release elsewhere. The limit is stored with the
// semaphore, so holders cannot silently disagree about it:
//
//	p, err := c.AcquirePermit(ctx, "heavy-jobs", 3, client.PermitOptions{Wait: time.Minute})
//	if err != nil { … } // errors.Is(err, client.ErrSemaphoreFull) when the wait ran out (Error.Holders);
//	                    // client.ErrLimitMismatch when it is held under another limit (Error.Limit)
//	defer p.Release(context.Background())
//
// Semaphore shows its permits and waiters, Semaphores lists those held,
// and RevokePermit ends one permit by its token.
//
// # Read/write locks
//
// AcquireRW takes a Read hold (shared with other readers) or the Write
// hold (alone) of a read/write lock, or waits in line for it, strictly
// first come, first served: a reader behind a waiting writer waits too, so
// writers never starve. An *RWHold is kept as a *Lock is, by the same
// renewal, client clock and event stream, and has a fencing token of its
// own; a write hold's token is above that of every hold that ended before
// it, and a fenced write may require exactly the current write hold:
//
//	w, err := c.AcquireRW(ctx, "catalog", client.Write, client.RWOptions{Wait: time.Minute})
//	if err != nil { … } // errors.Is(err, client.ErrHeld) when the wait ran out (Error.RWHolders)
//	defer w.Release(context.Background())
//	_, err = c.PutFencedWith(ctx, "catalog-data", w.Token(), data, client.PutFencedOptions{RWLock: "catalog"})
//
// RWLock shows its mode, holds and waiters (each with its Mode), RWLocks
// lists those held, and RevokeRW ends one hold by its token.
//
// # Lock sets
//
// AcquireSet takes several locks at once, all or none, every one with the
// same token: both accounts of a transfer. With Wait the set queues in
// every lock's queue at once, and sets and single locks are served in one
// order, so no two sets deadlock whatever order they name their locks in.
// A *LockSet is kept as a *Lock is, renewed as one; each of its locks is
// an ordinary lock that can be revoked on its own, and the set's Lost
// fires as soon as any of them ends:
//
//	s, err := c.AcquireSet(ctx, []string{"acct-1", "acct-2"}, client.LockSetOptions{Wait: time.Minute})
//	if err != nil { … } // errors.Is(err, client.ErrHeld) when the wait ran out (Error.Holder)
//	defer s.Release(context.Background())
//
// # Requests to yield
//
// Anyone may ask a hold to give way without ending it: Yield asks a
// lock's holder, YieldLeadership a leader, YieldPermits a semaphore's
// permits and YieldRW a read/write lock's holds, each with who asks and
// why. Every hold (a *Lock, *Leadership, *Permit, *RWHold or *LockSet)
// hears the requests made of it on YieldRequested, within milliseconds,
// from the Client's event stream, and chooses whether to release:
//
//	for y := range lk.YieldRequested() { // closed when lk is no longer kept
//		log.Printf("%s asks for %s: %s", y.Owner, lk.Name(), y.Reason)
//		finishSoon() // then lk.Release(ctx)
//	}
//
// # Errors
//
// Answers of the server are *Error values carrying the problem's code,
// detail and members (the holder of a held lock, the holds in the way of
// a read/write lock's, the permits of a full semaphore, the largest token a register has seen, the cap that was
// reached). errors.Is matches them against ErrHeld, ErrNotHeld,
// ErrElectionHeld, ErrNoLeader, ErrSemaphoreFull, ErrLimitMismatch,
// ErrTokenMismatch, ErrStaleToken, ErrNotHolder, ErrSessionNotFound,
// ErrNotFound, ErrInvalid, ErrUnavailable, the caps' ErrTooManyWaiters,
// ErrTooManyLocksInSession, ErrTooManySessions, ErrTooManyStreams and
// ErrRateLimited, and Sentinel(code) for any code of package problem. A
// full data store matches ErrNoSpace (and, as a 5xx, ErrUnavailable), and
// an operator's Recover that freed too little ErrStillFull.
//
// # Retries and failover
//
// With several endpoints, calls go to the node that answered last and move
// on when a node is unreachable or answers 503. Calls that are safe to
// repeat (reads, renewals, releases by token, fenced writes) are retried,
// with backoff honouring Retry-After, within the context's deadline. An
// acquire, a session creation or a revoke is not repeated once it may have
// reached a node: it fails with ErrUnavailable, and its outcome is
// unknown. Each call's doc comment says which it is.
//
// # HTTPS
//
// https:// endpoints are verified against the system's roots plus
// Config.TLSConfig.CAFile (BATON_CACERT); a node started with
// --tls-client-ca also needs a client certificate, TLSConfig.CertFile and
// KeyFile (BATON_CERT, BATON_KEY):
//
//	cfg := client.DefaultConfig()
//	cfg.Endpoints = []string{"https://baton1:8080"}
//	cfg.TLSConfig = client.TLSConfig{CAFile: "ca.pem", CertFile: "me.pem", KeyFile: "me-key.pem"}
//	c, err := client.NewWithConfig(cfg)
package client
