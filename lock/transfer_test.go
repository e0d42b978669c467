package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
)

// campaignLater campaigns for name as candidate, waiting up to wait, in
// a goroutine; the leadership (or error) comes on the channel.
func campaignLater(t *testing.T, e *lock.Engine, name, candidate string) <-chan *lock.Lock {
	t.Helper()
	got := make(chan *lock.Lock, 1)
	go func() {
		l, _, err := e.Campaign(holdtest.Ctx(t), lock.CampaignRequest{Name: name, Candidate: candidate, Wait: 20 * time.Second})
		if err != nil {
			t.Errorf("campaign of %s: %v", candidate, err)
		}
		got <- l
	}()
	return got
}

func TestTransferLeadership_HandsItToTheNamedCandidateAheadOfTheLine(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	a, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "sched", Candidate: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b := campaignLater(t, e, "sched", "b")
	poll.Until(t, 10*time.Second, "b waits", func() bool { _, ws, _ := e.Leader(ctx, "sched"); return len(ws) == 1 })
	c := campaignLater(t, e, "sched", "c")
	poll.Until(t, 10*time.Second, "c waits behind b", func() bool { _, ws, _ := e.Leader(ctx, "sched"); return len(ws) == 2 })

	if _, err := e.TransferLeadership(ctx, "sched", a.Token, "nobody"); !errors.Is(err, lock.ErrCandidateNotWaiting) {
		t.Fatalf("transfer to a candidate not in line: %v, want ErrCandidateNotWaiting", err)
	}
	got, err := e.TransferLeadership(ctx, "sched", a.Token, "c")
	if err != nil {
		t.Fatalf("transfer to c: %v", err)
	}
	if got.Owner != "c" || got.Term != a.Term+1 || got.Token <= a.Token || got.ExpiresAt.IsZero() {
		t.Fatalf("transfer answered %+v, want c's leadership, term %d, a token above %d, with its expiry", got, a.Term+1, a.Token)
	}
	cl := <-c
	if cl == nil || cl.Token != got.Token || cl.Owner != "c" {
		t.Fatalf("c's campaign returned %+v, want the transferred leadership with token %d", cl, got.Token)
	}
	if _, err := e.TransferLeadership(ctx, "sched", a.Token, "b"); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("transfer with the old leader's token: %v, want ErrTokenMismatch", err)
	}
	// The resignation and the new term share one revision in the trail.
	var resigned, elected lock.Event
	poll.Until(t, 10*time.Second, "the transfer is in the history", func() bool {
		evs := holdtest.History(t, e, "")
		for _, ev := range evs {
			switch {
			case ev.Type == lock.EventResigned && ev.Token == a.Token:
				resigned = ev
			case ev.Type == lock.EventElected && ev.Token == got.Token:
				elected = ev
			}
		}
		return resigned.Revision != 0 && elected.Revision != 0
	})
	if resigned.Revision != got.Token || elected.Revision != got.Token || resigned.Detail != "transferred to c" {
		t.Fatalf("resigned %+v, elected %+v: want both at revision %d, the resignation saying so", resigned, elected, got.Token)
	}
	// b still waits, and leads when c resigns.
	if err := e.Resign(ctx, "sched", got.Token); err != nil {
		t.Fatal(err)
	}
	if bl := <-b; bl == nil || bl.Owner != "b" {
		t.Fatalf("b's campaign returned %+v, want b leading", bl)
	}
}

func TestTransferLeadership_WaitsOutTheWindow(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	a, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "w", Candidate: "a", MinHold: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _, _ = e.Campaign(ctx, lock.CampaignRequest{Name: "w", Candidate: "b", Wait: 20 * time.Second})
	}() // waits out the test
	poll.Until(t, 10*time.Second, "b waits", func() bool { _, ws, _ := e.Leader(ctx, "w"); return len(ws) == 1 })
	_, err = e.TransferLeadership(ctx, "w", a.Token, "b")
	var he *lock.HeldError
	if !errors.As(err, &he) || !errors.Is(err, lock.ErrElectionHeld) || he.RetryAfter < 59*time.Minute || he.Holder == nil || he.Holder.Token != a.Token {
		t.Fatalf("transfer inside the window: %v, want election held by a for the window's hour", err)
	}
}
