package clientsuite_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
)

const shortTTL = 2 * time.Second // the server's minimum

func TestAcquire_AutoRenewKeepsA2sLockForSeveralTTLs(t *testing.T) {
	skipShort(t)
	t.Parallel()
	f, c, ctx := setup(t)
	name := lockName(t, "l")

	start := time.Now()
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1", TTL: shortTTL, Metadata: map[string]string{"job": "recon"}})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, lk)
	if lk.Name() != name || lk.Token() <= 0 || lk.Info().TTL != shortTTL || lk.Info().Metadata["job"] != "recon" {
		t.Fatalf("lock %q token %d info %+v", lk.Name(), lk.Token(), lk.Info())
	}

	// Until three TTLs have passed, the server must keep showing our hold,
	// with the same token, and Lost must stay open.
	for time.Since(start) < 3*shortTTL+shortTTL/2 {
		got, err := c.Get(ctx, name)
		if err != nil {
			t.Fatalf("after %s: get: %v (lock err: %v)", time.Since(start).Round(time.Millisecond), err, lk.Err())
		}
		if got.Token != lk.Token() || got.Owner != "w1" {
			t.Fatalf("after %s: held by %q with token %d, want w1 with %d", time.Since(start), got.Owner, got.Token, lk.Token())
		}
		pause := time.NewTimer(200 * time.Millisecond)
		select {
		case <-lk.Lost():
			t.Fatalf("after %s: lost: %v", time.Since(start), lk.Err())
		case <-pause.C:
		}
	}
	if n := f.count(http.MethodPost, "/"+name+"/renew"); n < 6 {
		t.Errorf("%d renewals in %s of a %s lock, want one every third of the TTL", n, time.Since(start).Round(time.Millisecond), shortTTL)
	}
	if exp := lk.Info().ExpiresAt; time.Until(exp) < 0 || time.Until(exp) > shortTTL+time.Second {
		t.Errorf("Info().ExpiresAt %v is not within a TTL from now: renewals do not update Info", exp)
	}

	if err := lk.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if !isClosed(lk.Done()) || isClosed(lk.Lost()) || lk.Err() != nil {
		t.Errorf("after a clean release: done %v, lost %v, err %v; want done, not lost, no error", isClosed(lk.Done()), isClosed(lk.Lost()), lk.Err())
	}
	if _, err := c.Get(ctx, name); !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("get after release: %v, want ErrNotHeld", err)
	}
	renews := f.count(http.MethodPost, "/"+name+"/renew")
	if err := lk.Release(ctx); err != nil {
		t.Errorf("second release: %v, want nil again", err)
	}
	if n := f.count(http.MethodDelete, "/"+name); n != 1 {
		t.Errorf("%d DELETE requests after two releases, want 1: the second must not ask again", n)
	}
	if n := f.count(http.MethodPost, "/"+name+"/renew"); n != renews {
		t.Errorf("renewals went on after release (%d, then %d)", renews, n)
	}
}

func TestLock_LostFiresWhenTheLockIsRevoked(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "l")

	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1", TTL: shortTTL})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, lk)
	if err := c.Revoke(ctx, name, "test"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	revoked := time.Now()
	// The next renew, due within a third of the TTL, is answered not_held.
	at := waitClosed(t, lk.Lost(), shortTTL, "Lost after a revoke")
	if took := at.Sub(revoked); took > shortTTL/3+time.Second {
		t.Errorf("Lost fired %s after the revoke, want within a third of the TTL", took)
	}
	err = lk.Err()
	if !errors.Is(err, client.ErrLockLost) || !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("Err() = %v, want ErrLockLost and ErrNotHeld", err)
	}
	if !isClosed(lk.Done()) {
		t.Error("Done not closed once lost")
	}
	// Releasing a lost lock says it was lost, and never touches anyone else.
	err = lk.Release(ctx)
	if !errors.Is(err, client.ErrLockLost) || !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("release after loss: %v, want ErrLockLost and ErrNotHeld", err)
	}
	if err2 := lk.Release(ctx); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second release: %v, want the first's result %v", err2, err)
	}
}

