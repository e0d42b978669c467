package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

type rwHeld struct {
	l   *lock.Lock
	err error
}

func rwAsync(ctx context.Context, e *lock.Engine, req lock.RWRequest) <-chan rwHeld {
	ch := make(chan rwHeld, 1)
	go func() {
		l, _, err := e.AcquireRW(ctx, req)
		ch <- rwHeld{l, err}
	}()
	return ch
}

func mustRW(t *testing.T, e *lock.Engine, req lock.RWRequest) *lock.Lock {
	t.Helper()
	l, _, err := e.AcquireRW(context.Background(), req)
	if err != nil {
		t.Fatalf("acquire %+v: %v", req, err)
	}
	return l
}

// rwWaiters waits until n acquires wait in line for rwlock name.
func rwWaiters(t *testing.T, e *lock.Engine, name string, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the acquires wait in line", func() bool {
		rw, err := e.RWLock(context.Background(), name)
		return err == nil && len(rw.Waiters) == n
	})
}

func rwHistory(t *testing.T, e *lock.Engine, name string) []lock.Event {
	t.Helper()
	evs, _, err := holdtest.TrailOf(e).History(context.Background(), trail.HistoryOptions{Kind: lock.KindRWLock, Name: name, Limit: lock.MaxListLimit})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	return evs
}

// TestRWLock_ReadersShareAWriterExcludes: two readers hold at once; a
// writer is refused with both named; a reader is refused while a writer
// holds; tokens are each hold's own.
func TestRWLock_ReadersShareAWriterExcludes(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	r1 := mustRW(t, e, lock.RWRequest{Name: "cat", Mode: lock.ModeRead, Owner: "r1"})
	r2 := mustRW(t, e, lock.RWRequest{Name: "cat", Mode: lock.ModeRead, Owner: "r2"})
	if r1.Mode != lock.ModeRead || r2.Token <= r1.Token || r2.Name != "cat" {
		t.Fatalf("read holds %+v, %+v", r1, r2)
	}
	_, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "cat", Mode: lock.ModeWrite, Owner: "w"})
	var he *lock.HeldError
	if !errors.Is(err, lock.ErrHeld) || !errors.As(err, &he) || len(he.Holders) != 2 {
		t.Fatalf("write while read: %v (%+v); want held with the two readers", err, he)
	}
	for _, tok := range []int64{r1.Token, r2.Token} {
		if err := e.ReleaseRW(ctx, "cat", tok); err != nil {
			t.Fatal(err)
		}
	}
	w := mustRW(t, e, lock.RWRequest{Name: "cat", Mode: lock.ModeWrite, Owner: "w"})
	if w.Mode != lock.ModeWrite || w.Token <= r2.Token {
		t.Fatalf("write hold %+v", w)
	}
	if _, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "cat", Mode: lock.ModeRead, Owner: "r3"}); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("read while written: %v; want held", err)
	}
	rw, err := e.RWLock(ctx, "cat")
	if err != nil || rw.Mode != lock.ModeWrite || len(rw.Holders) != 1 || rw.Holders[0].Token != w.Token {
		t.Fatalf("rwlock %+v, %v", rw, err)
	}
	if _, err := e.RenewRW(ctx, "cat", w.Token); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := e.ReleaseRW(ctx, "cat", w.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RWLock(ctx, "cat"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("free rwlock: %v; want not held", err)
	}
}

