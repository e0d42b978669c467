package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// waitersOf is name's queue, by owner.
func waitersOf(t *testing.T, e *lock.Engine, name string) []string {
	t.Helper()
	ws, err := e.Waiters(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	owners := []string{}
	for _, w := range ws {
		owners = append(owners, w.Owner)
	}
	return owners
}

// keptOut is a wait of session s for name that runs out with its place
// kept.
func keptOut(t *testing.T, e *lock.Engine, name, owner, s string) {
	t.Helper()
	_, _, err := e.Acquire(holdtest.Ctx(t), lock.AcquireRequest{Name: name, Owner: owner, Session: s, Wait: 200 * time.Millisecond, KeepPlace: true})
	if he := asHeld(t, err); !he.PlaceKept {
		t.Fatalf("a wait with keep_place ran out: %+v, want its place kept", he)
	}
}

func newSession(t *testing.T, e *lock.Engine, owner string) string {
	t.Helper()
	s, err := e.CreateSession(holdtest.Ctx(t), owner, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// A wait longer than one request's: a session's wait that runs out with
// keep_place leaves its place in the queue, a waiter that comes later
// queues behind it, and the session's next acquire waits from the place
// and is granted first.
func TestKeepPlace_TheNextAcquireWaitsFromTheSessionsPlace(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "l", Owner: "holder"})
	s := newSession(t, e, "early")
	keptOut(t, e, "l", "early", s)
	if got := waitersOf(t, e, "l"); len(got) != 1 || got[0] != "early" {
		t.Fatalf("queue %v after the wait ran out, want the kept place", got)
	}
	queuedAt := time.Now()
	late := make(chan error, 1)
	go func() {
		l, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "late", Wait: 20 * time.Second})
		if err == nil {
			err = e.Release(ctx, "l", l.Token)
		}
		late <- err
	}()
	poll.Until(t, 10*time.Second, "the later waiter queues", func() bool { return len(waitersOf(t, e, "l")) == 2 })
	early := make(chan *lock.Lock, 1)
	go func() {
		l, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "early", Session: s, Wait: 20 * time.Second, KeepPlace: true})
		if err != nil || !fresh {
			t.Errorf("the session's next acquire: %v, fresh %v", err, fresh)
		}
		early <- l
	}()
	// Taking up the place puts its entry again, then writes back when
	// the place was first taken.
	poll.Until(t, 10*time.Second, "the session's acquire takes up its place", func() bool {
		resp, err := m.Client().Get(ctx, e.Keys().Queue("l")+"s"+s)
		return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].Version >= 3
	})
	if got := waitersOf(t, e, "l"); len(got) != 2 || got[0] != "early" || got[1] != "late" {
		t.Fatalf("queue %v, want the session's place first", got)
	}
	if err := e.Release(ctx, "l", first.Token); err != nil {
		t.Fatal(err)
	}
	l := <-early
	if l == nil {
		t.FailNow()
	}
	resp, err := m.Client().Get(ctx, e.Keys().Lock("l"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(resp, err)
	}
	if hr, err := store.DecodeHolder(resp.Kvs[0]); err != nil || hr.QueuedAt == nil || hr.QueuedAt.After(queuedAt) {
		t.Errorf("the grant says it queued at %v (%v), want when the place was first taken (before %v)", hr.QueuedAt, err, queuedAt)
	}
	select {
	case err := <-late:
		t.Fatalf("the later waiter finished first: %v", err)
	default:
	}
	if err := e.Release(ctx, "l", l.Token); err != nil {
		t.Fatal(err)
	}
	if err := <-late; err != nil {
		t.Fatal(err)
	}
}

