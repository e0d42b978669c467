package trail

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock"
)

// TestDerive_HoldEventsFromRevisionsMatchTheTrail runs every way a hold
// begins and ends (a free lock, a handover, a release, a revoke, a lease
// that ends, a session that ends or is deleted) for every kind, then reads
// etcd's revisions of the keys the trail reads and derives the holds'
// events from them alone. Each must be the event the trail recorded, in
// the same revision, bar what only a request knows (the time of an end, a
// revoke's reason) and the revision of an expiry, which the recorder
// writes after etcd deleted the key.
func TestDerive_HoldEventsFromRevisionsMatchTheTrail(t *testing.T) {
	e := newTestEngine(t)
	h := holdLives{t: t, e: e}
	h.locksAndSessions()
	h.otherKinds()
	// The recorder writes expiries after etcd deleted their keys: wait
	// for the four (a lock's, a session's, a set's two members').
	var recorded []Event
	poll.Until(t, 30*time.Second, "the four expiries in the history", func() bool {
		recorded = allHistory(t, e)
		n := 0
		for _, ev := range recorded {
			if ev.Type == EventExpired || ev.Type == EventSessionExpired {
				n++
			}
		}
		return n == 4
	})
	if n := compareDerived(t, recorded, deriveAll(t, e)); n < 30 {
		t.Fatalf("only %d hold events: the workload did not run", n)
	}
}

// holdLives runs holds through every way they begin and end.
type holdLives struct {
	t *testing.T
	e *engine
}

func (h holdLives) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h holdLives) acquire(req lock.AcquireRequest) *lock.Lock {
	h.t.Helper()
	l, _, err := h.e.Acquire(context.Background(), req)
	h.must(err)
	return l
}

// endLease ends a lease as its expiry would: etcd deletes its keys in
// one revision.
func (h holdLives) endLease(hex string) {
	h.t.Helper()
	id, ok := store.ParseLeaseHex(hex)
	if !ok {
		h.t.Fatalf("lease %q", hex)
	}
	_, err := h.e.cli.Revoke(context.Background(), id)
	h.must(err)
}

// leaseOf is the lease of the hold of name.
func (h holdLives) leaseOf(name string) string {
	h.t.Helper()
	resp, err := h.e.cli.Get(context.Background(), h.e.keys.Lock(name))
	h.must(err)
	if len(resp.Kvs) == 0 {
		h.t.Fatalf("%s is not held", name)
	}
	hr, err := store.DecodeHolder(resp.Kvs[0])
	h.must(err)
	return hr.Lease
}

// locksAndSessions: locks released, handed over to a waiter, revoked and
// expired; locks in sessions released, ended with the session, and
// released by its deletion.
func (h holdLives) locksAndSessions() {
	e, ctx := h.e, context.Background()
	l := h.acquire(lock.AcquireRequest{Name: "plain", Owner: "a"})
	h.must(e.Release(ctx, "plain", l.Token))
	l = h.acquire(lock.AcquireRequest{Name: "plain", Owner: "b", Metadata: map[string]string{"k": "v"}})
	waited := make(chan *lock.Lock, 1)
	go func() {
		w, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "plain", Owner: "waiter", Wait: 30 * time.Second})
		if err != nil {
			h.t.Error(err)
		}
		waited <- w
	}()
	poll.Until(h.t, 30*time.Second, "the waiter queued", func() bool {
		resp, err := e.cli.Get(ctx, e.keys.Queue("plain"), clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count > 0
	})
	h.must(e.Release(ctx, "plain", l.Token))
	w := <-waited
	if w == nil {
		h.t.FailNow()
	}
	h.must(e.Release(ctx, "plain", w.Token))
	h.acquire(lock.AcquireRequest{Name: "revoked", Owner: "c", LockDelay: time.Millisecond})
	_, err := e.Revoke(ctx, "revoked", "operator")
	h.must(err)
	h.acquire(lock.AcquireRequest{Name: "expiring", Owner: "d"})
	h.endLease(h.leaseOf("expiring"))

	s, err := e.CreateSession(ctx, "s", 30*time.Second)
	h.must(err)
	l = h.acquire(lock.AcquireRequest{Name: "in-session", Owner: "s", Session: s.ID})
	h.must(e.Release(ctx, "in-session", l.Token))
	h.acquire(lock.AcquireRequest{Name: "in-session", Owner: "s", Session: s.ID})
	h.endLease(s.ID)
	s, err = e.CreateSession(ctx, "s2", 30*time.Second)
	h.must(err)
	h.acquire(lock.AcquireRequest{Name: "deleted-session", Owner: "s2", Session: s.ID})
	h.must(e.DeleteSession(ctx, s.ID))
}

