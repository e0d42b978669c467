package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-dev/baton/tests/chaos/check"
	"github.com/baton-dev/baton/tests/chaos/check/streamcheck"
)

// The stream-bound sessions' workload: clients beside the others that
// create sessions bound to a stream with a short grace, hold the stream
// open on a node, take locks in the session, and close the stream,
// reopening it on another node within the grace, after it, or never,
// under the same nemesis. A watch of the stream records gives the
// server's time of each detach, and streamcheck holds the trail's ends
// of the sessions' holds against them.

// streamPrefix is where the stream records are: lock.DefaultConfig's
// prefix and Keys.SessionStream.
const streamPrefix = "/baton/sessionstream/"

// streamKeepAlive and streamSlack are streamcheck's Config:
// lock.SessionKeepAliveEvery, and the end's own work after the grace
// (the end mark and the revoke, two etcd writes of a few ms each on one
// machine, tens under the workload's load, and the trail reading the
// revoke's revision).
const (
	streamKeepAlive = 500 * time.Millisecond
	streamSlack     = 250 * time.Millisecond
)

// streamGrace is one session's grace: 600ms to 1s, in whole
// milliseconds.
func streamGrace(rng *rand.Rand) time.Duration {
	return 600*time.Millisecond + time.Duration(rng.IntN(401))*time.Millisecond
}

// streamClient is one stream-bound session client: each turn it creates
// a session, opens its stream, takes one or two locks in it, and closes
// and reopens the stream a few times before leaving it closed.
func (r *run) streamClient(ctx context.Context, id int, rng *rand.Rand) {
	node := id % len(r.c.Nodes)
	rctx := context.WithoutCancel(ctx)
	for seq := 0; ctx.Err() == nil; seq++ {
		d := r.streamDriver(id, node)
		grace := streamGrace(rng)
		sess := d.CreateStreamSession(rctx, fmt.Sprintf("st%d-%d", id, seq), grace)
		if sess.Result != check.OK {
			pace(ctx, rng, 300*time.Millisecond)
			continue
		}
		r.streamTurn(ctx, id, seq, sess.Session, grace, rng)
		pace(ctx, rng, 50*time.Millisecond)
	}
}

func (r *run) streamDriver(id, node int) *Driver {
	return &Driver{Client: id, Node: node, Base: r.c.Nodes[node].URL(), TTL: ttl, H: r.h, HTTP: NewHTTPClient()}
}

// streamTurn holds the session's stream open and closes it, up to three
// times, and leaves it closed: the session then ends after its grace.
func (r *run) streamTurn(ctx context.Context, id, seq int, sid string, grace time.Duration, rng *rand.Rand) {
	node := rng.IntN(len(r.c.Nodes))
	for k := 0; k < 3; k++ {
		st, op := r.streamDriver(id, node).OpenStream(sid, fmt.Sprintf("st%d-%d-%d", id, seq, k))
		if st == nil {
			if op.Result == check.Rejected {
				return // the session is over
			}
			node = (node + 1) % len(r.c.Nodes)
			continue
		}
		if k == 0 {
			for j := range 1 + rng.IntN(2) {
				lock := fmt.Sprintf("st%d-%d-%d", id, seq, j)
				r.streamDriver(id, rng.IntN(len(r.c.Nodes))).AcquireInSession(context.WithoutCancel(ctx), lock, lock, sid)
			}
		}
		hold := 300*time.Millisecond + time.Duration(rng.Int64N(int64(1200*time.Millisecond)))
		select {
		case <-time.After(hold): // how long the client holds it is the workload's
		case <-st.Done():
		case <-ctx.Done():
		}
		cancelled := st.Close()
		if ctx.Err() != nil {
			return
		}
		node = (node + 1 + rng.IntN(len(r.c.Nodes)-1)) % len(r.c.Nodes)
		switch x := rng.IntN(10); {
		case !cancelled:
			// Lost: a client reopens it elsewhere at once.
		case x < 4:
			time.Sleep(time.Duration(rng.Int64N(int64(grace / 2)))) // within the grace
		case x < 7:
			time.Sleep(grace + 200*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond)))) // after it
		default:
			return // never
		}
	}
}