// TestRWLock_StrictFIFOWithReadersGrantedTogether: while a writer holds,
// a reader, a writer and two readers queue (across two nodes). The
// writer's release grants the first reader alone (a writer is next), its
// release the writer, and the writer's release the next reader, in its
// own txn, and the reader behind it at once after, with a token of its
// own; a reader arriving behind a waiting writer waits.
func TestRWLock_StrictFIFOWithReadersGrantedTogether(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	w0 := mustRW(t, a, lock.RWRequest{Name: "q", Mode: lock.ModeWrite, Owner: "w0"})
	wait := 30 * time.Second
	r1 := rwAsync(ctx, b, lock.RWRequest{Name: "q", Mode: lock.ModeRead, Owner: "r1", Wait: wait})
	rwWaiters(t, a, "q", 1)
	w2 := rwAsync(ctx, a, lock.RWRequest{Name: "q", Mode: lock.ModeWrite, Owner: "w2", Wait: wait})
	rwWaiters(t, a, "q", 2)
	r3 := rwAsync(ctx, b, lock.RWRequest{Name: "q", Mode: lock.ModeRead, Owner: "r3", Wait: wait})
	rwWaiters(t, a, "q", 3)
	r4 := rwAsync(ctx, a, lock.RWRequest{Name: "q", Mode: lock.ModeRead, Owner: "r4", Wait: wait})
	rwWaiters(t, a, "q", 4)

	if err := a.ReleaseRW(ctx, "q", w0.Token); err != nil {
		t.Fatal(err)
	}
	got1 := <-r1
	if got1.err != nil || got1.l.Owner != "r1" {
		t.Fatalf("r1: %+v", got1)
	}
	rwWaiters(t, a, "q", 3) // w2 waits for r1; r3 and r4 behind it
	if err := b.ReleaseRW(ctx, "q", got1.l.Token); err != nil {
		t.Fatal(err)
	}
	got2 := <-w2
	if got2.err != nil || got2.l.Mode != lock.ModeWrite {
		t.Fatalf("w2: %+v", got2)
	}
	if err := a.ReleaseRW(ctx, "q", got2.l.Token); err != nil {
		t.Fatal(err)
	}
	got3, got4 := <-r3, <-r4
	if got3.err != nil || got4.err != nil {
		t.Fatalf("r3 %+v, r4 %+v", got3, got4)
	}
	if got3.l.Token == got4.l.Token {
		t.Fatalf("r3 and r4 share token %d; every hold has its own", got3.l.Token)
	}
	// Granted together: both hold at once, neither waited for a release
	// after w2's, and the first was granted by w2's release itself.
	if rw, err := a.RWLock(ctx, "q"); err != nil || rw.Mode != lock.ModeRead || len(rw.Holders) != 2 {
		t.Fatalf("after w2: %+v, %v; want r3 and r4 reading", rw, err)
	}
	var w2Release int64
	for _, ev := range holdtest.EventsOf(rwHistory(t, a, "q"), lock.EventReleased) {
		if ev.Owner == "w2" {
			w2Release = ev.Revision
		}
	}
	if first := min(got3.l.Token, got4.l.Token); first != w2Release {
		t.Fatalf("w2's release at %d, the first reader's grant at %d; want the release to grant it", w2Release, first)
	}
}