// A release while no acquire of the session waits grants the lock to the
// kept place: the session holds it, and its next acquire answers with it.
func TestKeepPlace_AGrantWhileNobodyWaitsIsTheSessions(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	first := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "l", Owner: "holder"})
	s := newSession(t, e, "w")
	keptOut(t, e, "l", "w", s)
	if err := e.Release(ctx, "l", first.Token); err != nil {
		t.Fatal(err)
	}
	held, err := e.Get(ctx, "l")
	if err != nil || held.Session != s || held.Token <= first.Token {
		t.Fatalf("after the release the lock is %+v, %v; want it granted to session %s", held, err, s)
	}
	l, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "w", Session: s, Wait: time.Second, KeepPlace: true})
	if err != nil || fresh || l.Token != held.Token {
		t.Fatalf("the session's next acquire: %+v, fresh %v, %v; want the lock it was granted (token %d), not fresh", l, fresh, err, held.Token)
	}
	if got := waitersOf(t, e, "l"); len(got) != 0 {
		t.Fatalf("queue %v once granted, want none", got)
	}
}

// Without keep_place a wait that runs out leaves no place, and an
// acquire without it gives a kept place up; so does the session's end.
func TestKeepPlace_GivenUpByAWaitWithoutItAndByTheSessionsEnd(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "l", Owner: "holder"})
	s := newSession(t, e, "w")
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "w", Session: s, Wait: 100 * time.Millisecond})
	if he := asHeld(t, err); he.PlaceKept {
		t.Fatalf("a wait without keep_place kept its place: %+v", he)
	}
	if got := waitersOf(t, e, "l"); len(got) != 0 {
		t.Fatalf("queue %v, want none", got)
	}
	keptOut(t, e, "l", "w", s)
	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "w", Session: s, Wait: 100 * time.Millisecond})
	if he := asHeld(t, err); he.PlaceKept {
		t.Fatalf("the giving-up wait kept the place: %+v", he)
	}
	if got := waitersOf(t, e, "l"); len(got) != 0 {
		t.Fatalf("queue %v after the place was given up, want none", got)
	}
	keptOut(t, e, "l", "w", s)
	if err := e.DeleteSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := waitersOf(t, e, "l"); len(got) != 0 {
		t.Fatalf("queue %v after the session ended, want none", got)
	}
}

// Every kind that waits keeps a place the same way: an election's
// candidate, a semaphore's permit, a read/write lock's writer.
func TestKeepPlace_EveryKindThatWaits(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s := newSession(t, e, "w")
	if _, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "el", Candidate: "leader"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "el", Candidate: "w", Session: s, Wait: 100 * time.Millisecond, KeepPlace: true})
	var he *lock.HeldError
	if !errors.As(err, &he) || !he.PlaceKept {
		t.Fatalf("campaign: %v, want its place kept", err)
	}
	if _, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "sem", Owner: "p", Limit: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = e.AcquirePermit(ctx, lock.PermitRequest{Name: "sem", Owner: "w", Limit: 1, Session: s, Wait: 100 * time.Millisecond, KeepPlace: true})
	if !errors.As(err, &he) || !he.PlaceKept {
		t.Fatalf("permit: %v, want its place kept", err)
	}
	if _, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "rw", Owner: "r", Mode: lock.ModeRead}); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.AcquireRW(ctx, lock.RWRequest{Name: "rw", Owner: "w", Mode: lock.ModeWrite, Session: s, Wait: 100 * time.Millisecond, KeepPlace: true})
	if !errors.As(err, &he) || !he.PlaceKept {
		t.Fatalf("write hold: %v, want its place kept", err)
	}
	st, err := e.Stats(ctx)
	if err != nil || st.Waiters != 3 {
		t.Fatalf("stats %+v, %v; want the three places", st, err)
	}
	if err := e.DeleteSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Stats(ctx); err != nil || st.Waiters != 0 {
		t.Fatalf("stats %+v, %v after the session's end; want no place left", st, err)
	}
}