// streamWatch records every write of a stream record until ctx ends.
type streamWatch struct {
	mu   sync.Mutex
	recs []streamcheck.Record
	err  error
}

// watchStreams starts a watch of the stream records over every node's
// etcd; it resumes after the revision it last saw when the watch breaks.
func (r *run) watchStreams(ctx context.Context) *streamWatch {
	w := &streamWatch{}
	var eps []string
	for _, n := range r.c.Nodes {
		eps = append(eps, n.EtcdURL())
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		w.err = err
		return w
	}
	go func() {
		defer cli.Close()
		var next int64
		for ctx.Err() == nil {
			opts := []clientv3.OpOption{clientv3.WithPrefix()}
			if next > 0 {
				opts = append(opts, clientv3.WithRev(next))
			}
			for wr := range cli.Watch(clientv3.WithRequireLeader(ctx), streamPrefix, opts...) {
				if err := wr.Err(); err != nil {
					w.mu.Lock()
					w.err = err
					w.mu.Unlock()
				}
				for _, ev := range wr.Events {
					w.add(r.h.Now(), ev)
					next = ev.Kv.ModRevision + 1
				}
			}
		}
	}()
	return w
}

func (w *streamWatch) add(now int64, ev *clientv3.Event) {
	rec := streamcheck.Record{Session: strings.TrimPrefix(string(ev.Kv.Key), streamPrefix), Revision: ev.Kv.ModRevision, Seen: now}
	if ev.Type == clientv3.EventTypeDelete {
		rec.Deleted = true
	} else {
		var v struct {
			Open  bool      `json:"open"`
			Since time.Time `json:"since"`
			Ended bool      `json:"ended"`
		}
		json.Unmarshal(ev.Kv.Value, &v)
		rec.Open, rec.Since, rec.Ended = v.Open, v.Since, v.Ended
	}
	w.mu.Lock()
	w.recs = append(w.recs, rec)
	w.mu.Unlock()
}

func (w *streamWatch) records() ([]streamcheck.Record, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]streamcheck.Record(nil), w.recs...), w.err
}

// fault records that node (-1: every node) could not serve or end
// streams from now until the returned func is called.
func (r *run) fault(node int, what string) func() {
	from := r.h.Now()
	return func() {
		r.mu.Lock()
		r.downs = append(r.downs, streamcheck.Fault{Node: node, From: from, To: r.h.Now(), What: what})
		r.mu.Unlock()
	}
}

// checkStreams checks the stream-bound sessions against the trail, and
// says what it bounded.
func (r *run) checkStreams(ops []check.Op, events []check.AuditEvent) {
	if *flagStreamClients == 0 {
		return
	}
	recs, err := r.streams.records()
	if err != nil {
		r.logf("stream records watch: %v (closes it missed are timed by the client)", err)
	}
	r.mu.Lock()
	downs := append([]streamcheck.Fault(nil), r.downs...)
	r.mu.Unlock()
	if b, err := json.MarshalIndent(map[string]any{"records": recs, "faults": downs, "start": r.h.start}, "", " "); err == nil {
		os.WriteFile(filepath.Join(r.dir, "streams.json"), b, 0o644)
	}
	rep := streamcheck.CheckStreams(ops, events, recs, downs, streamcheck.Config{
		Start: r.h.start, KeepAlive: streamKeepAlive, Slack: streamSlack, MinTTL: 2 * time.Second, ElectionTimeout: electionTimeout,
	})
	r.logf("stream sessions: %d closes bounded strictly (worst end %s past the grace), %d by the lease (faults), %d reattached late, %d unseen (no holds); %d timed by the server's detach, %d by the client's cancel; %d stream records",
		rep.Strict, rep.WorstStrict.Round(time.Millisecond), rep.Faulted, rep.Reattached, rep.Unseen, rep.ServerTimed, rep.ClientTimed, len(recs))
	if rep.Strict == 0 {
		r.t.Errorf("stream sessions: no close was bounded strictly: the check checked nothing")
	}
	for _, p := range rep.Problems {
		r.t.Error("stream sessions:", p)
	}
}
