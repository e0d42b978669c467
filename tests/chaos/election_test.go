package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// The election workload: clients beside the lock clients that campaign,
// lead and step down under the same nemesis, and whose ops ElectionModel
// and CheckElectionAudit check.

// campaignWait bounds a waiting campaign's wait: with baton's 5 s bound on
// an etcd call it stays under the driver's 8 s timeout, so a campaign that
// a reachable node serves is answered, not given up on.
const campaignWait = 2 * time.Second

// elector is one election client bound to one node: it campaigns (half the
// time waiting in line), and while it leads renews, proclaims, writes to
// the fenced resource under its leadership and reads; then it resigns,
// with the mistakes real leaders make (resigning twice, stalling past the
// TTL and acting as leader after, abandoning the leadership).
func (r *run) elector(ctx context.Context, id int, rng *rand.Rand) {
	// As for the lock clients: requests already sent run to their end.
	rctx := context.WithoutCancel(ctx)
	r.holdClient(ctx, id, rng, func(d *Driver, seq int) turn {
		name := r.elections[rng.IntN(len(r.elections))]
		var wait time.Duration
		if rng.IntN(2) == 0 && *flagWaits {
			wait = campaignWait/4 + time.Duration(rng.Int64N(int64(campaignWait*3/4)))
		}
		// The candidate and its value are unique, so the audit check can
		// match every campaign and proclaim to its event.
		me := fmt.Sprintf("e%d-%d", id, seq)
		c := d.Campaign(rctx, name, me, me, wait)
		return turn{c, func() { d.Leader(rctx, name) }, func() { r.lead(ctx, d, rng, name, c.OutToken, me) }}
	})
}

// lead is what an elected client does with its leadership of token.
func (r *run) lead(ctx context.Context, d *Driver, rng *rand.Rand, name string, token int64, me string) {
	rctx := context.WithoutCancel(ctx)
	for i := range 1 + rng.IntN(3) {
		if rng.IntN(2) == 0 {
			d.RenewLeader(rctx, name, token)
		}
		d.Proclaim(rctx, name, token, fmt.Sprintf("%s-p%d", me, i))
		d.LedFPut(rctx, name, token, fmt.Sprintf("%s-w%d", me, i))
		if rng.IntN(3) == 0 {
			d.Leader(rctx, name)
		}
		if rng.IntN(3) == 0 {
			d.LedFGet(rctx, name)
		}
	}
	switch x := rng.IntN(100); {
	case x < 5:
		// A stall past the TTL: the leadership is gone (a waiting
		// candidate may lead by now), and what the deposed leader does
		// next must be refused.
		stall(ctx, ttl+time.Second)
		d.Proclaim(rctx, name, token, me+"-late")
		d.LedFPut(rctx, name, token, me+"-wlate")
		d.RenewLeader(rctx, name, token)
		d.Resign(rctx, name, token)
	case x < 10:
		// Abandoned: the lease expires and the recorder says so.
	default:
		d.Resign(rctx, name, token)
		if x < 30 {
			d.Resign(rctx, name, token) // the double resign of a retry loop
		}
	}
}

// checkElections runs the election checkers over the history and the
// settled audit trail.
func (r *run) checkElections(ops []check.Op, events []check.AuditEvent) {
	t := r.t
	if *flagElectors == 0 {
		return
	}
	led := 0
	for _, op := range ops {
		if op.Kind == check.Campaign && op.Result == check.OK {
			led++
		}
	}
	r.logf("elections: %d leaderships granted to the election clients", led)
	if led == 0 {
		t.Errorf("no campaign of %d election clients succeeded: the election workload checked nothing", *flagElectors)
	}
	for _, v := range check.CheckElectionAudit(ops, events) {
		t.Error("election audit:", v)
	}
	r.linearizable("elections' linearizability", "election", "elections.html", func(html string) (bool, error) {
		return check.CheckElections(check.ResolveCampaigns(ops, events), 5*time.Minute, html)
	})
}
