package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/baton-dev/baton/tests/chaos/check"
)

// Sizes of the burst fault: waiters that give up together behind one held
// lock, and event streams that disconnect together, on one node. Streams
// stay under a node's per-address cap (250).
const (
	burstWaiters = 300
	burstStreams = 200
)

// burstServed bounds how soon after the burst a release on the burst's
// node reaches the waiter it grants the lock to. A node that no longer
// hears etcd serves it only when its wait runs out (7 s).
const burstServed = 2 * time.Second

// burstHold is the TTL of the burst's holder: longer than the burst takes
// on a loaded machine (starting 500 requests may take seconds), so that no
// waiter can be granted the lock because its hold ran out; a waiter that
// is granted it is then a fault, not the harness's timing.
const burstHold = 30 * time.Second

// burst makes a few hundred clients of one node leave at once: waiters
// queued for a held lock whose one wait runs out together, and event
// streams dropped together. Then a release on that node must still wake
// the waiter it hands the lock to. The burst's own requests are not in the
// history: they change nothing.
func (r *run) burst(rng *rand.Rand) {
	i := rng.IntN(len(r.c.Nodes))
	n := r.c.Nodes[i]
	d := &Driver{Client: nemesisClient(clientBurst), Node: i, Base: n.URL(), TTL: burstHold, H: r.h, HTTP: NewHTTPClient()}
	name := fmt.Sprintf("burst-%d", r.h.Now())
	ctx := context.Background()
	held := d.Acquire(ctx, name, "burst-holder")
	d.TTL = ttl // the waiter after the burst holds as the other clients do
	if held.Result != check.OK {
		r.logf("burst on %s: could not take %s (%s %d %s); skipped", n.Name, name, held.Result, held.Status, held.Code)
		return
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: bearer(operatorToken, &http.Transport{MaxIdleConnsPerHost: burstWaiters})}
	defer hc.CloseIdleConnections()
	sctx, drop := context.WithCancel(ctx)
	defer drop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[int]int{}
	for range burstStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(sctx, http.MethodGet, n.URL()+"/v1/events", nil)
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
	body, _ := json.Marshal(map[string]any{"owner": "burst", "ttl": ttl.String(), "wait": "2s"})
	var waiters sync.WaitGroup
	for range burstWaiters {
		waiters.Add(1)
		go func() {
			defer waiters.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, n.URL()+"/v1/locks/"+url.PathEscape(name), bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			status := 0
			if err == nil {
				status = resp.StatusCode
				resp.Body.Close()
			}
			mu.Lock()
			outcomes[status]++
			mu.Unlock()
		}()
	}
	waiters.Wait()
	drop() // the streams go as the waiters did
	wg.Wait()
	r.logf("burst on %s: %d waiters gave up together (answers %v), %d streams dropped", n.Name, burstWaiters, outcomes, burstStreams)
	for status, count := range outcomes {
		if status >= 500 && status != http.StatusServiceUnavailable || status == http.StatusCreated {
			r.t.Errorf("burst on %s: %d waiters answered %d while the lock was held; want 409 (or 503)", n.Name, count, status)
		}
	}

	// A waiter on the same node, queued behind the burst's holder.
	got := make(chan check.Op, 1)
	go func() { got <- r.waitingAcquire(d, name, "after-burst") }()
	if !r.queued(n.URL(), name, "after-burst") {
		r.logf("burst on %s: the waiter did not queue (a fault in between?); skipped the wake-up check", n.Name)
		d.Release(ctx, name, held.OutToken)
		<-got
		return
	}
	rel := d.Release(ctx, name, held.OutToken)
	released := time.Now()
	op := <-got
	took := time.Since(released)
	r.logf("burst on %s: release %s, its waiter served %s later (%s)", n.Name, rel.Result, took.Round(time.Millisecond), op.Result)
	if rel.Result == check.OK && (op.Result != check.OK || took > burstServed) {
		r.t.Errorf("after a burst on %s, a release's waiter was served %s later with %s %d %s; want it served within %s",
			n.Name, took, op.Result, op.Status, op.Code, burstServed)
	}
	if op.Result == check.OK {
		d.Release(ctx, name, op.OutToken)
	}
}

// queued waits until owner is in lock's queue, as node base reports it.
func (r *run) queued(base, lock, owner string) bool {
	hc := NewHTTPClient()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := hc.Get(base + "/v1/locks/" + url.PathEscape(lock))
		if err == nil {
			var l struct {
				Waiters []struct {
					Owner string `json:"owner"`
				} `json:"waiters"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&l)
			resp.Body.Close()
			for _, w := range l.Waiters {
				if w.Owner == owner {
					return true
				}
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the queue: its pace
	}
	return false
}
