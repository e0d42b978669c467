package clientsuite_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
)

func mustRW(t *testing.T, ctx context.Context, c *client.Client, name, mode string, o client.RWOptions) *client.RWHold {
	t.Helper()
	h, err := c.AcquireRW(ctx, name, mode, o)
	if err != nil {
		t.Fatalf("acquire a %s hold of %q: %v", mode, name, err)
	}
	releaseAtEnd(t, h)
	return h
}

// acquireRWAsync starts a waiting acquire and returns where its hold
// arrives (nil when it failed, reported).
func acquireRWAsync(t *testing.T, ctx context.Context, c *client.Client, name, mode string, o client.RWOptions) <-chan *client.RWHold {
	got := make(chan *client.RWHold, 1)
	go func() {
		h, err := c.AcquireRW(ctx, name, mode, o)
		if err != nil {
			t.Errorf("waiting %s acquire by %s: %v", mode, o.Owner, err)
		}
		got <- h
	}()
	return got
}

func receiveRW(t *testing.T, got <-chan *client.RWHold, what string) *client.RWHold {
	t.Helper()
	select {
	case h := <-got:
		if h == nil {
			t.FailNow()
		}
		t.Cleanup(func() { _ = h.Release(context.Background()) })
		return h
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no hold within 10 s", what)
		return nil
	}
}

// waitRWWaiters waits until the lock's queue is exactly owners (each
// with its mode, as "owner:mode").
func waitRWWaiters(t *testing.T, ctx context.Context, c *client.Client, name string, want ...string) {
	t.Helper()
	poll.Until(t, 10*time.Second, "waiters "+name, func() bool {
		rw, err := c.RWLock(ctx, name)
		if err != nil {
			return false
		}
		var got []string
		for _, w := range rw.Waiters {
			got = append(got, w.Owner+":"+w.Mode)
		}
		return slices.Equal(got, want)
	})
}

// TestRW_ReadersShareAndAWriterWaitsForThemAll: two readers hold at once,
// each with a token of its own; a writer without Wait is refused with
// ErrHeld naming both; a waiting writer gets the lock once both readers
// released, with a token above theirs, and the lock then reads as write.
func TestRW_ReadersShareAndAWriterWaitsForThemAll(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "rw")
	r1 := mustRW(t, ctx, c, name, client.Read, client.RWOptions{Owner: "r1", TTL: longTTL, Metadata: map[string]string{"job": "1"}})
	r2 := mustRW(t, ctx, c, name, client.Read, client.RWOptions{Owner: "r2", TTL: longTTL})
	if r1.Token() == r2.Token() || r1.Mode() != client.Read || r1.Name() != name || r1.Info().Metadata["job"] != "1" {
		t.Fatalf("readers %d (%s) and %d; want two read holds of %q with tokens of their own", r1.Token(), r1.Mode(), r2.Token(), name)
	}

	_, err := c.AcquireRW(ctx, name, client.Write, client.RWOptions{Owner: "w0"})
	var e *client.Error
	if !errors.Is(err, client.ErrHeld) || !errors.As(err, &e) || len(e.RWHolders) != 2 || len(e.Holders) != 0 {
		t.Fatalf("writer without wait: %v (%+v), want ErrHeld with both readers in RWHolders", err, e)
	}
	held := []int64{e.RWHolders[0].Token, e.RWHolders[1].Token}
	if !slices.Contains(held, r1.Token()) || !slices.Contains(held, r2.Token()) || e.RWHolders[0].Mode != client.Read {
		t.Fatalf("holders in the way %+v, want r1's %d and r2's %d, read", e.RWHolders, r1.Token(), r2.Token())
	}

	got := acquireRWAsync(t, ctx, c, name, client.Write, client.RWOptions{Owner: "w", TTL: longTTL, Wait: time.Minute})
	waitRWWaiters(t, ctx, c, name, "w:write")
	if err := r1.Release(ctx); err != nil {
		t.Fatalf("release r1: %v", err)
	}
	rw, err := c.RWLock(ctx, name)
	if err != nil || rw.Mode != client.Read || len(rw.Holders) != 1 || rw.Holders[0].Token != r2.Token() || len(rw.Waiters) != 1 {
		t.Fatalf("after r1's release: %+v, %v; want r2 reading, the writer still waiting", rw, err)
	}
	if err := r2.Release(ctx); err != nil {
		t.Fatalf("release r2: %v", err)
	}
	w := receiveRW(t, got, "the writer after both readers released")
	if w.Mode() != client.Write || w.Token() <= r2.Token() || w.Token() <= r1.Token() {
		t.Fatalf("writer: mode %s token %d, want write above %d and %d", w.Mode(), w.Token(), r1.Token(), r2.Token())
	}
	list, _, err := c.RWLocks(ctx, client.ListOptions{Prefix: name})
	if err != nil || len(list) != 1 || list[0].Mode != client.Write || len(list[0].Holders) != 1 || list[0].Holders[0].Owner != "w" {
		t.Fatalf("rwlocks with prefix %q: %+v, %v; want one, write-held by w", name, list, err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatalf("release w: %v", err)
	}
	if _, err := c.RWLock(ctx, name); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("rwlock with nothing held: %v, want ErrNotHeld", err)
	}
}

