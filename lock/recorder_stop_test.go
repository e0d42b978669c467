package lock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
)

// slowKV answers every txn 5 ms late, as a slow disk would: the expiry
// recorder then takes a while over a burst of expiries.
type slowKV struct{ clientv3.KV }

func (k slowKV) Txn(ctx context.Context) clientv3.Txn { return slowTxn{k.KV.Txn(ctx)} }

type slowTxn struct{ clientv3.Txn }

func (t slowTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { return slowTxn{t.Txn.If(cs...)} }
func (t slowTxn) Then(ops ...clientv3.Op) clientv3.Txn { return slowTxn{t.Txn.Then(ops...)} }
func (t slowTxn) Else(ops ...clientv3.Op) clientv3.Txn { return slowTxn{t.Txn.Else(ops...)} }
func (t slowTxn) Commit() (*clientv3.TxnResponse, error) {
	time.Sleep(5 * time.Millisecond) // the fault: a slow disk, not a wait for anything
	return t.Txn.Commit()
}

// TestRecorder_ExpiriesInFlightAtStopAreRecordedOnceAfterRestart stops the
// only node while its recorder is part way through a burst of expiries,
// starts it again, and checks that every expiry is in the audit trail
// exactly once: the saved cursor never passes an expiry not yet written.
func TestRecorder_ExpiriesInFlightAtStopAreRecordedOnceAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	m := testetcd.Start(t)
	base := m.Client()
	slow := clientv3.NewCtxClient(context.Background())
	slow.KV, slow.Lease, slow.Watcher, slow.Cluster, slow.Maintenance = slowKV{base.KV}, base.Lease, base.Watcher, base.Cluster, base.Maintenance
	e := holdtest.StartWithTrail(t, slow, lock.DefaultConfig(), trail.DefaultConfig())
	ctx := holdtest.Ctx(t)
	const n = 150
	for i := range n {
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: fmt.Sprintf("lapse-%d", i), Owner: "w", TTL: 2 * time.Second})
	}
	recorded := func(eng *lock.Engine) int {
		evs, _, err := holdtest.TrailOf(eng).History(ctx, trail.HistoryOptions{Types: []lock.EventType{lock.EventExpired}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	poll.Until(t, 15*time.Second, "the recorder part way through the expiries", func() bool {
		return recorded(e) >= 10
	})
	holdtest.TrailOf(e).Close() // the node stops: its trail, then its engine
	e.Close()
	ends := 0
	for _, k := range holdtest.KeysUnder(t, base, holdtest.Prefix+"audit/") {
		if strings.HasSuffix(k, "/e") {
			ends++
		}
	}
	if ends == n {
		t.Skipf("every expiry was recorded before the stop: nothing in flight to check")
	}
	t.Logf("%d of %d expiries recorded at the stop", ends, n)
	e2 := holdtest.StartEngine(t, m, lock.DefaultConfig())
	poll.Until(t, 15*time.Second, "every expiry recorded after the restart", func() bool { return recorded(e2) >= n })
	for i := range n {
		name := fmt.Sprintf("lapse-%d", i)
		evs, _, err := holdtest.TrailOf(e2).History(ctx, trail.HistoryOptions{Lock: name, Types: []lock.EventType{lock.EventExpired}})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 {
			t.Fatalf("%s's expiry recorded %d times, want once", name, len(evs))
		}
	}
}
