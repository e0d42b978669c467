package trail_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

// Under sustained load, a node whose events alone would fill its quota
// keeps granting locks: the history bound drops the oldest events, and
// the store never raises NOSPACE.
//
// The quota also holds etcd's revisions until they are compacted, which
// the bound does not reach: this load writes them as fast as the machine
// runs it (some 15 MB of backend a second on two cores), and etcd's
// periodic compaction keeps between one and two retention periods of
// them, so a retention in seconds is still too much for 32 MiB. The
// member keeps its hour's retention, and the test compacts instead, after
// each round of cycles, once the trail holds the round's events: besides
// the trail, the quota holds one round's revisions, whatever the speed.
func TestHistory_ASmallQuotaAndATinyBoundKeepGrantingLocksUnderSustainedLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("sustained load for several seconds; runs without -short")
	}
	const quota = 32 << 20
	mc := testetcd.Config(t)
	mc.QuotaBackendBytes = quota
	m := testetcd.StartConfig(t, mc)
	cfg := lock.DefaultConfig()
	cfg.Embedded, cfg.BackendQuota = m, quota
	tc := trail.DefaultConfig()
	tc.HistoryMaxEvents = 1000
	e := holdtest.StartWithTrail(t, m.Client(), cfg, tc)

	// Long lock names make each event about 1,300 bytes of etcd (each
	// is in four keys or values): the load is one the quota could not
	// hold unbounded, in fewer cycles.
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", strings.Repeat("n", 120), i)
	}
	const rounds, n = 14, 1000 // n cycles a round
	if rounds*n*2*1300 <= quota {
		t.Fatal("the load must write more events than the quota holds")
	}
	for range rounds {
		cycles(t, e, names, n, 8)
		compactIndexed(t, m, e)
	}
	be := m.Etcd().Server.Backend()
	t.Logf("backend: %d bytes, %d in use, of a %d quota", be.Size(), be.SizeInUse(), quota)
	if m.NoSpace() {
		t.Fatal("the NOSPACE alarm is raised")
	}
	last := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "after", Owner: "still", TTL: 30 * time.Second})
	evs := allPages(t, e, trail.HistoryOptions{Limit: 1000})
	if len(evs) > tc.HistoryMaxEvents+30 || len(evs) < tc.HistoryMaxEvents/2 {
		t.Errorf("%d events kept; want about %d", len(evs), tc.HistoryMaxEvents)
	}
	if evs[0].Token != last.Token {
		t.Errorf("newest event %+v; want the last acquire, token %d", evs[0], last.Token)
	}
}

// compactIndexed compacts etcd's revisions, physically, up to the newest
// event of the trail: History waits for the index to hold every event
// committed before it, so no pending record the index still needs is
// compacted away.
func compactIndexed(t *testing.T, m *embedetcd.Member, e *lock.Engine) {
	t.Helper()
	evs, _, err := holdtest.TrailOf(e).History(context.Background(), trail.HistoryOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		t.Fatal("the trail is empty after a round of cycles")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := m.Client().Compact(ctx, evs[0].Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compact to revision %d: %v", evs[0].Revision, err)
	}
}