// TestRWLock_ReadersOverlapAndWritersExcludeUnderContention: 12 readers
// and 4 writers on two nodes, with wait, count themselves inside: a
// writer is always alone, and readers did overlap.
func TestRWLock_ReadersOverlapAndWritersExcludeUnderContention(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	var readers, writers atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, mode := a, lock.ModeRead
			if w%2 == 1 {
				e = b
			}
			if w%4 == 3 {
				mode = lock.ModeWrite
			}
			for range 4 {
				l, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "c", Mode: mode, Owner: owner(w), Wait: time.Minute})
				if err != nil {
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
				if mode == lock.ModeWrite {
					if writers.Add(1) != 1 || readers.Load() != 0 {
						errs <- fmt.Errorf("writer %d not alone: %d writers, %d readers", w, writers.Load(), readers.Load())
					}
					writers.Add(-1)
				} else {
					readers.Add(1)
					if writers.Load() != 0 {
						errs <- fmt.Errorf("reader %d beside a writer", w)
					}
					readers.Add(-1)
				}
				if err := e.ReleaseRW(ctx, "c", l.Token); err != nil {
					errs <- fmt.Errorf("worker %d release: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	evs := rwHistory(t, a, "c")
	if got := len(holdtest.EventsOf(evs, lock.EventAcquired)); got != 64 {
		t.Fatalf("%d acquired events; want 64", got)
	}
	checkWriteTokens(t, evs)
}

// checkWriteTokens: in a read/write lock's trail (newest first), every
// write hold's token exceeds the token of every hold that ended before
// it was granted, and no two holds share a token.
func checkWriteTokens(t *testing.T, evs []lock.Event) {
	t.Helper()
	seen := map[int64]bool{}
	var ended []lock.Event
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		switch {
		case ev.Type == lock.EventAcquired:
			if seen[ev.Token] {
				t.Fatalf("token %d granted twice", ev.Token)
			}
			seen[ev.Token] = true
			for _, end := range ended {
				if ev.Mode == lock.ModeWrite && end.Token >= ev.Token {
					t.Fatalf("write hold %d granted after the hold %d ended", ev.Token, end.Token)
				}
			}
		default:
			ended = append(ended, ev)
		}
	}
}

// TestRWLock_AWriterIsNotStarvedByAStreamOfReaders: readers hand the
// lock on to each other, each taking its hold before the last gives its
// own back, so the lock is never free (the pattern that starves a writer
// behind a naive read/write lock). A writer that queues is granted within
// one generation of readers: the reader that comes after it, across
// another node, waits for it, and the writer gets the lock from the
// release of the last reader that held before it.
func TestRWLock_AWriterIsNotStarvedByAStreamOfReaders(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	cur := mustRW(t, a, lock.RWRequest{Name: "s", Mode: lock.ModeRead, Owner: "r0"})
	for i := 1; i <= 3; i++ {
		next := mustRW(t, []*lock.Engine{a, b}[i%2], lock.RWRequest{Name: "s", Mode: lock.ModeRead, Owner: owner(i)})
		if err := a.ReleaseRW(ctx, "s", cur.Token); err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	w := rwAsync(ctx, a, lock.RWRequest{Name: "s", Mode: lock.ModeWrite, Owner: "w", Wait: time.Minute})
	rwWaiters(t, a, "s", 1)
	late := rwAsync(ctx, b, lock.RWRequest{Name: "s", Mode: lock.ModeRead, Owner: "late", Wait: time.Minute})
	rwWaiters(t, a, "s", 2)
	if err := b.ReleaseRW(ctx, "s", cur.Token); err != nil {
		t.Fatal(err)
	}
	got := <-w
	if got.err != nil {
		t.Fatalf("writer: %v", got.err)
	}
	var lastRelease int64
	for _, ev := range holdtest.EventsOf(rwHistory(t, a, "s"), lock.EventReleased) {
		lastRelease = max(lastRelease, ev.Revision)
	}
	if got.l.Token != lastRelease {
		t.Fatalf("writer granted at %d, the last reader released at %d: want the release to grant it", got.l.Token, lastRelease)
	}
	select {
	case r := <-late:
		t.Fatalf("the reader behind the writer got in beside it: %+v", r)
	default:
	}
	if err := a.ReleaseRW(ctx, "s", got.l.Token); err != nil {
		t.Fatal(err)
	}
	if r := <-late; r.err != nil || r.l.Token <= got.l.Token {
		t.Fatalf("the reader after the writer: %+v", r)
	}
}

// TestRWLock_AnExpiredWriterFreesTheReaders: a writer whose lease runs out
// leaves no hold, and the readers waiting get in.
func TestRWLock_AnExpiredWriterFreesTheReaders(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	mustRW(t, e, lock.RWRequest{Name: "x", Mode: lock.ModeWrite, Owner: "dies", TTL: 2 * time.Second})
	r1 := rwAsync(ctx, e, lock.RWRequest{Name: "x", Mode: lock.ModeRead, Owner: "r1", Wait: time.Minute})
	r2 := rwAsync(ctx, e, lock.RWRequest{Name: "x", Mode: lock.ModeRead, Owner: "r2", Wait: time.Minute})
	for _, ch := range []<-chan rwHeld{r1, r2} {
		if got := <-ch; got.err != nil {
			t.Fatalf("reader after expiry: %v", got.err)
		}
	}
	poll.Until(t, 10*time.Second, "the expiry is recorded", func() bool {
		return len(holdtest.EventsOf(rwHistory(t, e, "x"), lock.EventExpired)) == 1
	})
}

// TestRWLock_BadMode: a mode that is neither read nor write is refused
// naming the field.
func TestRWLock_BadMode(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	_, _, err := e.AcquireRW(holdtest.Ctx(t), lock.RWRequest{Name: "m", Mode: "both", Owner: "o"})
	var ie *lock.InvalidError
	if !errors.As(err, &ie) || ie.Field != "mode" {
		t.Fatalf("bad mode: %v; want invalid mode", err)
	}
}