// otherKinds: an election, a semaphore, a read/write lock, and lock sets
// released and expired.
func (h holdLives) otherKinds() {
	e, ctx := h.e, context.Background()
	ld, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: "chair", Candidate: "n1", Value: json.RawMessage(`{"a":1}`)})
	h.must(err)
	h.must(e.Resign(ctx, "chair", ld.Token))
	p, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "pool", Owner: "p1", Limit: 2})
	h.must(err)
	_, err = e.AcquirePermit(ctx, lock.PermitRequest{Name: "pool", Owner: "p2", Limit: 2})
	h.must(err)
	h.must(e.ReleasePermit(ctx, "pool", p.Token))
	r1, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "doc", Mode: lock.ModeRead, Owner: "r1"})
	h.must(err)
	h.must(e.ReleaseRW(ctx, "doc", r1.Token))
	wr, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "doc", Mode: lock.ModeWrite, Owner: "w1"})
	h.must(err)
	h.must(e.ReleaseRW(ctx, "doc", wr.Token))
	set, _, err := e.AcquireSet(ctx, lock.LockSetRequest{Names: []string{"acct-1", "acct-2"}, Owner: "t1"})
	h.must(err)
	h.must(e.ReleaseSet(ctx, set.Names, set.Token))
	h.acquire(lock.AcquireRequest{Name: "beside-the-set", Owner: "x"}) // on a lease of its own
	_, _, err = e.AcquireSet(ctx, lock.LockSetRequest{Names: []string{"acct-3", "acct-4"}, Owner: "t2"})
	h.must(err)
	h.endLease(h.leaseOf("acct-3"))
}

// compareDerived checks that derived holds exactly the hold events of
// recorded, the trail, and returns how many there are. An end's time and
// what a request said of it are not in revisions; an expiry is recorded
// after etcd deleted the key, and derived at the delete.
func compareDerived(t *testing.T, recorded []Event, derived []pendingRecord) int {
	t.Helper()
	type id struct {
		kind  EventKind
		name  string
		token int64
		end   bool
	}
	idOf := func(ev Event) id { return id{ev.Kind, ev.Name, ev.Token, !store.BeginsHold(ev.Type)} }
	want := map[id]Event{}
	for _, ev := range recorded {
		switch ev.Type {
		case EventFenceReset, EventDelayCleared, EventProclaimed, EventYieldRequested:
			continue
		}
		if _, dup := want[idOf(ev)]; dup {
			t.Fatalf("the trail holds %+v twice", ev)
		}
		want[idOf(ev)] = ev
	}
	seen := map[id]bool{}
	for _, d := range derived {
		got := d.ev
		k := idOf(got)
		if seen[k] {
			t.Errorf("derived twice: %+v", got)
		}
		seen[k] = true
		rec, ok := want[k]
		if !ok {
			t.Errorf("derived %+v, which the trail does not hold", got)
			continue
		}
		if !store.BeginsHold(rec.Type) {
			got.Time = rec.Time
		}
		switch {
		case rec.Type == EventRevoked:
			if got.Type != EventReleased {
				t.Errorf("a revoke derived as %s", got.Type)
			}
			got.Type, got.Detail, got.Credential = rec.Type, rec.Detail, rec.Credential
		case rec.Detail == "session deleted":
			got.Detail = rec.Detail
		case rec.Type == EventExpired || rec.Type == EventSessionExpired:
			if got.Revision > rec.Revision {
				t.Errorf("%s derived at revision %d, after the recorder's %d", rec.Type, got.Revision, rec.Revision)
			}
			got.Revision = rec.Revision
		}
		if !reflect.DeepEqual(got, rec) {
			t.Errorf("derived and recorded differ:\n derived  %+v\n recorded %+v", got, rec)
		}
	}
	for k, ev := range want {
		if !seen[k] {
			t.Errorf("the trail holds %+v, which was not derived", ev)
		}
	}
	return len(want)
}