func TestLock_LostFiresWhenTheServerIsUnreachablePastTheTTL(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	name := lockName(t, "l")

	start := time.Now()
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1", TTL: shortTTL})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	// The lock's own lease ends it on the server; clean up through
	// another front in case the test fails early.
	other := newClient(t, newFront(t).URL)
	t.Cleanup(func() { _ = other.Release(context.Background(), name, lk.Token()) })

	f.Close() // every renew now meets a refused connection
	at := waitClosed(t, lk.Lost(), 2*shortTTL, "Lost with the server unreachable")
	if took := at.Sub(start); took < shortTTL || took > shortTTL+time.Second {
		t.Errorf("Lost fired %s after the acquire was sent, want at the TTL (%s), judged by the client's clock", took, shortTTL)
	}
	err = lk.Err()
	if !errors.Is(err, client.ErrLockLost) || !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Err() = %v, want ErrLockLost wrapping ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "client's clock") {
		t.Errorf("Err() = %v: does not say the client's clock ran it out", err)
	}
	if err := lk.Release(ctx); !errors.Is(err, client.ErrLockLost) {
		t.Errorf("release: %v, want ErrLockLost", err)
	}
}

func TestLock_LostFiresByTheClientsClockWhenRenewsHang(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	name := lockName(t, "l")

	start := time.Now()
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1", TTL: shortTTL})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, lk)
	// From now on the node takes renewals in and never answers: only the
	// client's own clock can tell the lease is gone.
	testDone := make(chan struct{})
	t.Cleanup(func() { close(testDone) })
	var hung atomic.Int64
	f.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/renew") {
			return false
		}
		hung.Add(1)
		select {
		case <-r.Context().Done():
		case <-testDone:
		}
		return true
	})

	at := waitClosed(t, lk.Lost(), 2*shortTTL, "Lost while renewals hang")
	if took := at.Sub(start); took < shortTTL || took > shortTTL+time.Second {
		t.Errorf("Lost fired %s after the acquire was sent, want at the TTL (%s)", took, shortTTL)
	}
	if hung.Load() == 0 {
		t.Fatal("no renew reached the node: the test proves nothing")
	}
	if err := lk.Err(); !errors.Is(err, client.ErrLockLost) || !strings.Contains(err.Error(), "client's clock") {
		t.Errorf("Err() = %v, want ErrLockLost by the client's clock", err)
	}
}

func TestLock_LostFiresWhenAnotherHolderTookOver(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "l")

	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1", TTL: shortTTL})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, lk)
	// Someone holding the token (a copy of this process, a CLI) releases
	// it behind the *Lock's back, and another worker takes the lock.
	if err := c.Release(ctx, name, lk.Token()); err != nil {
		t.Fatalf("release by token: %v", err)
	}
	lk2, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w2", TTL: shortTTL})
	if err != nil {
		t.Fatalf("second acquire: %v", err)
	}
	releaseAtEnd(t, lk2)
	waitClosed(t, lk.Lost(), shortTTL, "Lost once another holder has the lock")
	// The released event usually tells first (not_held), a renew
	// answered token_mismatch otherwise.
	if err := lk.Err(); !errors.Is(err, client.ErrLockLost) || !errors.Is(err, client.ErrNotHeld) && !errors.Is(err, client.ErrTokenMismatch) {
		t.Fatalf("Err() = %v, want ErrLockLost and ErrNotHeld or ErrTokenMismatch", err)
	}
	// The stale *Lock's release must not end the new holder's hold.
	if err := lk.Release(ctx); !errors.Is(err, client.ErrLockLost) {
		t.Errorf("stale release: %v, want ErrLockLost", err)
	}
	if got, err := c.Get(ctx, name); err != nil || got.Token != lk2.Token() {
		t.Fatalf("after the stale release: %+v, %v; want still held by w2", got, err)
	}
	if isClosed(lk2.Lost()) {
		t.Errorf("the new holder's lock is lost: %v", lk2.Err())
	}
}

func TestAcquire_WaitsInLineAndGetsAGreaterToken(t *testing.T) {
	_, c, ctx := setup(t)
	name := lockName(t, "l")

	first, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1", TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, first)
	type result struct {
		lk  *client.Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w2", TTL: 10 * time.Second, Wait: 30 * time.Second})
		got <- result{lk, err}
	}()
	poll.Until(t, 10*time.Second, "w2 queued", func() bool {
		l, err := c.Get(ctx, name)
		return err == nil && len(l.Waiters) == 1 && l.Waiters[0].Owner == "w2" && l.Waiters[0].Position == 1 && !l.Waiters[0].Since.IsZero()
	})
	if err := first.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiting acquire: %v", r.err)
	}
	releaseAtEnd(t, r.lk)
	if r.lk.Token() <= first.Token() || r.lk.Info().Owner != "w2" {
		t.Errorf("w2 got token %d (owner %q) after w1's %d: want a greater token", r.lk.Token(), r.lk.Info().Owner, first.Token())
	}
}

