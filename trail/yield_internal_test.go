package trail

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestYieldRequested_IndexedOnceWhetherTheTrailRanOrNot: a request to
// yield made before the trail starts (found by the first start's scan of
// pending records) and one made while it runs (heard on its watch) are
// each in the history once, with the asker, the reason and the hold's
// token, and their pending records are gone once indexed.
func TestYieldRequested_IndexedOnceWhetherTheTrailRanOrNot(t *testing.T) {
	m := testetcd.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng, err := lock.New(ctx, m.Client(), lock.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	l, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: "asked", Owner: "holder", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(reason string) *lock.YieldRequested {
		y, err := eng.RequestYield(ctx, lock.YieldRequest{Kind: KindLock, Name: "asked", Owner: "asker", Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	before := ask("before the trail")
	tr, err := New(ctx, eng, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	during := ask("while it runs")

	var evs []Event
	poll.Until(t, 10*time.Second, "both requests in the history", func() bool {
		evs, _, err = tr.History(ctx, HistoryOptions{Kind: KindLock, Name: "asked", Types: []EventType{EventYieldRequested}})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs) >= 2
	})
	for i, y := range []*lock.YieldRequested{during, before} {
		ev := evs[i]
		if len(evs) != 2 || ev.Revision != y.Revision || ev.Token != l.Token || ev.Owner != "asker" || ev.Reason != y.Reason || !ev.Time.Equal(y.RequestedAt) || ev.Lock != "asked" {
			t.Fatalf("history %+v, want the request at %d with reason %q for token %d", evs, y.Revision, y.Reason, l.Token)
		}
	}
	poll.Until(t, 10*time.Second, "the pending records deleted once indexed", func() bool {
		resp, err := m.Client().Get(ctx, "/baton/audit/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			if strings.HasSuffix(string(kv.Key), "/y") {
				return false
			}
		}
		return true
	})
}
