package clientsuite_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
)

// resignAtEnd resigns ld when the test ends, whatever happened.
func resignAtEnd(t *testing.T, ld *client.Leadership) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ld.Resign(ctx)
	})
}

// campaignAsync campaigns in the background, waiting in line.
func campaignAsync(ctx context.Context, c *client.Client, name, candidate string) <-chan *client.Leadership {
	out := make(chan *client.Leadership, 1)
	go func() {
		ld, err := c.Campaign(ctx, name, client.CampaignOptions{Candidate: candidate, TTL: longTTL, Wait: time.Minute})
		if err != nil {
			ld = nil
		}
		out <- ld
	}()
	return out
}

// waitCandidates waits until the election has n candidates in line.
func waitCandidates(t *testing.T, ctx context.Context, c *client.Client, name string, n int) *client.LeaderInfo {
	t.Helper()
	var li *client.LeaderInfo
	poll.Until(t, 10*time.Second, "candidates in line", func() bool {
		var err error
		li, err = c.Leader(ctx, name)
		return err == nil && len(li.Candidates) == n
	})
	return li
}

func leaderOf(t *testing.T, ch <-chan *client.Leadership) *client.Leadership {
	t.Helper()
	select {
	case ld := <-ch:
		if ld == nil {
			t.Fatal("the campaign failed")
		}
		resignAtEnd(t, ld)
		return ld
	case <-time.After(10 * time.Second):
		t.Fatal("the campaign did not win within 10 s")
		return nil
	}
}

