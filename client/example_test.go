package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/client"
)

// The fencing pattern: each writer passes its lock's token with every
// write, and the storage (here baton's own fenced register) refuses a
// write whose token is older than one it has seen. A holder that stalled
// and lost its lock without knowing can then do no harm.
func Example() {
	c, err := client.New(exampleServer())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	// Worker 1 takes the lock and writes with its token.
	w1, err := c.Acquire(ctx, "example-ledger-writer", client.AcquireOptions{Owner: "w1", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.PutFenced(ctx, "example-ledger", w1.Token(), map[string]int{"balance": 100}, ""); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("w1 wrote balance 100")

	// Worker 1 stalls (a long GC pause, say). An operator revokes its
	// lock; worker 2 takes it over and writes with its own, newer token.
	if err := c.Revoke(ctx, "example-ledger-writer", "w1 stalled"); err != nil {
		fmt.Println(err)
		return
	}
	w2, err := c.Acquire(ctx, "example-ledger-writer", client.AcquireOptions{Owner: "w2", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w2.Release(ctx)
	if _, err := c.PutFenced(ctx, "example-ledger", w2.Token(), map[string]int{"balance": 90}, ""); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("w2 wrote balance 90, token greater than w1's:", w2.Token() > w1.Token())

	// Worker 1 wakes up and writes with its old token: refused.
	_, err = c.PutFenced(ctx, "example-ledger", w1.Token(), map[string]int{"balance": 0}, "")
	fmt.Println("w1's late write refused as stale:", errors.Is(err, client.ErrStaleToken))
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println("the register has seen w2's token:", e.MaxToken == w2.Token())
	}

	v, err := c.GetFenced(ctx, "example-ledger")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stored:", string(v.Value))

	// And worker 1's release tells it what happened.
	err = w1.Release(ctx)
	fmt.Println("w1 had lost its lock:", errors.Is(err, client.ErrLockLost), errors.Is(err, client.ErrTokenMismatch))
	// Output:
	// w1 wrote balance 100
	// w2 wrote balance 90, token greater than w1's: true
	// w1's late write refused as stale: true
	// the register has seen w2's token: true
	// stored: {"balance":90}
	// w1 had lost its lock: true true
}

// A lock taken by someone else fails with ErrHeld, and the error tells
// who holds it.
func ExampleClient_TryAcquire() {
	c, err := client.New(exampleServer())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	lk, err := c.Acquire(ctx, "example-nightly-recon", client.AcquireOptions{Owner: "cron@host-a"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lk.Release(ctx)

	_, err = c.TryAcquire(ctx, "example-nightly-recon", client.AcquireOptions{Owner: "cron@host-b"})
	var e *client.Error
	if errors.Is(err, client.ErrHeld) && errors.As(err, &e) {
		fmt.Println("held by", e.Holder.Owner, "with the token we hold:", e.Holder.Token == lk.Token())
	}
	// Output:
	// held by cron@host-a with the token we hold: true
}

// Lost closes when the lock is known lost; stop the protected work then.
func ExampleLock_Lost() {
	c, err := client.New(exampleServer())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	lk, err := c.Acquire(ctx, "example-leader", client.AcquireOptions{Owner: "leader-1", TTL: 9 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lk.Release(ctx)

	// Somebody revokes it; the next renew, a third of the TTL after the
	// acquire, finds out. (A TTL of seconds leaves a loaded machine time
	// to answer that renew before the client's own clock declares it lost.)
	if err := c.Revoke(ctx, "example-leader", "failover drill"); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case <-lk.Lost():
		fmt.Println("lost:", errors.Is(lk.Err(), client.ErrLockLost), errors.Is(lk.Err(), client.ErrNotHeld))
	case <-time.After(30 * time.Second):
		fmt.Println("still held?")
	}
	// Output:
	// lost: true true
}

// Leader-only work: the leader does the work and writes with its token,
// each write requiring that exact leadership, so a leader deposed without
// knowing (a long pause, say) cannot write once another has taken over.
func ExampleClient_Campaign() {
	c, err := client.New(exampleServer())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	const election = "example-billing-leader"
	fenced := client.PutFencedOptions{Election: election}

	n1, err := c.Campaign(ctx, election, client.CampaignOptions{Candidate: "node-1", Value: "10.0.0.1:8080", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("node-1 leads")
	if _, err := c.PutFencedWith(ctx, "example-billing-run", n1.Token(), "run 1 by node-1", fenced); err != nil {
		fmt.Println(err)
		return
	}

	// An operator deposes node-1; it is told at once.
	if err := c.RevokeLeadership(ctx, election, "failover drill"); err != nil {
		fmt.Println(err)
		return
	}
	<-n1.Lost()
	fmt.Println("node-1 lost its leadership:", errors.Is(n1.Err(), client.ErrLockLost))

	// Had it missed that, its next write would be refused all the same.
	_, err = c.PutFencedWith(ctx, "example-billing-run", n1.Token(), "run 2 by node-1", fenced)
	fmt.Println("node-1's late write refused:", errors.Is(err, client.ErrNotHolder))

	n2, err := c.Campaign(ctx, election, client.CampaignOptions{Candidate: "node-2", Value: "10.0.0.2:8080", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n2.Resign(ctx)
	fmt.Println("node-2 leads, next term:", n2.Term() == n1.Term()+1)
	if _, err := c.PutFencedWith(ctx, "example-billing-run", n2.Token(), "run 2 by node-2", fenced); err != nil {
		fmt.Println(err)
		return
	}

	// Anyone can ask who leads, and where to find it.
	l, err := c.Leader(ctx, election)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leader:", l.Candidate, string(l.Value))
	v, err := c.GetFenced(ctx, "example-billing-run")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stored:", string(v.Value))
	// Output:
	// node-1 leads
	// node-1 lost its leadership: true
	// node-1's late write refused: true
	// node-2 leads, next term: true
	// leader: node-2 "10.0.0.2:8080"
	// stored: "run 2 by node-2"
}

// A semaphore lets at most limit holders work at once: here two heavy
// jobs. Each permit has a token of its own, and a third job either waits
// in line or is told who holds the permits.
func ExampleClient_AcquirePermit() {
	c, err := client.New(exampleServer())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	const sem = "example-heavy-jobs"

	j1, err := c.AcquirePermit(ctx, sem, 2, client.PermitOptions{Owner: "job-1", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	j2, err := c.AcquirePermit(ctx, sem, 2, client.PermitOptions{Owner: "job-2", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j2.Release(ctx)
	fmt.Println("two permits of", j1.Limit(), "with tokens of their own:", j1.Token() != j2.Token())

	_, err = c.AcquirePermit(ctx, sem, 2, client.PermitOptions{Owner: "job-3"})
	var e *client.Error
	if errors.Is(err, client.ErrSemaphoreFull) && errors.As(err, &e) {
		fmt.Println("job-3: semaphore full, permits held:", len(e.Holders))
	}
	_, err = c.AcquirePermit(ctx, sem, 5, client.PermitOptions{Owner: "job-3"})
	if errors.Is(err, client.ErrLimitMismatch) && errors.As(err, &e) {
		fmt.Println("job-3 with another limit: the semaphore's is", e.Limit)
	}

	// job-1 finishes: its permit goes to whoever asks next.
	if err := j1.Release(ctx); err != nil {
		fmt.Println(err)
		return
	}
	j3, err := c.AcquirePermit(ctx, sem, 2, client.PermitOptions{Owner: "job-3", TTL: 30 * time.Second, Wait: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j3.Release(ctx)
	s, err := c.Semaphore(ctx, sem)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range s.Holders {
		fmt.Println("holder:", h.Owner)
	}
	// Output:
	// two permits of 2 with tokens of their own: true
	// job-3: semaphore full, permits held: 2
	// job-3 with another limit: the semaphore's is 2
	// holder: job-2
	// holder: job-3
}

// A read/write lock lets many readers in at once and a writer alone. A
// writer that comes while readers hold waits for them, and the fenced
// register takes its writes only while it is the write hold.
func ExampleClient_AcquireRW() {
	c, err := client.New(exampleServer())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	const catalog = "example-catalog"

	r1, err := c.AcquireRW(ctx, catalog, client.Read, client.RWOptions{Owner: "reader-1", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	r2, err := c.AcquireRW(ctx, catalog, client.Read, client.RWOptions{Owner: "reader-2", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("two readers at once, tokens of their own:", r1.Token() != r2.Token())

	_, err = c.AcquireRW(ctx, catalog, client.Write, client.RWOptions{Owner: "rebuilder"})
	var e *client.Error
	if errors.Is(err, client.ErrHeld) && errors.As(err, &e) {
		fmt.Println("the writer is held off by", len(e.RWHolders), "read holds")
	}

	// The readers finish; the writer, waiting this time, gets the lock.
	for _, r := range []*client.RWHold{r1, r2} {
		if err := r.Release(ctx); err != nil {
			fmt.Println(err)
			return
		}
	}
	w, err := c.AcquireRW(ctx, catalog, client.Write, client.RWOptions{Owner: "rebuilder", TTL: 30 * time.Second, Wait: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Release(ctx)
	_, err = c.PutFencedWith(ctx, "example-catalog-data", w.Token(), "rebuilt", client.PutFencedOptions{RWLock: catalog})
	fmt.Println("mode", w.Mode(), "token above the readers':", w.Token() > r2.Token(), "write accepted:", err == nil)
	// Output:
	// two readers at once, tokens of their own: true
	// the writer is held off by 2 read holds
	// mode write token above the readers': true write accepted: true
}

// A lock set takes several locks at once or none: both accounts of a
// transfer, with one token. A transfer that needs one of them is told who
// holds it, and none of its locks is taken meanwhile; with Wait it would
// queue instead, in every lock's queue at once, so two transfers naming
// the accounts in opposite orders never deadlock.
func ExampleClient_AcquireSet() {
	c, err := client.New(exampleServer())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	t1, err := c.AcquireSet(ctx, []string{"example-acct-1", "example-acct-2"}, client.LockSetOptions{Owner: "transfer-1", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t1.Release(ctx)
	locks := t1.Locks()
	fmt.Println("both locks, one token:", len(locks), locks[0].Token == t1.Token() && locks[1].Token == t1.Token())

	_, err = c.AcquireSet(ctx, []string{"example-acct-3", "example-acct-2"}, client.LockSetOptions{Owner: "transfer-2"})
	var e *client.Error
	if errors.Is(err, client.ErrHeld) && errors.As(err, &e) {
		fmt.Println("transfer-2:", e.Holder.Name, "is held by", e.Holder.Owner)
	}
	_, err = c.Get(ctx, "example-acct-3")
	fmt.Println("example-acct-3 taken meanwhile:", !errors.Is(err, client.ErrNotHeld))
	// Output:
	// both locks, one token: 2 true
	// transfer-2: example-acct-2 is held by transfer-1
	// example-acct-3 taken meanwhile: false
}
