package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

type campaigned struct {
	l   *lock.Lock
	err error
}

func campaignAsync(ctx context.Context, e *lock.Engine, req lock.CampaignRequest) <-chan campaigned {
	ch := make(chan campaigned, 1)
	go func() {
		l, _, err := e.Campaign(ctx, req)
		ch <- campaigned{l, err}
	}()
	return ch
}

func mustCampaign(t *testing.T, e *lock.Engine, req lock.CampaignRequest) *lock.Lock {
	t.Helper()
	l, fresh, err := e.Campaign(context.Background(), req)
	if err != nil || !fresh {
		t.Fatalf("campaign %+v: fresh %v, %v", req, fresh, err)
	}
	return l
}

// candidates waits until n candidates wait in line for name.
func candidates(t *testing.T, e *lock.Engine, name string, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the candidates wait in line", func() bool {
		_, cs, err := e.Leader(context.Background(), name)
		return err == nil && len(cs) == n
	})
}

func electionHistory(t *testing.T, e *lock.Engine, name string) []lock.Event {
	t.Helper()
	evs, _, err := holdtest.TrailOf(e).History(context.Background(), trail.HistoryOptions{Kind: lock.KindElection, Name: name, Limit: lock.MaxListLimit})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	return evs
}

// TestElection_ResignHandsOverInLineWithTermsCounted: candidates queued
// through two nodes lead in the order they came, each from the
// resignation's own txn (its token is the resignation's revision), and
// each term is one more than the last.
func TestElection_ResignHandsOverInLineWithTermsCounted(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	first := mustCampaign(t, a, lock.CampaignRequest{Name: "billing", Candidate: "a", Value: json.RawMessage(`{"addr":"10.0.0.1"}`)})
	if first.Term != 1 || string(first.Value) != `{"addr":"10.0.0.1"}` || first.Name != "billing" || first.Owner != "a" {
		t.Fatalf("first leadership: %+v", first)
	}
	second := campaignAsync(ctx, b, lock.CampaignRequest{Name: "billing", Candidate: "b", Wait: 30 * time.Second})
	candidates(t, a, "billing", 1)
	third := campaignAsync(ctx, a, lock.CampaignRequest{Name: "billing", Candidate: "c", Wait: 30 * time.Second})
	candidates(t, a, "billing", 2)
	_, cs, _ := a.Leader(ctx, "billing")
	if cs[0].Owner != "b" || cs[1].Owner != "c" {
		t.Fatalf("candidates in line: %+v; want b, c", cs)
	}

	if err := a.Resign(ctx, "billing", first.Token); err != nil {
		t.Fatalf("resign: %v", err)
	}
	got := <-second
	if got.err != nil || got.l.Owner != "b" || got.l.Term != 2 {
		t.Fatalf("second leadership: %+v, %v", got.l, got.err)
	}
	if err := b.Resign(ctx, "billing", got.l.Token); err != nil {
		t.Fatalf("resign: %v", err)
	}
	last := <-third
	if last.err != nil || last.l.Owner != "c" || last.l.Term != 3 || last.l.Token <= got.l.Token {
		t.Fatalf("third leadership: %+v, %v", last.l, last.err)
	}
	evs := electionHistory(t, a, "billing") // newest first
	want := []lock.EventType{lock.EventElected, lock.EventResigned, lock.EventElected, lock.EventResigned, lock.EventElected}
	if len(evs) != len(want) {
		t.Fatalf("history: %+v", evs)
	}
	for i, ev := range evs {
		if ev.Type != want[i] || ev.Kind != lock.KindElection || ev.Name != "billing" || ev.Lock != "" {
			t.Fatalf("event %d: %+v; want %s of election billing", i, ev, want[i])
		}
	}
	if evs[0].Token != last.l.Token || evs[0].Revision != evs[1].Revision || evs[0].Term != 3 {
		t.Fatalf("c was not elected in b's resignation txn with term 3: %+v, %+v", evs[0], evs[1])
	}
	if evs[4].Term != 1 || string(evs[4].Value) != `{"addr":"10.0.0.1"}` {
		t.Fatalf("the first elected event: %+v", evs[4])
	}
}

