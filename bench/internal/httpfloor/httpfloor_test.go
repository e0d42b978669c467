package httpfloor

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testetcd"
)

// floorOnMember starts a floor server on a member of its own, batching
// its txns, and putting records records a cycle, if batched, closed when
// the test ends, and returns it with the
// member's client and a context that bounds the test.
func floorOnMember(t *testing.T, batched bool, records int) (*Server, *clientv3.Client, context.Context) {
	t.Helper()
	m := testetcd.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	f, err := Start(ctx, m.Client(), batched, records)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, m.Client(), ctx
}

// TestHTTPFloor_TakenLockAndStaleTokenAreRefused drives a floor server on a
// member of its own as the load generator does, and checks the two txns'
// compares: a held lock is not taken again, a stale token frees nothing,
// and closing the server revokes its lease with whatever it held; with
// its txns sent alone, and through the batcher with three records a
// cycle, two put by the acquire and one by the release.
func TestHTTPFloor_TakenLockAndStaleTokenAreRefused(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(map[bool]string{false: "alone", true: "batched"}[batched], func(t *testing.T) {
			checkFloorRefusals(t, batched)
		})
	}
}

func checkFloorRefusals(t *testing.T, batched bool) {
	records, wantRecords := 0, int64(0)
	if batched {
		// Two acquires and one release succeed below.
		records, wantRecords = 3, 2*2+1
	}
	f, cli, ctx := floorOnMember(t, batched, records)
	a := httpapi.New(f.URL(), 1)
	id, err := a.CreateSession(ctx, "w1")
	if err != nil || id == "" {
		t.Fatalf("create session: %q, %v", id, err)
	}
	body := httpapi.AcquireBody{Owner: "w1", Session: id}.Encode()
	token, err := a.Acquire(ctx, "a", body)
	if err != nil || token <= 0 {
		t.Fatalf("acquire: token %d, %v", token, err)
	}
	if _, err := a.Acquire(ctx, "a", body); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("acquire of a held lock: %v, want 409", err)
	}
	if err := a.Release(ctx, "a", token-1); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("release with a stale token: %v, want 409", err)
	}
	if err := a.Release(ctx, "a", token); err != nil {
		t.Errorf("release: %v", err)
	}
	again, err := a.Acquire(ctx, "a", body)
	if err != nil || again <= token {
		t.Errorf("acquire after release: token %d (first %d), %v", again, token, err)
	}
	if err := a.RenewSession(ctx, id); err != nil {
		t.Errorf("renew: %v", err)
	}
	if err := a.DeleteSession(ctx, id); err != nil {
		t.Errorf("delete session: %v", err)
	}

	recs, err := cli.Get(ctx, httpFloorPrefix+"records/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if recs.Count != wantRecords {
		t.Errorf("%d records, want %d", recs.Count, wantRecords)
	}

	// "a" is still held; the lease takes it with it.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, httpFloorPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("after close, %d floor keys, want none", resp.Count)
	}
}

// TestHTTPFloor_WaitersAreHandedTheLockInOrder queues two waiters behind a
// holder and checks that each release hands the lock to the oldest in its
// own txn (the waiter's token is the release's revision, one write), that
// a wait that runs out is refused and leaves no entry, and that nothing
// is left once the last holder releases.
func TestHTTPFloor_WaitersAreHandedTheLockInOrder(t *testing.T) {
	f, cli, ctx := floorOnMember(t, false, 0)
	a := httpapi.New(f.URL(), 4)
	waiting := func(owner, wait string) []byte { return httpapi.AcquireBody{Owner: owner, Wait: wait}.Encode() }
	first, err := a.Acquire(ctx, "q", waiting("w0", "10s"))
	if err != nil {
		t.Fatal(err)
	}
	q := f.queue("q", false)
	queued := func(n int) func() bool {
		return func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.waiters) == n }
	}
	type grant struct {
		owner string
		token int64
		err   error
	}
	grants := make(chan grant, 2)
	for i, owner := range []string{"w1", "w2"} {
		go func() {
			tok, err := a.Acquire(ctx, "q", waiting(owner, "10s"))
			grants <- grant{owner, tok, err}
		}()
		poll.Until(t, 10*time.Second, "the waiter in line", queued(i+1))
	}
	if _, err := a.Acquire(ctx, "q", waiting("late", "50ms")); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("a wait that runs out: %v, want 409", err)
	}
	poll.Until(t, 10*time.Second, "the late waiter gone", queued(2))

	token := first
	for _, want := range []string{"w1", "w2"} {
		rev, err := cli.Get(ctx, "rev")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Release(ctx, "q", token); err != nil {
			t.Fatalf("release of %d: %v", token, err)
		}
		g := <-grants
		if g.err != nil || g.owner != want || g.token != rev.Header.Revision+1 {
			t.Fatalf("granted %+v, want %s at revision %d", g, want, rev.Header.Revision+1)
		}
		token = g.token
	}
	if err := a.Release(ctx, "q", token); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, httpFloorPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Errorf("after the last release, %d floor keys (%v), want none", resp.Count, err)
	}
}
