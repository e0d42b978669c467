package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// trailRetention is the nodes' --etcd-compaction-retention in
// TestChaos_TrailStopped: the shortest a member takes, so that the trail
// is stopped through many compactions in a short run.
const trailRetention = 30 * time.Second

// TestChaos_TrailStopped stops the audit trail writer of every node for
// three times etcd's compaction retention while the whole workload runs,
// moves etcd's leadership meanwhile, and then resumes them. Compaction
// must have been held back behind the trail's cursor for it, and the
// trail must then hold every acknowledged action exactly once, with no
// gap: the checks of TestChaos.
func TestChaos_TrailStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection takes minutes")
	}
	const seed = 1
	t.Logf("seed %d", seed)
	runChaos(t, seed, plan{
		args:    []string{"--etcd-compaction-retention", trailRetention.String()},
		nemesis: (*run).stopTrail,
	})
}

// stopTrail halts every node's trail writer for 3 × trailRetention, with
// leadership moved part way, checks that compaction is held back, and
// resumes the writers.
func (r *run) stopTrail(rng *rand.Rand) {
	r.quiet(rng, time.Second, 3*time.Second)
	r.mu.Lock()
	r.counts["stop-trail"]++
	r.mu.Unlock()
	r.haltTrails(true)
	halted := time.Now()
	r.logf("every trail writer halted for %s", 3*trailRetention)
	// The writer that resumes, and the compactor that holds back, are
	// then another node's than the ones that stopped.
	r.quiet(rng, trailRetention, 2*trailRetention)
	r.moveLeader(rng)
	r.waitWhole()
	time.Sleep(time.Until(halted.Add(3 * trailRetention))) // the fault's length
	l := r.leader()
	ratio, err := holdBackRatio(r.c.Nodes[l].URL())
	switch {
	case err != nil:
		r.t.Errorf("read the leader's hold-back ratio: %v", err)
	case ratio <= 0:
		r.t.Errorf("baton_trail_hold_back_ratio on %s is %g after the trail stopped for %s: compaction was not held back for it",
			r.c.Nodes[l].Name, ratio, 3*trailRetention)
	default:
		r.logf("compaction held back for the trail on %s: %g of its bound", r.c.Nodes[l].Name, ratio)
	}
	r.haltTrails(false)
	r.logf("every trail writer resumed")
}

// haltTrails halts or resumes the trail writer of every node.
func (r *run) haltTrails(halt bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range r.c.Nodes {
		if err := n.HaltTrail(ctx, halt); err != nil {
			r.t.Fatalf("failpoint: %v", err)
		}
	}
}

// holdBackRatio reads baton_trail_hold_back_ratio from the node at base.
func holdBackRatio(base string) (float64, error) {
	resp, err := NewHTTPClient().Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "baton_trail_hold_back_ratio "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no baton_trail_hold_back_ratio in %s/metrics", base)
}