// TestElection_SixteenCandidatesNeverShareALeadership: 16 goroutines on two
// nodes campaign, lead briefly and resign, over and over. Inside each
// leadership nobody else leads, and terms and tokens only grow.
func TestElection_SixteenCandidatesNeverShareALeadership(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	const candidates, rounds = 16, 4
	var (
		leading  atomic.Int32
		mu       sync.Mutex
		lastTerm int64
		lastTok  int64
		wg       sync.WaitGroup
	)
	errs := make(chan error, candidates*rounds)
	for i := range candidates {
		e := a
		if i%2 == 1 {
			e = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "singleton", Candidate: owner(i), Wait: 40 * time.Second})
				if err != nil {
					errs <- err
					return
				}
				if n := leading.Add(1); n != 1 {
					errs <- errors.New("two leaders at once")
				}
				mu.Lock()
				if l.Term != lastTerm+1 || l.Token <= lastTok {
					errs <- errors.New("term or token did not grow by one leadership")
				}
				lastTerm, lastTok = l.Term, l.Token
				mu.Unlock()
				leading.Add(-1)
				if err := e.Resign(ctx, "singleton", l.Token); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if lastTerm != candidates*rounds {
		t.Fatalf("last term %d; want %d", lastTerm, candidates*rounds)
	}
}

// TestElection_ProclaimChangesTheValueNotTheLeadership: a proclaim keeps
// token and term, is seen by readers and the trail, and a stale token's
// proclaim changes nothing.
func TestElection_ProclaimChangesTheValueNotTheLeadership(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := mustCampaign(t, e, lock.CampaignRequest{Name: "p", Candidate: "a", Value: json.RawMessage(`1`)})
	got, err := e.Proclaim(ctx, "p", l.Token, json.RawMessage(`{"v":2}`))
	if err != nil || got.Token != l.Token || got.Term != l.Term || string(got.Value) != `{"v":2}` {
		t.Fatalf("proclaim: %+v, %v", got, err)
	}
	now, _, err := e.Leader(ctx, "p")
	if err != nil || string(now.Value) != `{"v":2}` || now.Token != l.Token {
		t.Fatalf("leader after proclaim: %+v, %v", now, err)
	}
	if _, err := e.Proclaim(ctx, "p", l.Token-1, json.RawMessage(`3`)); !errors.Is(err, lock.ErrTokenMismatch) {
		t.Fatalf("proclaim with a stale token: %v; want ErrTokenMismatch", err)
	}
	if _, err := e.Proclaim(ctx, "nobody", l.Token, json.RawMessage(`3`)); !errors.Is(err, lock.ErrNoLeader) {
		t.Fatalf("proclaim in a vacant election: %v; want ErrNoLeader", err)
	}
	page, _, err := e.Elections(ctx, lock.ListOptions{})
	if err != nil || len(page) != 1 || string(page[0].Value) != `{"v":2}` {
		t.Fatalf("elections: %+v, %v", page, err)
	}
	if err := e.Resign(ctx, "p", l.Token); err != nil {
		t.Fatal(err)
	}
	next := mustCampaign(t, e, lock.CampaignRequest{Name: "p", Candidate: "b"})
	if next.Value != nil || next.Term != 2 {
		t.Fatalf("the next leadership kept the last one's value or term: %+v", next)
	}
	evs := electionHistory(t, e, "p")
	if len(evs) != 4 || evs[2].Type != lock.EventProclaimed || string(evs[2].Value) != `{"v":2}` || evs[2].Token != l.Token || evs[2].Term != 1 {
		t.Fatalf("history: %+v", evs)
	}
}

