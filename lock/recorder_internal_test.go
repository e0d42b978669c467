package lock

import (
	"context"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
)

// TestRecorder_ALoneDeleteIsRecordedAsAnExpiryOfTheHoldItEnded: a hold
// with pending records (storage format 4) whose key is deleted alone
// ended with its lease; the expiry the recorder writes names that hold.
func TestRecorder_ALoneDeleteIsRecordedAsAnExpiryOfTheHoldItEnded(t *testing.T) {
	e := newTestEngineAtFormat(t, 4)
	ctx := context.Background()
	l, _, err := e.Acquire(ctx, AcquireRequest{Name: "x", Owner: "w1", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// What etcd does when the hold's lease runs out: a delete in a
	// revision of its own.
	if _, err := e.core.Cli.Delete(ctx, e.core.Keys.Lock("x")); err != nil {
		t.Fatal(err)
	}
	var got []Event
	poll.Until(t, 10*time.Second, "the expiry in the history", func() bool {
		got, err = HistoryOf(ctx, e, "x")
		return err == nil && len(got) == 2
	})
	if ev := got[0]; ev.Type != EventExpired || ev.Owner != "w1" || ev.Token != l.Token {
		t.Fatalf("history %+v; want the expiry of w1's hold %d, newest first", got, l.Token)
	}
}

// TestRecorder_AHoldCompactedAwayIsLeftToReconcile: when the revision
// before a lone delete is compacted, the recorder cannot read the hold,
// and reconcile, which reads what is there now, takes over.
func TestRecorder_AHoldCompactedAwayIsLeftToReconcile(t *testing.T) {
	e := newTestEngineAtFormat(t, 4)
	ctx := context.Background()
	l, _, err := e.Acquire(ctx, AcquireRequest{Name: "y", Owner: "w1", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.core.Cli.Get(ctx, "any")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.core.Cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	// A delete recorded at l.Token would be read at l.Token-1, which is
	// compacted away.
	if err := e.rec.RecordLone(ctx, l.Token, []string{"y"}); err != nil {
		t.Fatalf("recordLone over a compacted revision: %v, want reconcile to take over", err)
	}
	evs, err := HistoryOf(ctx, e, "y")
	if err != nil || len(evs) != 1 || evs[0].Type != EventAcquired {
		t.Fatalf("history %+v, %v; want only the acquire: the lock is still held", evs, err)
	}
}