func TestAcquire_AfterAWaitLongerThanTheTTLStartsWithAFreshLease(t *testing.T) {
	skipShort(t)
	t.Parallel()
	f, c, ctx := setup(t)
	name := lockName(t, "l")
	eng, _ := backend()

	// A bare 2s hold, taken on the engine, that nobody renews: it runs
	// out by itself. w2 queues meanwhile with a 2s TTL of its own. By the
	// time w2 gets the lock, about its TTL has passed since its request
	// left, so judging from the send time alone would call it lost at
	// once: the client renews it before handing it over.
	blocker, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: "w1", TTL: shortTTL})
	if err != nil {
		t.Fatalf("engine acquire: %v", err)
	}
	sent := time.Now()
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w2", TTL: shortTTL, Wait: 20 * time.Second})
	if err != nil {
		t.Fatalf("w2's acquire: %v", err)
	}
	releaseAtEnd(t, lk)
	if lk.Token() <= blocker.Token {
		t.Fatalf("w2's token %d is not above w1's %d", lk.Token(), blocker.Token)
	}
	if waited := time.Since(sent); waited < shortTTL*2/3 {
		t.Fatalf("w2 waited only %s: the test needs a wait of most of the TTL", waited)
	}
	if n := f.count(http.MethodPost, "/"+name+"/renew"); n == 0 {
		t.Errorf("no renew before Acquire returned")
	}
	// Held, and kept: it outlives another TTL.
	until := time.Now().Add(shortTTL + shortTTL/2)
	for time.Now().Before(until) {
		if got, err := c.Get(ctx, name); err != nil || got.Token != lk.Token() {
			t.Fatalf("get: %+v, %v; want held by w2", got, err)
		}
		pause := time.NewTimer(200 * time.Millisecond)
		select {
		case <-lk.Lost():
			t.Fatalf("w2's lock lost: %v", lk.Err())
		case <-pause.C:
		}
	}
}

func TestTryAcquire_AnswersAtOnceWithTheHolder(t *testing.T) {
	_, c, ctx := setup(t)
	name := lockName(t, "l")

	lk, err := c.TryAcquire(ctx, name, client.AcquireOptions{Owner: "w1"})
	if err != nil {
		t.Fatalf("try acquire: %v", err)
	}
	releaseAtEnd(t, lk)
	start := time.Now()
	_, err = c.TryAcquire(ctx, name, client.AcquireOptions{Owner: "w2"})
	var e *client.Error
	if !errors.Is(err, client.ErrHeld) || !errors.As(err, &e) || e.Holder == nil || e.Holder.Owner != "w1" || e.Holder.Token != lk.Token() {
		t.Fatalf("second try: %v (%+v), want ErrHeld with w1 as holder", err, e)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("a try took %s", time.Since(start))
	}
	if _, err := c.TryAcquire(ctx, name, client.AcquireOptions{Owner: "w2", Wait: time.Second}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("try with a wait: %v, want ErrInvalid", err)
	}
}

func TestSession_LockRenewsItsSessionAndEndsWithIt(t *testing.T) {
	skipShort(t)
	t.Parallel()
	_, c, ctx := setup(t)

	s, err := c.CreateSession(ctx, "worker-1", shortTTL)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(context.Background(), s.ID) })
	a, b := lockName(t, "a"), lockName(t, "b")
	la, err := c.Acquire(ctx, a, client.AcquireOptions{Session: s.ID, Owner: "worker-1"})
	if err != nil {
		t.Fatalf("acquire a: %v", err)
	}
	lb, err := c.Acquire(ctx, b, client.AcquireOptions{Session: s.ID, Owner: "worker-1"})
	if err != nil {
		t.Fatalf("acquire b: %v", err)
	}
	if la.Info().Session != s.ID || la.Info().TTL != shortTTL {
		t.Fatalf("lock in session: %+v", la.Info())
	}
	// The locks' renewals keep the session alive past two of its TTLs;
	// nobody calls RenewSession.
	start := time.Now()
	for time.Since(start) < 2*shortTTL+shortTTL/2 {
		got, err := c.GetSession(ctx, s.ID)
		if err != nil {
			t.Fatalf("after %s: get session: %v", time.Since(start), err)
		}
		if len(got.Locks) != 2 {
			t.Fatalf("session holds %v, want both locks", got.Locks)
		}
		pause := time.NewTimer(200 * time.Millisecond)
		select {
		case <-la.Lost():
			t.Fatalf("lost a: %v", la.Err())
		case <-pause.C:
		}
	}
	// Acquiring again in the session gives the same hold back.
	again, err := c.Acquire(ctx, a, client.AcquireOptions{Session: s.ID})
	if err != nil {
		t.Fatalf("acquire a again in the session: %v", err)
	}
	if again.Token() != la.Token() {
		t.Errorf("again: token %d, want %d", again.Token(), la.Token())
	}
	// Deleting the session ends both locks; each *Lock finds out.
	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatalf("delete session: %v", err)
	}
	for _, lk := range []*client.Lock{la, lb, again} {
		waitClosed(t, lk.Lost(), shortTTL, "Lost of "+lk.Name()+" after its session was deleted")
		if !errors.Is(lk.Err(), client.ErrLockLost) {
			t.Errorf("%s: Err() = %v", lk.Name(), lk.Err())
		}
	}
	if _, err := c.GetSession(ctx, s.ID); !errors.Is(err, client.ErrSessionNotFound) {
		t.Errorf("get deleted session: %v, want ErrSessionNotFound", err)
	}
	if _, err := c.Acquire(ctx, a, client.AcquireOptions{Session: s.ID}); !errors.Is(err, client.ErrSessionNotFound) {
		t.Errorf("acquire in a deleted session: %v, want ErrSessionNotFound", err)
	}
}