// TestElection_IsNotALock: an election and a lock of one name are two
// things, each listed, held and fenced apart.
func TestElection_IsNotALock(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "worker", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lk := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "x", Owner: "w", Session: s.ID})
	ld := mustCampaign(t, e, lock.CampaignRequest{Name: "x", Candidate: "c", Session: s.ID})
	locks, _, err := e.List(ctx, lock.ListOptions{})
	if err != nil || len(locks) != 1 || locks[0].Token != lk.Token {
		t.Fatalf("locks: %+v, %v", locks, err)
	}
	els, _, err := e.Elections(ctx, lock.ListOptions{})
	if err != nil || len(els) != 1 || els[0].Token != ld.Token || els[0].Name != "x" {
		t.Fatalf("elections: %+v, %v", els, err)
	}
	got, err := e.GetSession(ctx, s.ID)
	if err != nil || len(got.Locks) != 1 || len(got.Elections) != 1 {
		t.Fatalf("session: %+v, %v", got, err)
	}
	if _, err := e.PutFencedHeld(ctx, "ledger", lk.Token, json.RawMessage(`1`), lock.Holder{Kind: lock.KindElection, Name: "x"}); !errors.Is(err, lock.ErrNotHolder) {
		t.Fatalf("a fenced write requiring the election with the lock's token: %v; want ErrNotHolder", err)
	}
	if _, err := e.PutFencedHeld(ctx, "ledger", ld.Token, json.RawMessage(`1`), lock.Holder{Kind: lock.KindElection, Name: "x"}); err != nil {
		t.Fatalf("a fenced write requiring the election with its token: %v", err)
	}
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Leader(ctx, "x"); !errors.Is(err, lock.ErrNoLeader) {
		t.Fatalf("leader after the session's deletion: %v; want ErrNoLeader", err)
	}
	evs := electionHistory(t, e, "x")
	if len(evs) != 2 || evs[0].Type != lock.EventResigned {
		t.Fatalf("history: %+v", evs)
	}
}

// TestElection_AStaleLeadersFencedWriteIsRefused: once revoked, a leader
// that has not noticed cannot write with its token.
func TestElection_AStaleLeadersFencedWriteIsRefused(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	old := mustCampaign(t, e, lock.CampaignRequest{Name: "w", Candidate: "old"})
	if _, err := e.PutFencedHeld(ctx, "store", old.Token, json.RawMessage(`"old"`), lock.Holder{Kind: lock.KindElection, Name: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RevokeLeadership(ctx, "w", "stuck"); err != nil {
		t.Fatal(err)
	}
	next := mustCampaign(t, e, lock.CampaignRequest{Name: "w", Candidate: "new"})
	if _, err := e.PutFenced(ctx, "store", next.Token, json.RawMessage(`"new"`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PutFenced(ctx, "store", old.Token, json.RawMessage(`"late"`), ""); !errors.Is(err, lock.ErrStaleToken) {
		t.Fatalf("the deposed leader's write: %v; want ErrStaleToken", err)
	}
	if _, err := e.PutFencedHeld(ctx, "other", old.Token, json.RawMessage(`"late"`), lock.Holder{Kind: lock.KindElection, Name: "w"}); !errors.Is(err, lock.ErrNotHolder) {
		t.Fatalf("the deposed leader's write requiring the leadership: %v; want ErrNotHolder", err)
	}
}

// TestElection_ACandidateThatLeavesLeavesNothing: a waiting campaign whose
// caller goes away leaves no queue entry and no lease behind, and the
// election is refused with the leader named.
func TestElection_ACandidateThatLeavesLeavesNothing(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := mustCampaign(t, e, lock.CampaignRequest{Name: "gone", Candidate: "leader", Value: json.RawMessage(`"v"`)})
	// The node's waiter lease and its pool of own leases, as a waiting
	// campaign leaves them, are what a leaver must not add to.
	if _, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "gone", Candidate: "warmup", Wait: 50 * time.Millisecond}); !errors.Is(err, lock.ErrElectionHeld) {
		t.Fatalf("warm-up candidate: %v; want ErrElectionHeld", err)
	}
	electionHistory(t, e, "gone") // and the history index's bucket lease
	leases := leaseCount(t, m.Client())
	cctx, cancel := context.WithCancel(ctx)
	w := campaignAsync(cctx, e, lock.CampaignRequest{Name: "gone", Candidate: "leaver", Wait: time.Minute})
	candidates(t, e, "gone", 1)
	cancel()
	if got := <-w; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("campaign after its caller left: %v", got.err)
	}
	candidates(t, e, "gone", 0)
	if n := leaseCount(t, m.Client()); n != leases {
		t.Fatalf("leases: %d after the candidate left; %d before", n, leases)
	}
	_, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "gone", Candidate: "late"})
	var he *lock.HeldError
	if !errors.As(err, &he) || !errors.Is(err, lock.ErrElectionHeld) || errors.Is(err, lock.ErrHeld) || he.Holder == nil || he.Holder.Token != l.Token {
		t.Fatalf("campaign in a led election: %v; want ErrElectionHeld naming the leader", err)
	}
}

