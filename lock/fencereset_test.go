package lock_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

func TestResetFenced_LetsRealHoldersWriteAgainAndIsAudited(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	real := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "acct", Owner: "w"})
	// A token of another lock, issued later: it pushes the register past
	// the real holder, as a token passed by mistake would.
	other := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "elsewhere", Owner: "w"})
	if _, err := e.PutFenced(ctx, "acct", other.Token, json.RawMessage(`"poison"`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PutFenced(ctx, "acct", real.Token, json.RawMessage(`1`), "acct"); !errors.Is(err, lock.ErrStaleToken) {
		t.Fatalf("the real holder's write: %v, want ErrStaleToken", err)
	}
	if err := e.ResetFenced(ctx, "acct", "a token of another lock was passed", "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetFenced(ctx, "acct"); !errors.Is(err, lock.ErrNotFound) {
		t.Fatalf("after the reset: %v, want ErrNotFound", err)
	}
	if _, err := e.PutFenced(ctx, "acct", real.Token, json.RawMessage(`1`), "acct"); err != nil {
		t.Fatalf("the real holder's write after the reset: %v", err)
	}
	evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Kind: lock.KindFence, Name: "acct"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != lock.EventFenceReset || evs[0].Owner != "ops" || evs[0].Detail != "a token of another lock was passed" {
		t.Fatalf("fence history: %+v, want one fence_reset by ops with the reason", evs)
	}
	// The lock of the same name has its own events only.
	lockEvs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: "acct"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range lockEvs {
		if ev.Kind != lock.KindLock {
			t.Fatalf("lock acct's history holds %+v", ev)
		}
	}
	if err := e.ResetFenced(ctx, "nothing-here", "", "ops"); !errors.Is(err, lock.ErrNotFound) {
		t.Fatalf("reset of an empty resource: %v, want ErrNotFound", err)
	}
}