// TestCampaign_CandidatesLeadInTheOrderTheyQueued: a resignation hands
// leadership to the first candidate in line, with a greater token and the
// next term; the others wait on, and none is lost by another's end.
func TestCampaign_CandidatesLeadInTheOrderTheyQueued(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "e")
	a, err := c.Campaign(ctx, name, client.CampaignOptions{Candidate: "a", TTL: longTTL, Value: map[string]string{"addr": "a:1"}})
	if err != nil {
		t.Fatalf("campaign: %v", err)
	}
	resignAtEnd(t, a)
	_, err = c.Campaign(ctx, name, client.CampaignOptions{Candidate: "x"})
	var e *client.Error
	if !errors.Is(err, client.ErrElectionHeld) || errors.Is(err, client.ErrHeld) || !errors.As(err, &e) || e.Leader == nil ||
		e.Leader.Candidate != "a" || e.Leader.Token != a.Token() || e.Leader.Term != a.Term() || string(e.Leader.Value) != `{"addr":"a:1"}` {
		t.Fatalf("campaign against a leader: %v (leader %+v), want ErrElectionHeld naming a", err, e)
	}

	bc := campaignAsync(ctx, c, name, "b")
	waitCandidates(t, ctx, c, name, 1)
	cc := campaignAsync(ctx, c, name, "c")
	li := waitCandidates(t, ctx, c, name, 2)
	if li.Candidate != "a" || li.Candidates[0].Candidate != "b" || li.Candidates[1].Candidate != "c" {
		t.Fatalf("leader %q, candidates %+v; want a, then b and c in that order", li.Candidate, li.Candidates)
	}

	if err := a.Resign(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	b := leaderOf(t, bc)
	if b.Token() <= a.Token() || b.Term() != a.Term()+1 || b.Info().Candidate != "b" {
		t.Fatalf("b leads with token %d, term %d after a's %d, %d; want greater, and the next term", b.Token(), b.Term(), a.Token(), a.Term())
	}
	if isClosed(a.Lost()) || !isClosed(a.Done()) || a.Err() != nil {
		t.Fatalf("a resigned: lost %v, done %v, err %v; want done, not lost", isClosed(a.Lost()), isClosed(a.Done()), a.Err())
	}
	select {
	case <-cc:
		t.Fatal("c leads too, while b does")
	default:
	}

	if err := b.Resign(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	cl := leaderOf(t, cc)
	if cl.Term() != b.Term()+1 || cl.Token() <= b.Token() || isClosed(b.Lost()) {
		t.Fatalf("c leads with term %d after b's %d (b lost: %v)", cl.Term(), b.Term(), b.Err())
	}
	if err := cl.Resign(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	if _, err := c.Leader(ctx, name); !errors.Is(err, client.ErrNoLeader) || errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("leader after the last resigned: %v, want ErrNoLeader", err)
	}
}

// TestLeadership_RevokeReachesLostWithinASecond: a revoke must stop the
// leader now, not at its next renew, by the event stream as for a lock.
func TestLeadership_RevokeReachesLostWithinASecond(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	for range 3 {
		name := lockName(t, "e")
		ld, err := c.Campaign(ctx, name, client.CampaignOptions{Candidate: "a", TTL: longTTL})
		if err != nil {
			t.Fatalf("campaign: %v", err)
		}
		resignAtEnd(t, ld)
		sent := time.Now()
		if err := c.RevokeLeadership(ctx, name, "operator says stop"); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		took := waitClosed(t, ld.Lost(), 5*time.Second, "Lost after a revoke").Sub(sent)
		t.Logf("revoke → Lost: %s", took)
		if took > time.Second {
			t.Errorf("Lost fired %s after the revoke was sent, want within 1 s", took)
		}
		err = ld.Err()
		var le *client.LostError
		if !errors.Is(err, client.ErrLockLost) || !errors.Is(err, client.ErrNoLeader) || !errors.As(err, &le) || le.Kind != "election" ||
			!strings.Contains(err.Error(), "leadership of") || !strings.Contains(err.Error(), "revoked") || !strings.Contains(err.Error(), "operator says stop") {
			t.Errorf("Err() = %v, want ErrLockLost and ErrNoLeader, naming the leadership, the revoke and its reason", err)
		}
		if n := f.count(http.MethodPost, "/renew"); n > 0 {
			t.Errorf("%d renews were sent: the TTL is %s, so none was due", n, longTTL)
		}
		if err := ld.Resign(ctx); !errors.Is(err, client.ErrLockLost) {
			t.Errorf("resign after the revoke: %v, want ErrLockLost", err)
		}
	}
}

// TestLeadership_ResignedElsewhereReachesLostWithinASecond: a resignation
// by the token from elsewhere ends the leadership; the stream tells.
func TestLeadership_ResignedElsewhereReachesLostWithinASecond(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	other := newClient(t, f.URL)
	ld, err := c.Campaign(ctx, lockName(t, "e"), client.CampaignOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	resignAtEnd(t, ld)
	sent := time.Now()
	if err := other.ResignLeadership(ctx, ld.Name(), ld.Token()); err != nil {
		t.Fatal(err)
	}
	if took := waitClosed(t, ld.Lost(), 5*time.Second, "Lost after a resignation elsewhere").Sub(sent); took > time.Second {
		t.Errorf("Lost fired %s after the resignation, want within 1 s", took)
	}
	if err := ld.Err(); !errors.Is(err, client.ErrNoLeader) || !strings.Contains(err.Error(), "resigned") {
		t.Errorf("Err() = %v, want ErrNoLeader naming the resignation", err)
	}
}

// TestLeadership_TransferHandsItToTheNamedCandidate: a transfer to a
// candidate not in line leaves the leadership going; one to a waiting
// candidate ends it cleanly (Done, not Lost) and that candidate's
// campaign returns the new leadership, ahead of the one before it.
func TestLeadership_TransferHandsItToTheNamedCandidate(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	other := newClient(t, f.URL)
	name := lockName(t, "e")
	ld, err := c.Campaign(ctx, name, client.CampaignOptions{Candidate: "a", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	resignAtEnd(t, ld)
	first := campaignAsync(ctx, other, name, "b")
	waitCandidates(t, ctx, c, name, 1)
	second := campaignAsync(ctx, other, name, "c")
	waitCandidates(t, ctx, c, name, 2)

	if _, err := ld.Transfer(ctx, "nobody"); !errors.Is(err, client.ErrCandidateNotWaiting) {
		t.Fatalf("transfer to a candidate not in line: %v, want ErrCandidateNotWaiting", err)
	}
	if _, err := c.RenewLeadership(ctx, name, ld.Token()); err != nil {
		t.Fatalf("the leadership after a refused transfer: %v, want it still held", err)
	}
	next, err := ld.Transfer(ctx, "c")
	if err != nil {
		t.Fatalf("transfer to c: %v", err)
	}
	cl := leaderOf(t, second)
	if next.Candidate != "c" || cl.Token() != next.Token || next.Term != ld.Term()+1 {
		t.Fatalf("transfer answered %+v, c's campaign token %d; want c leading the next term with one token", next, cl.Token())
	}
	waitClosed(t, ld.Done(), 5*time.Second, "Done after the transfer")
	select {
	case <-ld.Lost():
		t.Fatalf("Lost fired after a transfer: %v", ld.Err())
	default:
	}
	if err := cl.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	leaderOf(t, first)
}

// TestLeadership_LostByTheClientsClockWhenRenewsHang: with the node
// taking renewals in and never answering, the TTL by the client's own
// clock ends the leadership.
func TestLeadership_LostByTheClientsClockWhenRenewsHang(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	start := time.Now()
	ld, err := c.Campaign(ctx, lockName(t, "e"), client.CampaignOptions{TTL: shortTTL})
	if err != nil {
		t.Fatalf("campaign: %v", err)
	}
	resignAtEnd(t, ld)
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
	at := waitClosed(t, ld.Lost(), 2*shortTTL, "Lost while renewals hang")
	if took := at.Sub(start); took < shortTTL || took > shortTTL+time.Second {
		t.Errorf("Lost fired %s after the campaign was sent, want at the TTL (%s)", took, shortTTL)
	}
	if hung.Load() == 0 {
		t.Fatal("no renew reached the node: the test proves nothing")
	}
	if err := ld.Err(); !errors.Is(err, client.ErrLockLost) || !strings.Contains(err.Error(), "client's clock") {
		t.Errorf("Err() = %v, want ErrLockLost by the client's clock", err)
	}
}

// TestLeadership_ProclaimChangesTheValueNotTheLeadership: token and term
// stay; the value is the new one, here and for everyone.
func TestLeadership_ProclaimChangesTheValueNotTheLeadership(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "e")
	ld, err := c.Campaign(ctx, name, client.CampaignOptions{Candidate: "a", TTL: longTTL, Value: json.RawMessage(`{"addr":"10.0.0.5:80"}`)})
	if err != nil {
		t.Fatal(err)
	}
	resignAtEnd(t, ld)
	if v := string(ld.Value()); v != `{"addr":"10.0.0.5:80"}` {
		t.Fatalf("Value() = %s, want the campaign's", v)
	}
	token, term := ld.Token(), ld.Term()
	if err := ld.Proclaim(ctx, map[string]any{"addr": "10.0.0.6:80", "ready": true}); err != nil {
		t.Fatalf("proclaim: %v", err)
	}
	const want = `{"addr":"10.0.0.6:80","ready":true}`
	if v := string(ld.Value()); v != want || ld.Term() != term || ld.Token() != token || isClosed(ld.Done()) {
		t.Fatalf("after proclaim: value %s, term %d, token %d; want %s, %d, %d, and still leading", v, ld.Term(), ld.Token(), want, term, token)
	}
	li, err := c.Leader(ctx, name)
	if err != nil || string(li.Value) != want || li.Token != token || li.Term != term {
		t.Fatalf("Leader: %+v, %v; want value %s, token %d, term %d", li, err, want, token, term)
	}
	page, _, err := c.Elections(ctx, client.ListOptions{Prefix: name})
	if err != nil || len(page) != 1 || page[0].Name != name || string(page[0].Value) != want {
		t.Fatalf("Elections: %+v, %v; want the one election with the proclaimed value", page, err)
	}
	if _, err := c.Proclaim(ctx, name, token-1, nil); !errors.Is(err, client.ErrTokenMismatch) {
		t.Fatalf("proclaim with another token: %v, want ErrTokenMismatch", err)
	}
	if err := ld.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ld.Proclaim(ctx, "late"); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("proclaim after resigning: %v, want ErrNoLeader", err)
	}
}

// TestPutFencedWith_ElectionRequiresThatLeadership: a fenced write naming
// the election passes with the leader's token, and fails with a deposed
// leader's even before any newer write raised the register's token.
func TestPutFencedWith_ElectionRequiresThatLeadership(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name, res := lockName(t, "e"), lockName(t, "r")
	a, err := c.Campaign(ctx, name, client.CampaignOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	resignAtEnd(t, a)
	if _, err := c.PutFencedWith(ctx, res, a.Token(), 1, client.PutFencedOptions{Election: name}); err != nil {
		t.Fatalf("leader's write: %v", err)
	}
	if err := c.RevokeLeadership(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	_, err = c.PutFencedWith(ctx, res, a.Token(), 2, client.PutFencedOptions{Election: name})
	if !errors.Is(err, client.ErrNotHolder) {
		t.Fatalf("deposed leader's write: %v, want ErrNotHolder", err)
	}
	if _, err := c.PutFencedWith(ctx, res, a.Token(), 3, client.PutFencedOptions{Lock: name, Election: name}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("write naming a lock and an election: %v, want ErrInvalid", err)
	}
}

// nextChange is the next change, or the test's end.
func nextChange(t *testing.T, chc <-chan client.LeaderChange, errc <-chan error) client.LeaderChange {
	t.Helper()
	select {
	case ch, ok := <-chc:
		if !ok {
			t.Fatalf("observe ended: %v", <-errc)
		}
		return ch
	case <-time.After(10 * time.Second):
		t.Fatal("no change within 10 s")
		return client.LeaderChange{}
	}
}

// TestObserve_EveryChangeInOrderAcrossADisconnect: the observer sees the
// state, then each change once and in order, although its stream is cut
// and kept away while changes happen.
func TestObserve_EveryChangeInOrderAcrossADisconnect(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	of := newFront(t)
	oc := newClient(t, of.URL)
	name := lockName(t, "e")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chc, errc := oc.Observe(ctx, name)

	var last int64
	expect := func(candidate, value string) {
		t.Helper()
		ch := nextChange(t, chc, errc)
		got, gotValue := "", ""
		if ch.Leader != nil {
			got, gotValue = ch.Leader.Candidate, string(ch.Leader.Value)
		}
		if ch.Revision <= last || got != candidate || gotValue != value {
			t.Fatalf("change %+v (leader %q, value %s) after revision %d; want leader %q with %s, later", ch, got, gotValue, last, candidate, value)
		}
		last = ch.Revision
	}
	expect("", "") // the state: nobody leads
	a, err := c.Campaign(ctx, name, client.CampaignOptions{Candidate: "a", Value: "a1", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	resignAtEnd(t, a)
	expect("a", `"a1"`)
	if err := a.Proclaim(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	expect("a", `"a2"`)

	// The stream is cut, and refused while these changes happen.
	of.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/observe") {
			problem(w, http.StatusServiceUnavailable, "unavailable", 0)
			return true
		}
		return false
	})
	of.CloseClientConnections()
	bc := campaignAsync(ctx, c, name, "b")
	waitCandidates(t, ctx, c, name, 1)
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	b := leaderOf(t, bc)
	if err := b.Proclaim(ctx, "b2"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the observer to be refused", func() bool { return of.count(http.MethodGet, "/observe") >= 2 })
	of.setIntercept(nil)
	// The handover is one change, to b, with b's campaign value (null).
	expect("b", "null")
	expect("b", `"b2"`)
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	expect("", "")

	reqs := of.matching(http.MethodGet, "/observe")
	if id := reqs[len(reqs)-1].Header.Get("Last-Event-ID"); id == "" {
		t.Errorf("the reconnection sent no Last-Event-ID")
	}
	select {
	case ch := <-chc:
		t.Fatalf("an extra change %+v", ch)
	default:
	}
	cancel()
	for range chc {
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("ended with %v, want context.Canceled", err)
	}
}

// TestLeadership_AndALockOfTheSameNameAreWatchedApart: the lock "x" and
// the election "x" are two things; one Client keeping both watches them
// on one stream, and each end reaches its own hold only.
func TestLeadership_AndALockOfTheSameNameAreWatchedApart(t *testing.T) {
	t.Parallel()
	f, c, ctx := setup(t)
	name := lockName(t, "x")
	ld, err := c.Campaign(ctx, name, client.CampaignOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	resignAtEnd(t, ld)
	// The leadership's stream is open before the lock is taken, so that
	// the first stream is the election's alone (the client opens it in
	// the background).
	poll.Until(t, 5*time.Second, "the leadership's event stream open", func() bool {
		return len(f.matching(http.MethodGet, "/v1/events")) > 0
	})
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lk)
	sent := time.Now()
	if err := c.Revoke(ctx, name, "the lock only"); err != nil {
		t.Fatal(err)
	}
	if took := waitClosed(t, lk.Lost(), 5*time.Second, "the lock's Lost").Sub(sent); took > time.Second {
		t.Errorf("the lock lost %s after its revoke, want within 1 s", took)
	}
	if isClosed(ld.Lost()) {
		t.Fatalf("the leadership is lost by the lock's revoke: %v", ld.Err())
	}
	sent = time.Now()
	if err := c.RevokeLeadership(ctx, name, "the election now"); err != nil {
		t.Fatal(err)
	}
	if took := waitClosed(t, ld.Lost(), 5*time.Second, "the leadership's Lost").Sub(sent); took > time.Second {
		t.Errorf("the leadership lost %s after its revoke, want within 1 s", took)
	}
	reqs := f.matching(http.MethodGet, "/v1/events")
	if len(reqs) == 0 {
		t.Fatal("no event stream")
	}
	if q := reqs[0].URL.Query(); q.Get("kind") != "election" || q.Get("name") != name || q.Has("lock") {
		t.Errorf("the leadership's stream asked for %s, want kind=election&name=%s", reqs[0].URL.RawQuery, name)
	}
	// Widened for the lock, then narrowed again when the lock ended.
	if len(reqs) < 2 || reqs[1].URL.RawQuery != "" {
		t.Fatalf("%d streams; with two things held the stream must ask for every event", len(reqs))
	}
	if len(reqs) > 2 && reqs[2].URL.Query().Get("kind") != "election" {
		t.Errorf("with the lock gone the stream asked for %s, want the election's events", reqs[2].URL.RawQuery)
	}
}

// TestSession_NamesTheElectionsItLeadsAndEventsTheirWait: a session's
// elections come back with it, and a grant after waiting says since when
// in its event.
func TestSession_NamesTheElectionsItLeadsAndEventsTheirWait(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "se")
	s, err := c.CreateSession(ctx, "node", longTTL)
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Campaign(ctx, name, client.CampaignOptions{Candidate: "first", TTL: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	bc := campaignAsync(ctx, c, name, "second")
	waitCandidates(t, ctx, c, name, 1)
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	second := leaderOf(t, bc)
	resignAtEnd(t, second)
	ld, err := c.Campaign(ctx, name+"-s", client.CampaignOptions{Candidate: "node", Session: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	resignAtEnd(t, ld)
	got, err := c.GetSession(ctx, s.ID)
	if err != nil || len(got.Elections) != 1 || got.Elections[0] != name+"-s" {
		t.Fatalf("session %+v, %v; want it to lead %s", got, err, name+"-s")
	}
	evs, _, err := c.History(ctx, client.HistoryOptions{Kind: "election", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == "elected" && ev.Token == second.Token() {
			if ev.QueuedAt.IsZero() || ev.QueuedAt.After(ev.Time) {
				t.Fatalf("the waiting candidate's elected event: queued at %v, elected at %v", ev.QueuedAt, ev.Time)
			}
			return
		}
	}
	t.Fatalf("no elected event of token %d in %+v", second.Token(), evs)
}
