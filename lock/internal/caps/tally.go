package caps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/baton-dev/baton/internal/store"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// New is a Tally of the keys under prefix for a cap of limit, read over
// cli; nil, which has room for everything, when limit is 0 or less (no
// cap).
func New(cli *clientv3.Client, etcd *store.Etcd, prefix string, limit int) *Tally {
	if limit <= 0 {
		return nil
	}
	return &Tally{cli: cli, etcd: etcd, prefix: prefix, limit: limit}
}

// Tally estimates how many keys are under prefix, in constant time per
// check, so that a cap costs no count per request.
//
// The estimate is base (a count-only read made in the background every
// lock.Config.CountRefresh, or at once when a check would refuse and the count
// is older than recountAfter), plus pending (slots reserved by checks of
// this engine whose write has not finished), plus done (writes of this
// engine that created a key since that read began, or may have: a create
// whose outcome etcd left unknown counts). It never counts too few keys
// for this engine's own creates; keys others delete are seen at
// the next read, so a slot freed elsewhere, or by this engine, is offered
// again within CountRefresh. Keys other engines create are seen at the
// next read too: that is how far the cap can be overshot, at most what the
// other nodes create within one CountRefresh. With one node, never.
type Tally struct {
	cli    *clientv3.Client
	etcd   *store.Etcd
	prefix string
	limit  int

	mu      sync.Mutex
	known   bool
	base    int64
	pending int64
	done    int64
	at      time.Time // when the read that set base began

	// countMu makes concurrent recounts one read.
	countMu sync.Mutex
}

// recountAfter is how old a count may be before a check that would
// refuse counts again: near the cap a node reads at most this often.
const recountAfter = 100 * time.Millisecond

// estimate is the tally's current estimate; the caller holds mu.
func (t *Tally) estimate() int64 { return t.base + t.pending + t.done }

// Reserve takes a slot for each of n keys about to be created, or
// reports false when the cap is reached. A true reservation must be ended
// with Finish. The nil Tally (no cap) always has room.
func (t *Tally) Reserve(ctx context.Context, n int) (bool, error) {
	if t == nil {
		return true, nil
	}
	for recounted := false; ; recounted = true {
		t.mu.Lock()
		if t.known && t.estimate()+int64(n) <= int64(t.limit) {
			t.pending += int64(n)
			t.mu.Unlock()
			return true, nil
		}
		fresh := t.known && time.Since(t.at) < recountAfter
		t.mu.Unlock()
		if fresh || recounted {
			return false, nil
		}
		if err := t.Recount(ctx); err != nil {
			return false, err
		}
	}
}

// MayHaveCreated reports whether a create that failed with err may have
// happened anyway (etcd left its outcome unknown): a tally counts it, so
// that the cap errs on the side of refusing until the next count.
func MayHaveCreated(err error) bool { return errors.Is(err, store.ErrUnavailable) }

// Finish ends a reservation of n keys: created says whether the write
// made them.
func (t *Tally) Finish(n int, created bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.pending -= int64(n)
	if created {
		t.done += int64(n)
	}
	t.mu.Unlock()
}

// Recount reads how many keys are under t's prefix and makes that the
// base. Count-only: etcd returns no keys or values, though it walks its
// in-memory index over the prefix, which the cap itself bounds.
func (t *Tally) Recount(ctx context.Context) error {
	t.countMu.Lock()
	defer t.countMu.Unlock()
	t.mu.Lock()
	if t.known && time.Since(t.at) < recountAfter {
		t.mu.Unlock()
		return nil // a concurrent recount just ran
	}
	done0, at := t.done, time.Now()
	t.mu.Unlock()
	if t.etcd.MemberStopped() {
		return fmt.Errorf("count %s: %w: this node's etcd member has stopped", t.prefix, store.ErrUnavailable)
	}
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}
	if t.etcd.OwnMember() {
		// The member has applied every write it answered, ours included.
		opts = append(opts, clientv3.WithSerializable())
	}
	octx, cancel := t.etcd.Op(ctx)
	resp, err := t.cli.Get(octx, t.prefix, opts...)
	cancel()
	if err != nil {
		return t.etcd.Err(ctx, "count "+t.prefix, err)
	}
	t.mu.Lock()
	// Creates that finished before the read began are in its count;
	// those that finished during it may be counted twice until the next
	// read, which errs on the side of refusing.
	t.base, t.done, t.at, t.known = resp.Count, t.done-done0, at, true
	t.mu.Unlock()
	return nil
}

// Keep keeps tallies fresh, recounting each every refresh and, with
// pollAlarm (an engine over external etcd, whose member cannot be asked),
// listing etcd's alarms every alarmPoll into etcd's NOSPACE as last seen,
// until ctx ends. A failed read leaves the old figures and is tried again
// at the next tick.
func Keep(ctx context.Context, cli *clientv3.Client, etcd *store.Etcd, refresh time.Duration, tallies []*Tally, pollAlarm bool) {
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	var lastAlarm time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, t := range tallies {
			if t != nil {
				_ = t.Recount(ctx)
			}
		}
		if pollAlarm && time.Since(lastAlarm) >= alarmPoll {
			lastAlarm = time.Now()
			listAlarms(ctx, cli, etcd)
		}
	}
}

// alarmPoll is how often an engine over external etcd lists etcd's alarms.
// Listing is a raft round (etcd proposes alarm reads too), so it is not
// done per readiness probe.
const alarmPoll = 10 * time.Second

// listAlarms reads etcd's alarm list into the NOSPACE alarm as last seen
// (store.Etcd.NoSpace).
func listAlarms(ctx context.Context, cli *clientv3.Client, etcd *store.Etcd) {
	octx, cancel := etcd.Op(ctx)
	defer cancel()
	resp, err := cli.AlarmList(octx)
	if err != nil {
		return
	}
	etcd.SetNoSpace(hasNoSpace(resp))
}

func hasNoSpace(resp *clientv3.AlarmResponse) bool {
	for _, a := range resp.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}