// TestRW_AReaderBehindAWaitingWriterWaits: first come first served: with
// a reader holding and a writer waiting, a second reader queues behind
// the writer instead of joining the first; it is granted only after the
// writer released, and the history records every hold with its mode.
func TestRW_AReaderBehindAWaitingWriterWaits(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "rw")
	r1 := mustRW(t, ctx, c, name, client.Read, client.RWOptions{Owner: "r1", TTL: longTTL})
	wc := acquireRWAsync(t, ctx, c, name, client.Write, client.RWOptions{Owner: "w", TTL: longTTL, Wait: time.Minute})
	waitRWWaiters(t, ctx, c, name, "w:write")
	rc := acquireRWAsync(t, ctx, c, name, client.Read, client.RWOptions{Owner: "r2", TTL: longTTL, Wait: time.Minute})
	waitRWWaiters(t, ctx, c, name, "w:write", "r2:read")

	if err := r1.Release(ctx); err != nil {
		t.Fatalf("release r1: %v", err)
	}
	w := receiveRW(t, wc, "the writer after r1 released")
	waitRWWaiters(t, ctx, c, name, "r2:read")
	if err := w.Release(ctx); err != nil {
		t.Fatalf("release w: %v", err)
	}
	r2 := receiveRW(t, rc, "the second reader after the writer released")
	if r2.Token() <= w.Token() || r2.Mode() != client.Read {
		t.Fatalf("r2: token %d mode %s, want a read hold after the writer's %d", r2.Token(), r2.Mode(), w.Token())
	}

	evs, _, err := c.History(ctx, client.HistoryOptions{Kind: "rwlock", Name: name})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	var seq []string
	for _, ev := range evs {
		if ev.Kind != "rwlock" || ev.Name != name || ev.Mode == "" {
			t.Fatalf("event %+v, want the rwlock's, with a mode", ev)
		}
		seq = append(seq, ev.Type+" "+ev.Owner+" "+ev.Mode)
	}
	slices.Reverse(seq)
	want := []string{"acquired r1 read", "released r1 read", "acquired w write", "released w write", "acquired r2 read"}
	if !slices.Equal(seq, want) {
		t.Fatalf("history, oldest first: %q, want %q", seq, want)
	}
}

// TestRW_ARevokeReachesLostAndSparesTheOtherReader: a revoke names one
// hold by its token; the event stream loses that one within a second,
// not at its next renew, and not the other reader's.
func TestRW_ARevokeReachesLostAndSparesTheOtherReader(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "rw")
	a := mustRW(t, ctx, c, name, client.Read, client.RWOptions{Owner: "a", TTL: longTTL})
	b := mustRW(t, ctx, c, name, client.Read, client.RWOptions{Owner: "b", TTL: longTTL})
	revokeLoses(t, ctx, a, "rwlock", name, c.RevokeRW)
	if isClosed(b.Done()) {
		t.Fatalf("b done after a's revoke: %v", b.Err())
	}
	info, err := c.RenewRW(ctx, name, b.Token())
	if err != nil || info.Token != b.Token() || info.Mode != client.Read {
		t.Fatalf("renew b by its token: %+v, %v", info, err)
	}
	if err := c.ReleaseRW(ctx, name, b.Token()); err != nil {
		t.Fatalf("release b by its token: %v", err)
	}
	// Released elsewhere, by its token: b's own handle learns it.
	waitClosed(t, b.Lost(), 5*time.Second, "b's Lost after a release by its token elsewhere")
}

// TestRW_AFencedWriteNamingTheRWLockNeedsTheWriteHold: a fenced write
// naming the read/write lock passes with the write hold's token and is
// refused (not_holder) with a reader's, however new its token.
func TestRW_AFencedWriteNamingTheRWLockNeedsTheWriteHold(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name, res := lockName(t, "rw"), lockName(t, "res")
	w := mustRW(t, ctx, c, name, client.Write, client.RWOptions{Owner: "w", TTL: longTTL})
	if _, err := c.PutFencedWith(ctx, res, w.Token(), "v1", client.PutFencedOptions{RWLock: name}); err != nil {
		t.Fatalf("fenced write by the writer: %v", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatalf("release w: %v", err)
	}
	r := mustRW(t, ctx, c, name, client.Read, client.RWOptions{Owner: "r", TTL: longTTL})
	_, err := c.PutFencedWith(ctx, res, r.Token(), "v2", client.PutFencedOptions{RWLock: name})
	if !errors.Is(err, client.ErrNotHolder) {
		t.Fatalf("fenced write by a reader: %v, want ErrNotHolder", err)
	}
	v, err := c.GetFenced(ctx, res)
	if err != nil || v.Token != w.Token() || string(v.Value) != `"v1"` {
		t.Fatalf("fenced value: %+v, %v; want the writer's v1", v, err)
	}
}

// TestRW_ASessionsWriteHoldIsIdempotentAndNamedBySession: a second write
// acquire in the session that holds the write hold answers the same hold,
// and the session lists the read/write lock.
func TestRW_ASessionsWriteHoldIsIdempotentAndNamedBySession(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "rw")
	s := mustSession(t, ctx, c)
	a := mustRW(t, ctx, c, name, client.Write, client.RWOptions{Session: s.ID})
	b := mustRW(t, ctx, c, name, client.Write, client.RWOptions{Session: s.ID})
	if a.Token() != b.Token() || a.Info().Session != s.ID {
		t.Fatalf("write holds %d and %d in session %q (%q); want the same", a.Token(), b.Token(), s.ID, a.Info().Session)
	}
	got, err := c.GetSession(ctx, s.ID)
	if err != nil || !slices.Equal(got.RWLocks, []string{name}) {
		t.Fatalf("session: %+v, %v; want rwlocks [%s]", got, err, name)
	}
	deleteSessionLoses(t, ctx, c, s, a, b)
}
