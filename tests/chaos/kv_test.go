package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
	"github.com/baton-dev/baton/tests/chaos/check/kvcheck"
)

// The key workload: clients beside the others that read, put,
// compare-and-set and delete a few keys, put them fenced by a lock they
// hold, and bind them to sessions that they renew, delete or let expire,
// under the same nemesis; their ops KeyModel, CheckKeyOrder and
// CheckKeyAudit (tests/chaos/check/kvcheck) check.

// kvFence is the lock the key clients fence their puts with. No other
// client takes it, and its acquires and releases are lock ops like the
// lock clients', which LockModel and CheckAudit check too.
const kvFence = "kv-fence"

// kvEndKey is the key a settled run puts last: once the trail has its
// put, it has every key event before it.
const kvEndKey = "kv-end"

// kvKeys are the workload's keys, -chaos.kv-keys of them, each with a "/"
// that the driver sends escaped.
func kvKeys() []string {
	keys := make([]string, *flagKVKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("cfg/%d", i)
	}
	return keys
}

// kvClient is one key client bound to one node: each turn, on one of the
// keys, it reads, puts, compare-and-sets from what it read (or creates
// only), deletes (comparing, half the time), puts fenced by the fence
// lock, or binds the key to a session of its own.
func (r *run) kvClient(ctx context.Context, id int, rng *rand.Rand) {
	node := id % len(r.c.Nodes)
	d := &Driver{Client: id, Node: node, Base: r.c.Nodes[node].URL(), TTL: ttl, H: r.h, HTTP: NewHTTPClient()}
	// As for the lock clients: requests already sent run to their end.
	rctx := context.WithoutCancel(ctx)
	for seq := 0; ctx.Err() == nil; seq++ {
		key := r.keys[rng.IntN(len(r.keys))]
		// Values are unique, so a read names the put it shows.
		me := fmt.Sprintf("kv%d-%d", id, seq)
		var last check.Op
		switch x := rng.IntN(100); {
		case x < 25:
			last = d.GetKey(rctx, key)
		case x < 40:
			last = d.PutKey(rctx, key, kvValue(rng, me), KeyWrite{})
		case x < 60:
			last = casKey(rctx, d, rng, key, me)
		case x < 72:
			last = deleteKey(rctx, d, rng, key)
		case x < 86:
			last = fencedKey(ctx, d, rng, key, me)
		default:
			last = r.sessionKeys(ctx, d, rng, key, me)
		}
		if last.Result == check.Failed || last.Result == check.Unknown {
			pace(ctx, rng, 300*time.Millisecond) // its node is down or cut off
		} else {
			pace(ctx, rng, 30*time.Millisecond)
		}
	}
}

// kvValue is a value of its own for the put me: a JSON string, object or
// array, as a key holds any JSON.
func kvValue(rng *rand.Rand, me string) string {
	switch rng.IntN(3) {
	case 0:
		return fmt.Sprintf("%q", me)
	case 1:
		return fmt.Sprintf(`{"by": %q, "n": %d}`, me, rng.IntN(1000))
	}
	return fmt.Sprintf(`[%q, true, null]`, me)
}

// casKey reads key and compare-and-sets it from the revision it read (0,
// create only, when it found none); a fifth of the time it creates only,
// without reading.
func casKey(ctx context.Context, d *Driver, rng *rand.Rand, key, me string) check.Op {
	var rev int64
	if rng.IntN(5) > 0 {
		g := d.GetKey(ctx, key)
		switch g.Result {
		case check.OK:
			rev = g.OutRevision
		case check.Rejected:
		default:
			return g
		}
	}
	return d.PutKey(ctx, key, kvValue(rng, me), KeyWrite{IfRevision: &rev})
}

// deleteKey deletes key, half the time comparing it with the revision a
// read just found.
func deleteKey(ctx context.Context, d *Driver, rng *rand.Rand, key string) check.Op {
	if rng.IntN(2) == 0 {
		return d.DeleteKey(ctx, key, nil)
	}
	g := d.GetKey(ctx, key)
	if g.Result != check.OK {
		return g
	}
	rev := g.OutRevision
	return d.DeleteKey(ctx, key, &rev)
}

// fencedKey takes the fence lock (waiting for it half the time) and puts
// key fenced by it; a fifth of the time it stalls past the TTL first (a
// GC pause) and puts again, which must be refused once another client has
// taken the lock; then it releases the lock.
func fencedKey(ctx context.Context, d *Driver, rng *rand.Rand, key, me string) check.Op {
	rctx := context.WithoutCancel(ctx)
	var wait time.Duration
	if rng.IntN(2) == 0 {
		wait = 200*time.Millisecond + time.Duration(rng.Int64N(int64(1300*time.Millisecond)))
	}
	a := d.AcquireWaiting(rctx, kvFence, me, wait)
	if a.Result != check.OK {
		return a
	}
	w := KeyWrite{Lock: kvFence, Token: a.OutToken}
	last := d.PutKey(rctx, key, kvValue(rng, me), w)
	if rng.IntN(5) == 0 {
		stall(ctx, ttl+time.Second)
		last = d.PutKey(rctx, key, kvValue(rng, me+"-late"), w)
	}
	d.Release(rctx, kvFence, a.OutToken)
	return last
}