// observed collects an observation's changes until n came.
func observed(t *testing.T, o *trail.Observation, n int) []trail.ElectionChange {
	t.Helper()
	var got []trail.ElectionChange
	timeout := time.After(20 * time.Second)
	for len(got) < n {
		select {
		case c, ok := <-o.C:
			if !ok {
				t.Fatalf("observation ended after %d changes: %v", len(got), o.Err())
			}
			got = append(got, c)
		case <-timeout:
			t.Fatalf("%d changes observed, want %d: %+v", len(got), n, got)
		}
	}
	return got
}

// TestElection_ObserveSeesEachChangeOnceAndResumesWithoutAGap: an observer
// first sees who leads, then each change in order; a resignation that
// hands over is one change. Resumed from any change's revision, it sees
// exactly the changes after it.
func TestElection_ObserveSeesEachChangeOnceAndResumesWithoutAGap(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t)
	ctx := holdtest.Ctx(t)
	o, err := holdtest.TrailOf(a).Observe(ctx, "obs", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if c := observed(t, o, 1)[0]; c.Leader != nil || c.Revision == 0 {
		t.Fatalf("first change: %+v; want vacant at a revision", c)
	}
	first := mustCampaign(t, a, lock.CampaignRequest{Name: "obs", Candidate: "a", Value: json.RawMessage(`"a1"`)})
	next := campaignAsync(ctx, b, lock.CampaignRequest{Name: "obs", Candidate: "b", Wait: 30 * time.Second})
	candidates(t, a, "obs", 1)
	if _, err := a.Proclaim(ctx, "obs", first.Token, json.RawMessage(`"a2"`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Resign(ctx, "obs", first.Token); err != nil {
		t.Fatal(err)
	}
	got := <-next
	if got.err != nil {
		t.Fatal(got.err)
	}
	if _, err := b.RevokeLeadership(ctx, "obs", "done"); err != nil {
		t.Fatal(err)
	}
	changes := observed(t, o, 4)
	type want struct {
		owner, value string
		term         int64
	}
	wants := []want{{"a", `"a1"`, 1}, {"a", `"a2"`, 1}, {"b", "", 2}, {}}
	for i, c := range changes {
		w := wants[i]
		if w.owner == "" {
			if c.Leader != nil {
				t.Fatalf("change %d: %+v; want vacant", i, c.Leader)
			}
			continue
		}
		if c.Leader == nil || c.Leader.Owner != w.owner || string(c.Leader.Value) != w.value || c.Leader.Term != w.term {
			t.Fatalf("change %d: %+v; want %+v", i, c.Leader, w)
		}
		if i > 0 && c.Revision <= changes[i-1].Revision {
			t.Fatalf("change %d at revision %d, not after %d", i, c.Revision, changes[i-1].Revision)
		}
	}
	if changes[2].Leader.Token != got.l.Token || changes[2].Revision != got.l.Token {
		t.Fatalf("the handover: %+v; want b's leadership %d at its revision", changes[2], got.l.Token)
	}
	for from := range changes {
		r, err := holdtest.TrailOf(b).Observe(ctx, "obs", changes[from].Revision, true)
		if err != nil {
			t.Fatal(err)
		}
		rest := observed(t, r, len(changes)-from-1)
		for i, c := range rest {
			if c.Revision != changes[from+1+i].Revision || !sameChange(c, changes[from+1+i]) {
				t.Fatalf("resumed after %d, change %d: %+v; want %+v", changes[from].Revision, i, c, changes[from+1+i])
			}
		}
		select {
		case c := <-r.C:
			t.Fatalf("resumed after %d: an extra change %+v", changes[from].Revision, c)
		default:
		}
		r.Close()
	}
}

func sameChange(a, b trail.ElectionChange) bool {
	if a.Leader == nil || b.Leader == nil {
		return a.Leader == b.Leader
	}
	return a.Leader.Token == b.Leader.Token && string(a.Leader.Value) == string(b.Leader.Value) && a.Leader.Term == b.Leader.Term
}

// TestElection_ExpiryIsRecordedAsTheElections: a leadership whose lease
// ends is recorded as an expiry of the election, and its candidate in
// line leads next.
func TestElection_ExpiryIsRecordedAsTheElections(t *testing.T) {
	t.Parallel()
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	l := mustCampaign(t, e, lock.CampaignRequest{Name: "exp", Candidate: "a"})
	next := campaignAsync(ctx, e, lock.CampaignRequest{Name: "exp", Candidate: "b", Wait: 30 * time.Second})
	candidates(t, e, "exp", 1)
	if _, err := m.Client().Revoke(ctx, lockLease(t, m.Client(), "~election:exp")); err != nil {
		t.Fatal(err)
	}
	got := <-next
	if got.err != nil || got.l.Term != 2 {
		t.Fatalf("the candidate after the expiry: %+v, %v", got.l, got.err)
	}
	poll.Until(t, 10*time.Second, "the expiry is recorded", func() bool {
		for _, ev := range electionHistory(t, e, "exp") {
			if ev.Type == lock.EventExpired && ev.Token == l.Token && ev.Kind == lock.KindElection {
				return true
			}
		}
		return false
	})
}

// TestElection_TermsAndTokensGrowAcrossRestart: the term of a restarted
// cluster's election goes on from the last leader's, a leadership
// outlives the restart with its value, and its candidate in line leads
// next.
func TestElection_TermsAndTokensGrowAcrossRestart(t *testing.T) {
	t.Parallel()
	cfg := testetcd.Config(t)
	m := testetcd.StartConfig(t, cfg)
	e := holdtest.StartEngine(t, m, lock.DefaultConfig())
	ctx := holdtest.Ctx(t)
	first := mustCampaign(t, e, lock.CampaignRequest{Name: "r", Candidate: "a", TTL: time.Minute})
	if err := e.Resign(ctx, "r", first.Token); err != nil {
		t.Fatal(err)
	}
	second := mustCampaign(t, e, lock.CampaignRequest{Name: "r", Candidate: "b", TTL: time.Minute})
	if _, err := e.Proclaim(ctx, "r", second.Token, json.RawMessage(`"kept"`)); err != nil {
		t.Fatal(err)
	}
	e.Close()
	m.Close()
	m2 := testetcd.StartConfig(t, cfg)
	e2 := holdtest.StartEngine(t, m2, lock.DefaultConfig())

	now, _, err := e2.Leader(ctx, "r")
	if err != nil || now.Token != second.Token || now.Term != 2 || string(now.Value) != `"kept"` {
		t.Fatalf("leader after the restart: %+v, %v", now, err)
	}
	next := campaignAsync(ctx, e2, lock.CampaignRequest{Name: "r", Candidate: "c", Wait: 30 * time.Second})
	candidates(t, e2, "r", 1)
	if err := e2.Resign(ctx, "r", second.Token); err != nil {
		t.Fatal(err)
	}
	got := <-next
	if got.err != nil || got.l.Term != 3 || got.l.Token <= second.Token || got.l.Value != nil {
		t.Fatalf("third leadership: %+v, %v", got.l, got.err)
	}
}

// TestElection_ALockDelayKeepsTheElectionVacantAfterARevoke: a campaign
// may ask for lock-delay, as an acquire may; after its leader is revoked
// nobody leads until the delay has passed, and the candidate in line
// leads then, with the next term.
func TestElection_ALockDelayKeepsTheElectionVacantAfterARevoke(t *testing.T) {
	t.Parallel()
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	const delay = time.Second
	l := mustCampaign(t, e, lock.CampaignRequest{Name: "d", Candidate: "a", LockDelay: delay})
	next := campaignAsync(ctx, e, lock.CampaignRequest{Name: "d", Candidate: "b", Wait: 30 * time.Second})
	candidates(t, e, "d", 1)
	revoked := time.Now()
	if _, err := e.RevokeLeadership(ctx, "d", "wedged"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "d", Candidate: "c"}); !errors.Is(err, lock.ErrElectionHeld) {
		t.Fatalf("campaign under lock-delay: %v; want ErrElectionHeld", err)
	}
	got := <-next
	if got.err != nil || got.l.Owner != "b" || got.l.Term != l.Term+1 {
		t.Fatalf("the candidate after the delay: %+v, %v", got.l, got.err)
	}
	// The delay runs from the revoke's event time, kept to the
	// millisecond, so it may start up to a millisecond before revoked.
	if waited := time.Since(revoked); waited < delay-time.Millisecond {
		t.Fatalf("b led %s after the revoke, within the %s lock-delay", waited, delay)
	}
}
