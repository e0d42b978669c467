package clientsuite_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
)

func TestLocks_PagesByNameWithinAPrefix(t *testing.T) {
	_, c, ctx := setup(t)
	prefix := lockName(t, "")
	var want []string
	for _, s := range []string{"c", "a", "e", "b", "d"} {
		lk, err := c.Acquire(ctx, prefix+s, client.AcquireOptions{Owner: "lister"})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		releaseAtEnd(t, lk)
		want = append(want, prefix+s)
	}
	slices.Sort(want)
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, next, err := c.Locks(ctx, client.ListOptions{Prefix: prefix, Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("locks: %v", err)
		}
		if len(page) > 2 {
			t.Fatalf("page of %d, want at most 2", len(page))
		}
		for _, l := range page {
			if l.Owner != "lister" || l.Token <= 0 || l.TTL != 30*time.Second {
				t.Errorf("listed %+v", l)
			}
			got = append(got, l.Name)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}

func TestHistory_FiltersAndPagesTheAuditTrail(t *testing.T) {
	_, c, ctx := setup(t)
	name := lockName(t, "l")
	before := time.Now().Add(-time.Second)
	var tokens []int64
	for range 3 {
		lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "historian"})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		tokens = append(tokens, lk.Token())
		if err := lk.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	all, next, err := c.History(ctx, client.HistoryOptions{Lock: name})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	if len(all) != 6 || next != 0 {
		t.Fatalf("%d events (next %d), want 6 on one page: %+v", len(all), next, all)
	}
	if all[0].Type != "released" || all[0].Token != tokens[2] || all[5].Type != "acquired" || all[5].Token != tokens[0] ||
		all[0].Owner != "historian" || all[0].Lock != name || all[0].Revision <= all[5].Revision || all[0].Time.IsZero() {
		t.Errorf("history not newest first: %+v", all)
	}

	acq, _, err := c.History(ctx, client.HistoryOptions{Lock: name, Types: []string{"acquired"}, Owner: "historian", From: before, To: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatalf("filtered history: %v", err)
	}
	if len(acq) != 3 {
		t.Errorf("%d acquired events, want 3: %+v", len(acq), acq)
	}
	page, next, err := c.History(ctx, client.HistoryOptions{Lock: name, Limit: 4})
	if err != nil || len(page) != 4 || next == 0 {
		t.Fatalf("first page: %d events, next %d, %v", len(page), next, err)
	}
	rest, next2, err := c.History(ctx, client.HistoryOptions{Lock: name, Limit: 4, Before: next})
	if err != nil || len(rest) != 2 || next2 != 0 || rest[0].Revision >= page[3].Revision {
		t.Fatalf("second page: %+v, next %d, %v", rest, next2, err)
	}
}

func TestFenced_WritesAndReadsWithTheToken(t *testing.T) {
	_, c, ctx := setup(t)
	name, res := lockName(t, "l"), lockName(t, "r")
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, lk)
	w, err := c.PutFenced(ctx, res, lk.Token(), json.RawMessage(`{"balance":100}`), name)
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	if w.Resource != res || w.Token != lk.Token() || string(w.Value) != `{"balance":100}` || w.Revision <= lk.Token() {
		t.Errorf("put answered %+v", w)
	}
	// Equal tokens are accepted: a holder may write many times.
	if _, err := c.PutFenced(ctx, res, lk.Token(), []int{1, 2}, name); err != nil {
		t.Fatalf("second put: %v", err)
	}
	got, err := c.GetFenced(ctx, res)
	if err != nil || string(got.Value) != `[1,2]` || got.Token != lk.Token() {
		t.Fatalf("get: %+v, %v", got, err)
	}
}

func TestSessions_CreateRenewGetDelete(t *testing.T) {
	_, c, ctx := setup(t)
	s, err := c.CreateSession(ctx, "worker-9", 0)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if s.ID == "" || s.Owner != "worker-9" || s.TTL != 30*time.Second || !s.ExpiresAt.After(s.CreatedAt) || s.Locks == nil {
		t.Errorf("created %+v", s)
	}
	r, err := c.RenewSession(ctx, s.ID)
	// etcd counts what is left of a lease in whole seconds, rounded down:
	// a renewed expiry may read up to a second before the first one.
	if err != nil || r.ID != s.ID || r.ExpiresAt.Before(s.ExpiresAt.Add(-time.Second)) {
		t.Errorf("renew: %+v, %v", r, err)
	}
	g, err := c.GetSession(ctx, s.ID)
	if err != nil || g.ID != s.ID || len(g.Locks) != 0 {
		t.Errorf("get: %+v, %v", g, err)
	}
	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := c.DeleteSession(ctx, s.ID); !errors.Is(err, client.ErrSessionNotFound) {
		t.Errorf("delete twice: %v, want ErrSessionNotFound", err)
	}
}

func TestCluster_DescribesTheMember(t *testing.T) {
	_, c, ctx := setup(t)
	ci, err := c.Cluster(ctx)
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	if len(ci.Members) != 1 || !ci.Members[0].IsLeader || ci.Members[0].Name == "" || len(ci.Members[0].ClientURLs) == 0 ||
		ci.Leader != ci.Members[0].ID || ci.RaftTerm == 0 || ci.Revision <= 0 {
		t.Errorf("cluster %+v", ci)
	}
}