// sessionKeys makes a session and binds key to it (creating it only, a
// third of the time), and a third of the time a second key; then it
// deletes the session after renewing it a few times, lets it expire
// (stalling past its TTL, then reading the key, renewing the session and
// putting under it, which must fail once it has ended), or abandons it.
func (r *run) sessionKeys(ctx context.Context, d *Driver, rng *rand.Rand, key, me string) check.Op {
	rctx := context.WithoutCancel(ctx)
	s := d.CreateSession(rctx, me)
	if s.Result != check.OK {
		return s
	}
	w := KeyWrite{Session: s.Session}
	if rng.IntN(3) == 0 {
		w.IfRevision = new(int64)
	}
	last := d.PutKey(rctx, key, kvValue(rng, me), w)
	if rng.IntN(3) == 0 {
		d.PutKey(rctx, r.keys[rng.IntN(len(r.keys))], kvValue(rng, me+"-2"), KeyWrite{Session: s.Session})
	}
	switch x := rng.IntN(100); {
	case x < 50:
		for range rng.IntN(3) {
			pace(ctx, rng, time.Second) // the session's work: the workload's pace, well inside its TTL
			d.RenewSession(rctx, s.Session)
		}
		d.DeleteSession(rctx, s.Session)
		d.GetKey(rctx, key)
	case x < 75:
		// Not renewed: the session expires, and its keys with it.
		stall(ctx, ttl+time.Second)
		d.GetKey(rctx, key)
		d.RenewSession(rctx, s.Session)
		d.PutKey(rctx, key, kvValue(rng, me+"-late"), KeyWrite{Session: s.Session})
	default:
		// Abandoned: it expires while the client goes on.
	}
	return last
}

// keysSettled reports whether evs, a settled trail, holds every key event
// of the run. It waits, each time it is called, for no session to live
// (their ends delete keys); then it reads every key, so that the model
// checks where they ended, and puts kvEndKey: a trail with that put
// has every key event before it.
func (r *run) keysSettled(ctx context.Context, evs []check.AuditEvent) bool {
	if *flagKVClients == 0 {
		return true
	}
	var sessions struct {
		Sessions []any `json:"sessions"`
	}
	if err := r.c.GetJSON(ctx, r.c.Nodes[0].URL()+"/v1/sessions", &sessions); err != nil || len(sessions.Sessions) > 0 {
		return false
	}
	if r.kvEnd == 0 {
		d := &Driver{Client: nemesisClient(clientKVEnd), Base: r.c.Nodes[0].URL(), TTL: ttl, H: r.h, HTTP: NewHTTPClient()}
		for _, key := range r.keys {
			d.GetKey(ctx, key)
		}
		if end := d.PutKey(ctx, kvEndKey, `"end"`, KeyWrite{}); end.Result == check.OK {
			r.kvEnd = end.OutRevision
		}
		return false
	}
	return slices.ContainsFunc(evs, func(e check.AuditEvent) bool {
		return e.Kind == "key" && e.Name == kvEndKey && e.Revision == r.kvEnd
	})
}

// checkKeys runs the key checkers over the history and the settled audit
// trail.
func (r *run) checkKeys(ops []check.Op, events []check.AuditEvent) {
	t := r.t
	if *flagKVClients == 0 {
		return
	}
	counts := map[string]int{}
	for _, op := range ops {
		switch {
		case !op.OnKV():
		case op.Result == check.Unknown && op.Status >= 200 && op.Status < 300:
			t.Errorf("op %d (%s %s on n%d): a %d that is not a Key or a Session: %s", op.ID, op.Kind, op.Name(), op.Node+1, op.Status, op.Err)
		case op.Kind == check.KVPut && op.Result == check.OK:
			counts["puts"]++
			counts["compare-and-sets"] += btoi(op.IfRevision != nil)
			counts["fenced puts"] += btoi(op.Lock != "")
			counts["puts bound to a session"] += btoi(op.Session != "")
		case op.Kind == check.KVPut && op.Result == check.Rejected:
			counts["puts refused as "+op.Code]++
		case op.Kind == check.KVDelete:
			counts["deletes "+string(op.Result)]++
		case op.Kind == check.KVGet && op.Result != check.Failed:
			counts["reads"]++
		case op.Kind == check.SessionDelete && op.Result == check.OK:
			counts["sessions deleted"]++
		case op.Result == check.Unknown:
			counts[string(op.Kind)+" unknown"]++
		}
	}
	vanishes := kvcheck.ResolveKeys(events)
	for _, vs := range vanishes {
		counts["keys deleted by their session's end"] += len(vs)
	}
	r.logf("keys: %v", counts)
	if counts["compare-and-sets"] == 0 || counts["fenced puts"] == 0 || counts["keys deleted by their session's end"] == 0 || counts["deletes ok"] == 0 {
		t.Errorf("the key workload of %d clients had no compare-and-set, fenced put, delete or key deleted by its session's end (%v): it checked too little", *flagKVClients, counts)
	}
	for _, v := range kvcheck.CheckKeyOrder(ops) {
		t.Error("key order:", v)
	}
	for _, v := range kvcheck.CheckKeyAudit(ops, events) {
		t.Error("key audit:", v)
	}
	r.linearizable("keys' linearizability", "key", "keys.html", func(html string) (bool, error) {
		return kvcheck.CheckKeys(ops, vanishes, 5*time.Minute, html)
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