func TestAcquireOnce_IsNotRenewedAndEndsWithItsTTL(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	name := lockName(t, "l")

	l, err := c.AcquireOnce(ctx, name, client.AcquireOptions{Owner: "cli", TTL: shortTTL})
	if err != nil {
		t.Fatalf("acquire once: %v", err)
	}
	if l.Name != name || l.Owner != "cli" || l.Token <= 0 || l.TTL != shortTTL {
		t.Fatalf("acquired %+v", l)
	}
	if _, err := c.AcquireOnce(ctx, name, client.AcquireOptions{}); !errors.Is(err, client.ErrHeld) {
		t.Fatalf("second acquire: %v, want ErrHeld", err)
	}
	// Nobody renews it: the server lets it go after its TTL.
	poll.Until(t, 3*shortTTL, "the lease to run out", func() bool {
		_, err := c.Get(ctx, name)
		return errors.Is(err, client.ErrNotHeld)
	})
	if n := f.count(http.MethodPost, "/renew"); n != 0 {
		t.Errorf("%d renew requests for a lock taken once", n)
	}
}

// A wait longer than one request's (Config.MaxRequestWait, the server's
// cap): a run of requests in the session, each keeping the session's
// place in line, so that an acquire queued later stays behind it; the
// session is kept alive meanwhile, past its TTL.
func TestAcquire_AWaitLongerThanOneRequestKeepsItsPlaceInLine(t *testing.T) {
	skipShort(t)
	f, plain, ctx := setup(t)
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{f.URL}, Timeout: 5 * time.Second, RetryBackoff: 20 * time.Millisecond, MaxRequestWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	name := lockName(t, "l")
	holder, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "holder", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w", Wait: time.Second}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("a wait over MaxRequestWait without a session: %v, want ErrInvalid", err)
	}
	s, err := c.CreateSession(ctx, "early", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		lk  *client.Lock
		err error
	}
	early, late := make(chan result, 1), make(chan result, 1)
	go func() {
		lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "early", Session: s.ID, Wait: client.WaitForever})
		early <- result{lk, err}
	}()
	poll.Until(t, 10*time.Second, "early queued", func() bool {
		l, err := c.Get(ctx, name)
		return err == nil && len(l.Waiters) == 1
	})
	go func() {
		lk, err := plain.Acquire(ctx, name, client.AcquireOptions{Owner: "late", TTL: 10 * time.Second, Wait: 30 * time.Second})
		late <- result{lk, err}
	}()
	// Past the session's TTL, over a dozen requests: the place held.
	poll.Until(t, 20*time.Second, "a dozen requests of the long wait", func() bool { return len(f.matching("POST", "/v1/locks/"+name)) >= 14 })
	l, err := c.Get(ctx, name)
	if err != nil || len(l.Waiters) != 2 || l.Waiters[0].Owner != "early" || l.Waiters[1].Owner != "late" {
		t.Fatalf("queue %+v, %v; want early's place first, then late", l, err)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-early
	if r.err != nil {
		t.Fatalf("the long wait: %v", r.err)
	}
	if r.lk.Token() <= holder.Token() || r.lk.Info().Session != s.ID {
		t.Fatalf("the long wait got %+v, want the lock in its session after the holder's token %d", r.lk.Info(), holder.Token())
	}
	select {
	case r := <-late:
		t.Fatalf("the later acquire finished first: %v", r.err)
	default:
	}
	if err := r.lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-late; r.err != nil {
		t.Fatalf("the later acquire: %v", r.err)
	} else {
		releaseAtEnd(t, r.lk)
	}
}
