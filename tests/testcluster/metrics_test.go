package testcluster_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/testcluster"
)

// scrape reads one unlabelled series from a node's /metrics; ok is false
// when the node does not answer or has no such series.
func scrape(url, series string) (float64, bool) {
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Get(url + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

func TestMetrics_SurvivorsCountTheLeaderChangeWhenTheLeaderDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts baton processes")
	}
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var survivors []*testcluster.Node
	for i, n := range c.Nodes {
		if i != leader {
			survivors = append(survivors, n)
		}
		if v, ok := scrape(n.URL(), "baton_etcd_has_leader"); !ok || v != 1 {
			t.Fatalf("%s: baton_etcd_has_leader %v (present %v) in a healthy cluster, want 1", n.Name, v, ok)
		}
	}
	before := map[string]float64{}
	for _, n := range survivors {
		before[n.Name], _ = scrape(n.URL(), "baton_etcd_leader_changes_total")
	}
	c.Nodes[leader].Kill()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("no new leader: %v", err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for _, n := range survivors {
		for {
			changes, ok1 := scrape(n.URL(), "baton_etcd_leader_changes_total")
			has, ok2 := scrape(n.URL(), "baton_etcd_has_leader")
			if ok1 && ok2 && changes > before[n.Name] && has == 1 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: leader changes %v (was %v), has_leader %v: want one more change and a leader", n.Name, changes, before[n.Name], has)
			case <-tick.C:
			}
		}
	}
}
