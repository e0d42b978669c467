package lock_test

import (
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/testetcd"
	"github.com/baton-dev/baton/lock"
)

// Under sustained load, a node whose events alone would fill its quota
// keeps granting locks: the history bound drops the oldest events, and
// the store never raises NOSPACE.
func TestHistory_ASmallQuotaAndATinyBoundKeepGrantingLocksUnderSustainedLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("sustained load for several seconds; runs without -short")
	}
	const quota = 32 << 20
	mc := testetcd.Config(t)
	mc.QuotaBackendBytes = quota
	mc.CompactionRetention = time.Second // a second of revisions, not an hour's
	m := testetcd.StartConfig(t, mc)
	cfg := lock.DefaultConfig()
	cfg.Embedded, cfg.BackendQuota = m, quota
	cfg.HistoryMaxEvents = 1000
	e := startEngine(t, m, cfg)

	const n = 30000 // 60,000 events: 36 MB of trail, unbounded
	if n*2*600 <= quota {
		t.Fatal("the load must write more events than the quota holds")
	}
	cycles(t, e, []string{"q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7"}, n, 8)
	be := m.Etcd().Server.Backend()
	t.Logf("backend: %d bytes, %d in use, of a %d quota", be.Size(), be.SizeInUse(), quota)
	if m.NoSpace() {
		t.Fatal("the NOSPACE alarm is raised")
	}
	last := mustAcquire(t, e, lock.AcquireRequest{Name: "after", Owner: "still", TTL: 30 * time.Second})
	evs := allPages(t, e, lock.HistoryOptions{Limit: 1000})
	if len(evs) > cfg.HistoryMaxEvents+30 || len(evs) < cfg.HistoryMaxEvents/2 {
		t.Errorf("%d events kept; want about %d", len(evs), cfg.HistoryMaxEvents)
	}
	if evs[0].Token != last.Token {
		t.Errorf("newest event %+v; want the last acquire, token %d", evs[0], last.Token)
	}
}
