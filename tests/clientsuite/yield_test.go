package clientsuite_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
)

// yieldDeadline is how soon a holder must hear a request to yield: the
// issue asks for 100 ms; the test allows more for a loaded 2-core
// machine under -race, still well under a second.
const yieldDeadline = 500 * time.Millisecond

// nextYield waits for the next request on ch, failing the test after
// timeout; it returns the request and how long after sent it came.
func nextYield(t *testing.T, ch <-chan client.YieldRequest, sent time.Time, timeout time.Duration) (client.YieldRequest, time.Duration) {
	t.Helper()
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case y, ok := <-ch:
		if !ok {
			t.Fatal("YieldRequested closed while the hold was kept")
		}
		return y, time.Since(sent)
	case <-tm.C:
		t.Fatalf("no request to yield within %s", timeout)
	}
	return client.YieldRequest{}, 0
}

// TestLock_YieldRequestedHearsARequestWithinADeadline: a holder hears
// each request to yield, with who asked and why, well within a second;
// the lock stays held until the holder releases it, and the channel then
// closes.
func TestLock_YieldRequestedHearsARequestWithinADeadline(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	asker := newClient(t, f.URL)
	name := lockName(t, "l")
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "holder", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	yields := lk.YieldRequested()
	for i := range 3 {
		sent := time.Now()
		asked, err := asker.Yield(ctx, name, client.YieldOptions{Owner: "batch", Reason: "backup"})
		if err != nil {
			t.Fatalf("yield: %v", err)
		}
		if !slices.Equal(asked.Tokens, []int64{lk.Token()}) || asked.Kind != "lock" || asked.Owner != "batch" {
			t.Fatalf("answer %+v, want token %d asked by batch", asked, lk.Token())
		}
		y, took := nextYield(t, yields, sent, 5*time.Second)
		t.Logf("request %d → YieldRequested: %s", i, took)
		if took > yieldDeadline {
			t.Errorf("heard the request %s after it was sent, want within %s", took, yieldDeadline)
		}
		want := client.YieldRequest{Kind: "lock", Name: name, Token: lk.Token(), Owner: "batch", Reason: "backup", Revision: asked.Revision, Time: asked.RequestedAt}
		if y != want {
			t.Fatalf("heard %+v, want %+v", y, want)
		}
	}
	select {
	case <-lk.Lost():
		t.Fatalf("lost after requests to yield: %v", lk.Err())
	default:
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitYieldsClosed(t, yields)
	if _, err := asker.Yield(ctx, name, client.YieldOptions{}); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("yield to a free lock: %v, want ErrNotHeld", err)
	}
}

// waitYieldsClosed drains ch until it closes, failing after 5 s.
func waitYieldsClosed(t *testing.T, ch <-chan client.YieldRequest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-ctx.Done():
			t.Fatal("YieldRequested not closed after the hold ended")
		}
	}
}

// TestHolds_OfEveryKindHearTheRequestsMadeOfThem: a request made before
// the first call of YieldRequested is delivered on it; a permit, an
// rwlock hold and a leadership each hear the requests made of them, and a
// permit asked by token alone hears it while the other permit does not.
func TestHolds_OfEveryKindHearTheRequestsMadeOfThem(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	sem := lockName(t, "s")
	p1, err := c.AcquirePermit(ctx, sem, 2, client.PermitOptions{Owner: "p1", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Release(ctx)
	p2, err := c.AcquirePermit(ctx, sem, 2, client.PermitOptions{Owner: "p2", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Release(ctx)
	sent := time.Now()
	if _, err := c.YieldPermits(ctx, sem, client.YieldOptions{Token: p2.Token(), Reason: "you"}); err != nil {
		t.Fatal(err)
	}
	// Asked before its first call: delivered on it all the same.
	if y, _ := nextYield(t, p2.YieldRequested(), sent, 5*time.Second); y.Token != p2.Token() || y.Kind != "semaphore" || y.Reason != "you" {
		t.Fatalf("permit 2 heard %+v", y)
	}
	sent = time.Now()
	if _, err := c.YieldPermits(ctx, sem, client.YieldOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*client.Permit{p1, p2} {
		if y, took := nextYield(t, p.YieldRequested(), sent, 5*time.Second); y.Token != p.Token() || took > yieldDeadline {
			t.Errorf("permit %d heard %+v after %s", p.Token(), y, took)
		}
	}
	select {
	case y := <-p1.YieldRequested():
		t.Fatalf("permit 1 heard %+v, which asked permit 2 alone", y)
	default:
	}

	rw, err := c.AcquireRW(ctx, lockName(t, "rw"), client.Read, client.RWOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Release(ctx)
	ld, err := c.Campaign(ctx, lockName(t, "e"), client.CampaignOptions{Candidate: "a", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	resignAtEnd(t, ld)
	sent = time.Now()
	if _, err := c.YieldRW(ctx, rw.Name(), client.YieldOptions{Reason: "writer waits"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.YieldLeadership(ctx, ld.Name(), client.YieldOptions{Reason: "drain"}); err != nil {
		t.Fatal(err)
	}
	if y, took := nextYield(t, rw.YieldRequested(), sent, 5*time.Second); y.Kind != "rwlock" || y.Token != rw.Token() || took > yieldDeadline {
		t.Errorf("rwlock hold heard %+v after %s", y, took)
	}
	if y, took := nextYield(t, ld.YieldRequested(), sent, 5*time.Second); y.Kind != "election" || y.Token != ld.Token() || y.Reason != "drain" || took > yieldDeadline {
		t.Errorf("leadership heard %+v after %s", y, took)
	}
}