// keep_place needs a session and a wait, and lock sets do not keep one.
func TestKeepPlace_Refused(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s := newSession(t, e, "w")
	for _, c := range []struct {
		what string
		err  error
	}{
		{"no session", func() error {
			_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "w", Wait: time.Second, KeepPlace: true})
			return err
		}()},
		{"no wait", func() error {
			_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "w", Session: s, KeepPlace: true})
			return err
		}()},
	} {
		var ie *lock.InvalidError
		if !errors.As(c.err, &ie) || ie.Field != "keep_place" {
			t.Errorf("%s: %v, want keep_place refused", c.what, c.err)
		}
	}
	if l, err := e.Get(ctx, "l"); err == nil {
		t.Fatalf("a refused acquire wrote the lock: %+v", l)
	}
}

// Concurrent waits of one session for one thing share its place: two
// permits asked for at once are both granted, one from the place and the
// other from a place taken again behind the waiters after it, and a wait
// that ends without keep_place takes the place from under another that
// goes on waiting.
func TestKeepPlace_ConcurrentWaitsOfOneSessionShareItsPlace(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	var held []*lock.Lock
	for _, o := range []string{"p1", "p2"} {
		p, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "sem", Owner: o, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	s := newSession(t, e, "pool")
	got := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "sem", Owner: "pool", Limit: 2, Session: s, Wait: 20 * time.Second})
			got <- err
		}()
	}
	poll.Until(t, 10*time.Second, "the session's waits queue", func() bool {
		st, err := e.Stats(ctx)
		return err == nil && st.Waiters >= 1
	})
	for _, p := range held {
		if err := e.ReleasePermit(ctx, "sem", p.Token); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := <-got; err != nil {
			t.Fatalf("a wait of the session: %v, want a permit", err)
		}
	}

	// A lock: one wait gives up (no keep_place) while the other waits on.
	h := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "l", Owner: "holder"})
	long := make(chan error, 1)
	go func() {
		_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "pool", Session: s, Wait: 20 * time.Second})
		long <- err
	}()
	poll.Until(t, 10*time.Second, "the long wait queues", func() bool { return len(waitersOf(t, e, "l")) == 1 })
	_, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "l", Owner: "pool", Session: s, Wait: 100 * time.Millisecond})
	asHeld(t, err)
	if err := e.Release(ctx, "l", h.Token); err != nil {
		t.Fatal(err)
	}
	if err := <-long; err != nil {
		t.Fatalf("the wait that went on: %v, want the lock", err)
	}
}

// A semaphore is not granted to a kept place while no acquire waits at
// it: the session could not tell that permit from others it holds. The
// place keeps the head of the line, and the session's next acquire takes
// the permit.
func TestKeepPlace_APermitWaitsAtTheHeadForTheSessionsNextAcquire(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	first, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "sem", Owner: "p", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, e, "w")
	_, err = e.AcquirePermit(ctx, lock.PermitRequest{Name: "sem", Owner: "w", Limit: 1, Session: s, Wait: 100 * time.Millisecond, KeepPlace: true})
	var he *lock.HeldError
	if !errors.As(err, &he) || !he.PlaceKept {
		t.Fatalf("permit: %v, want its place kept", err)
	}
	if err := e.ReleasePermit(ctx, "sem", first.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "sem", Owner: "late", Limit: 1}); err == nil {
		t.Fatal("an acquire without wait overtook the kept place")
	}
	p, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "sem", Owner: "w", Limit: 1, Session: s, Wait: time.Second, KeepPlace: true})
	if err != nil || p.Session != s || p.Token <= first.Token {
		t.Fatalf("the session's next acquire: %+v, %v; want the permit", p, err)
	}
	if st, err := e.Stats(ctx); err != nil || st.Waiters != 0 {
		t.Fatalf("stats %+v, %v; want the place gone with the grant", st, err)
	}
	sess, err := e.GetSession(ctx, s)
	if err != nil || len(sess.Semaphores) != 1 {
		t.Fatalf("session %+v, %v; want the one permit", sess, err)
	}
}