// allHistory is the whole trail, oldest first.
func allHistory(t *testing.T, e *engine) []Event {
	t.Helper()
	var all []Event
	before := int64(0)
	for {
		evs, next, err := e.History(context.Background(), HistoryOptions{Before: before, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
		if next == 0 {
			break
		}
		before = next
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Revision < all[j].Revision })
	return all
}

// deriveAll derives the hold events of every revision etcd holds of
// revisionsRange, up to now, as the trail would read them.
func deriveAll(t *testing.T, e *engine) []pendingRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A key in the range marks where to stop.
	put, err := e.cli.Put(ctx, e.keys.Audit()+"~derive-test-end", "")
	if err != nil {
		t.Fatal(err)
	}
	key, rangeEnd := e.keys.Revisions()
	wc := e.cli.Watch(ctx, key, clientv3.WithRange(rangeEnd), clientv3.WithRev(1), clientv3.WithPrevKV())
	var out []pendingRecord
	var group []*clientv3.Event
	flush := func() {
		out = append(out, e.trail.deriveHolds(group, store.NowUTC(), true)...)
		group = group[:0]
	}
	for wr := range wc {
		if err := wr.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range wr.Events {
			if len(group) > 0 && group[0].Kv.ModRevision != ev.Kv.ModRevision {
				flush()
			}
			if ev.Kv.ModRevision >= put.Header.Revision {
				flush()
				return out
			}
			group = append(group, ev)
		}
	}
	t.Fatal(fmt.Errorf("the watch ended before revision %d", put.Header.Revision))
	return nil
}

// A derived end read after the next hold of its thing began takes that
// hold's time, never one before its own hold began; other things' events
// and recorded events keep theirs.
func TestDerive_EndTimesDoNotGoBackWithinAThing(t *testing.T) {
	e := &Trail{keys: store.Keys{Prefix: lock.DefaultConfig().Prefix}}
	at := func(ms int) time.Time { return time.Date(2026, 12, 5, 12, 0, 0, ms*int(time.Millisecond), time.UTC) }
	ev := func(rev int64, kind EventKind, name string, typ EventType, ms int) Event {
		return Event{Revision: rev, Kind: kind, Name: name, Type: typ, Time: at(ms)}
	}
	recs := []pendingRecord{
		{ev: ev(7, KindRWLock, "cat", EventReleased, 15), derived: true, begun: at(1)},   // read at 15, after r1 began
		{ev: ev(8, KindRWLock, "cat", EventAcquired, 13)},                                // r1, begun at 13
		{ev: ev(9, KindLock, "other", EventReleased, 20), derived: true, begun: at(2)},   // another thing
		{ev: ev(10, KindLock, "other", EventAcquired, 30)},                               // after it: nothing to do
		{ev: ev(11, KindRWLock, "cat", EventReleased, 40), derived: true, begun: at(35)}, // began after the next
		{ev: ev(12, KindRWLock, "cat", EventAcquired, 31)},                               // a request slower than its
		{ev: ev(13, KindRWLock, "cat", EventRevoked, 50), begun: at(31)},                 // recorded: keeps its time
		{ev: ev(14, KindRWLock, "cat", EventAcquired, 45)},
	}
	keepTimesInOrder(e.keys, recs)
	for i, want := range []int{13, 13, 20, 30, 35, 31, 50, 45} {
		if got := recs[i].ev.Time; !got.Equal(at(want)) {
			t.Errorf("event at revision %d: time %s, want %s", recs[i].ev.Revision, got.Format("05.000"), at(want).Format("05.000"))
		}
	}
}
