package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-dev/baton/tests/testcluster"
)

// flipAnswer is one answer a client got.
type flipAnswer struct {
	what       string // method and URL
	acquire    bool
	status     int
	code       string
	retryAfter string
	err        error
	at         time.Time
	body       map[string]any
}

func flipCall(hc *http.Client, method, url string, body any) (flipAnswer, map[string]any) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	a := flipAnswer{what: method + " " + url, at: time.Now(), acquire: method == http.MethodPost && !strings.HasSuffix(url, "/renew")}
	resp, err := hc.Do(req)
	if err != nil {
		a.err = err
		return a, nil
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &m)
	a.status, a.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	a.code, _ = m["code"].(string)
	if resp.StatusCode >= 400 {
		a.body = m
	}
	return a, m
}

// etcd's leadership moves from member to member 20 times, each time the
// workload has made progress, while 16 clients spread over the three nodes
// queue for four locks: two they acquire, renew and release at once, two
// they hold for a while, renewing, so that their waiters keep their queued
// leases alive across transfers. Every answer is a success or a 503 with
// Retry-After, never another 5xx; every waiting acquire is granted or
// answered 503 (no queue stays blocked), and every client is served.
func TestCluster_LeaderTransfersAnswerNothingButSuccessOr503(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 3})
	const (
		clients   = 16
		locks     = 4
		transfers = 20
		// grantsPerTransfer is the progress the workload makes between
		// two transfers.
		grantsPerTransfer = locks
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var (
		grants  atomic.Int64
		stop    = make(chan struct{})
		mu      sync.Mutex
		answers []flipAnswer
		served  [clients]int
		wg      sync.WaitGroup
	)
	record := func(a flipAnswer) {
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Timeout: 30 * time.Second}
			base := c.Nodes[i%len(c.Nodes)].URL() + "/v1/locks/" + fmt.Sprintf("flip-%d", i%locks)
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				acq, body := flipCall(hc, http.MethodPost, base, map[string]any{
					"owner": fmt.Sprintf("c%d-%d", i, seq), "ttl": "3s", "wait": "20s"})
				record(acq)
				if acq.status/100 != 2 {
					// A 503: try again when it says, as a client would.
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					continue
				}
				grants.Add(1)
				mu.Lock()
				served[i]++
				mu.Unlock()
				tok := int64(body["token"].(float64))
				a, _ := flipCall(hc, http.MethodPost, base+"/renew", map[string]any{"token": tok})
				record(a)
				if i%locks >= locks/2 {
					// Half the locks are held for a while, renewed, so
					// that their waiters queue across several transfers
					// and keep their queued leases alive meanwhile
					// (every TTL/3). The hold's length is the workload's
					// pace, not a wait for anything.
					renew := time.NewTicker(300 * time.Millisecond)
					hold := time.NewTimer(1200 * time.Millisecond)
				held:
					for {
						select {
						case <-renew.C:
							a, _ := flipCall(hc, http.MethodPost, base+"/renew", map[string]any{"token": tok})
							record(a)
						case <-hold.C:
							break held
						}
					}
					renew.Stop()
				}
				// A 503'd release may not have happened: send it again
				// (it is idempotent), as a client must, or the hold
				// would outlive the run: every new leader extends every
				// lease, so with leadership moving it never expires.
				for {
					a, _ = flipCall(hc, http.MethodDelete, fmt.Sprintf("%s?token=%d", base, tok), nil)
					record(a)
					if a.err != nil || a.status != http.StatusServiceUnavailable {
						break
					}
					time.Sleep(100 * time.Millisecond) // the client's retry pace
				}
			}
		}()
	}

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for n := range transfers {
		want := grants.Load() + grantsPerTransfer
		for grants.Load() < want {
			select {
			case <-ctx.Done():
				mu.Lock()
				last := answers[max(0, len(answers)-5):]
				mu.Unlock()
				t.Fatalf("transfer %d: %d grants, waiting for %d: %v; last answers %+v", n, grants.Load(), want, ctx.Err(), last)
			case <-tick.C:
			}
		}
		l, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		to := (l + 1) % len(c.Nodes)
		if err := c.MoveLeader(ctx, to); err != nil {
			t.Fatalf("transfer %d: %v", n, err)
		}
		t.Logf("transfer %d: leadership %s -> %s after %d grants", n, c.Nodes[l].Name, c.Nodes[to].Name, grants.Load())
	}
	close(stop)
	wg.Wait()

	counts := map[int]int{}
	for _, a := range answers {
		counts[a.status]++
		switch {
		case a.err != nil:
			t.Errorf("%s: %v", a.what, a.err)
		case a.status == http.StatusServiceUnavailable:
			if a.retryAfter == "" {
				t.Errorf("%s: 503 without Retry-After", a.what)
			}
		case a.status >= 500:
			t.Errorf("%s: %d %s", a.what, a.status, a.code)
		}
	}
	for _, a := range answers {
		if a.acquire && a.err == nil && a.status/100 != 2 && a.status != http.StatusServiceUnavailable {
			// A waiting acquire is granted, or told etcd is unavailable.
			t.Errorf("%s (sent %s): %d %s %v, want 2xx or 503", a.what, a.at.Format("15:04:05.000"), a.status, a.code, a.body)
		}
	}
	for i, n := range served {
		if n == 0 {
			t.Errorf("client %d was never served", i)
		}
	}
	t.Logf("%d transfers, %d grants; answers by status: %v", transfers, grants.Load(), counts)
	if t.Failed() {
		// What the locks and their queues hold now: a queue entry that
		// outlived its waiter blocks every waiter behind it.
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Nodes[0].ClientURL}, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		for _, p := range []string{"/baton/locks/", "/baton/queue/"} {
			resp, err := cli.Get(ctx, p, clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range resp.Kvs {
				t.Logf("%s (created at %d, lease %x): %s", kv.Key, kv.CreateRevision, kv.Lease, kv.Value)
			}
		}
	}
}
