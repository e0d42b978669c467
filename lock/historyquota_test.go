package lock_test

import (
	"fmt"
	"strings"
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

	// Long lock names make each event about 1,300 bytes of etcd (each
	// is in four keys or values): the load is one the quota could not
	// hold unbounded, in fewer cycles.
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", strings.Repeat("n", 120), i)
	}
	const n = 14000
	if n*2*1300 <= quota {
		t.Fatal("the load must write more events than the quota holds")
	}
	cycles(t, e, names, n, 8)
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
