package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// The semaphore workload: clients beside the lock and election clients
// that take, renew, read and give back permits under the same nemesis,
// and whose ops SemaphoreModel and CheckSemaphoreAudit check.

// permitWait bounds a waiting acquire's wait, as campaignWait does a
// campaign's.
const permitWait = 2 * time.Second

// semaphore is one semaphore of the workload.
type semaphore struct {
	name  string
	limit int
	// waits is whether its acquires may wait in line, and windowed
	// whether they ask for an at-least window. The first semaphore's do
	// neither: its queue stays empty and no window keeps a seat, so each
	// of its refusals says every permit was held, and the model checks
	// that.
	waits, windowed bool
}

// semaphores are the workload's semaphores, one per limit of
// -chaos.semaphore-limits.
func semaphores() ([]semaphore, error) {
	var out []semaphore
	for i, f := range strings.Split(*flagSemLimits, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > check.MaxModelLimit {
			return nil, fmt.Errorf("-chaos.semaphore-limits: %q is not a limit from 1 to %d", f, check.MaxModelLimit)
		}
		out = append(out, semaphore{name: fmt.Sprintf("sem-%d", i), limit: n, waits: i > 0 && *flagSemWaits, windowed: i > 0})
	}
	return out, nil
}

// semaphoreClient is one semaphore client bound to one node: it takes a
// permit (waiting in line half the time, where its semaphore allows it),
// and while it holds it renews and reads and lingers, so that the
// semaphore fills; then it gives the permit back, with the mistakes real
// holders make (releasing twice, stalling past the TTL and renewing and
// releasing after, abandoning the permit).
func (r *run) semaphoreClient(ctx context.Context, id int, rng *rand.Rand) {
	rctx := context.WithoutCancel(ctx)
	r.holdClient(ctx, id, rng, func(d *Driver, seq int) turn {
		sem := r.sems[rng.IntN(len(r.sems))]
		var wait time.Duration
		if sem.waits && rng.IntN(2) == 0 {
			wait = permitWait/4 + time.Duration(rng.Int64N(int64(permitWait*3/4)))
		}
		d.MinHold = 0
		if sem.windowed {
			d.MinHold = window(rng)
		}
		// Owners are unique, so the trail settles every Unknown acquire,
		// and windowcheck finds the window each grant asked for.
		a := d.AcquirePermit(rctx, sem.name, fmt.Sprintf("s%d-%d", id, seq), sem.limit, wait)
		return turn{a, func() { d.GetSemaphore(rctx, sem.name) }, func() { r.holdPermit(ctx, d, rng, sem.name, a.OutToken) }}
	})
}

// holdPermit is what a client granted the permit token does with it.
func (r *run) holdPermit(ctx context.Context, d *Driver, rng *rand.Rand, name string, token int64) {
	rctx := context.WithoutCancel(ctx)
	for range 1 + rng.IntN(3) {
		if rng.IntN(2) == 0 {
			d.RenewPermit(rctx, name, token)
		}
		if rng.IntN(3) == 0 {
			d.GetSemaphore(rctx, name)
		}
		pace(ctx, rng, 300*time.Millisecond) // the work the permit is for: the workload's pace
	}
	switch x := rng.IntN(100); {
	case x < 5:
		// A stall past the TTL: the permit may be gone (another holder
		// may have its seat by now), and whether the renew and release
		// after pass is for the lease, not the client's clock, to say.
		stall(ctx, ttl+time.Second)
		d.RenewPermit(rctx, name, token)
		d.GetSemaphore(rctx, name)
		d.ReleasePermit(rctx, name, token)
	case x < 10:
		// Abandoned: the lease expires and the recorder says so.
	default:
		d.ReleasePermit(rctx, name, token)
		if x < 30 {
			d.ReleasePermit(rctx, name, token) // the double release of a retry loop
		}
	}
}

// checkSemaphores runs the semaphore checkers over the history and the
// settled audit trail.
func (r *run) checkSemaphores(ops []check.Op, events []check.AuditEvent) {
	t := r.t
	if *flagSemClients == 0 {
		return
	}
	granted, full, strict := 0, 0, 0
	resolved := check.ResolvePermits(ops, events)
	for _, op := range resolved {
		switch {
		case !op.OnSemaphore():
		case op.Kind == check.SemAcquire && op.Result == check.OK:
			granted++
		case op.Kind == check.SemAcquire && op.Result == check.Rejected:
			full++
			if op.Strict() {
				strict++
			}
		case op.Result == check.Unknown && op.Status >= 200 && op.Status < 300:
			t.Errorf("op %d (%s %s on n%d): a %d that is not a Permit or a Semaphore: %s", op.ID, op.Kind, op.Semaphore, op.Node+1, op.Status, op.Err)
		}
	}
	r.logf("semaphores: %d permits granted to the semaphore clients, %d acquires refused as full (%d of them strictly checked)", granted, full, strict)
	if granted == 0 {
		t.Errorf("no acquire of %d semaphore clients succeeded: the semaphore workload checked nothing", *flagSemClients)
	}
	for _, v := range check.CheckSemaphoreAudit(ops, events) {
		t.Error("semaphore audit:", v)
	}
	r.linearizable("semaphores' linearizability", "semaphore", "semaphores.html", func(html string) (bool, error) { return check.CheckSemaphores(resolved, 5*time.Minute, html) })
}
