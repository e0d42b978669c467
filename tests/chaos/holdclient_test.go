package chaos

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// turn is one ask of a hold client (elector, semaphore, rwlock): the
// acquire's op, the read a refused client makes now and then, and what a
// granted client does with its hold.
type turn struct {
	ask  check.Op
	peek func()
	hold func()
}

// holdClient is the loop the election, semaphore and read/write lock
// clients share, bound to node id % nodes: until ctx ends, next takes a
// turn (seq counts them, for unique owners); a refused client reads a
// third of the time and waits a little, longer when its node did not
// answer; a granted one holds, then paces.
func (r *run) holdClient(ctx context.Context, id int, rng *rand.Rand, next func(d *Driver, seq int) turn) {
	node := id % len(r.c.Nodes)
	d := &Driver{Client: id, Node: node, Base: r.c.Nodes[node].URL(), TTL: ttl, H: r.h, HTTP: NewHTTPClient()}
	for seq := 0; ctx.Err() == nil; seq++ {
		t := next(d, seq)
		if t.ask.Result != check.OK {
			if rng.IntN(3) == 0 {
				t.peek()
			}
			if t.ask.Result == check.Failed || t.ask.Result == check.Unknown {
				pace(ctx, rng, 300*time.Millisecond)
			} else {
				pace(ctx, rng, 50*time.Millisecond)
			}
			continue
		}
		t.hold()
		pace(ctx, rng, 20*time.Millisecond)
	}
}

// pace waits a random time up to max, or until ctx ends: the workload's
// pace, not a synchronisation.
func pace(ctx context.Context, rng *rand.Rand, max time.Duration) {
	stall(ctx, time.Duration(rng.Int64N(int64(max))))
}

// stall waits d, or until ctx ends.
func stall(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// linearizable runs check (one of CheckLinearizable, CheckElections, …)
// with porcupine's visualisation going to file in the run's folder, and
// reports a failure under what, as model's.
func (r *run) linearizable(what, model, file string, check func(html string) (bool, error)) {
	html := filepath.Join(r.dir, file)
	ok, err := check(html)
	switch {
	case err != nil:
		r.t.Errorf("%s: %v", what, err)
	case !ok:
		r.t.Errorf("the history is not linearizable for the %s model; porcupine's visualisation: %s", model, html)
	}
}
