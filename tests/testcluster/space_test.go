package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/testcluster"
)

// A full store is the cluster's, and so is its recovery: the node asked
// to recover defragments every member, the others through their client
// URLs, and then every node takes writes again.
func TestCluster_NoSpaceRecoverDefragmentsEveryMember(t *testing.T) {
	const quota = 16 << 20
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Args: []string{"--etcd-quota-bytes", fmt.Sprint(quota)}})
	n1, n2 := c.Nodes[0].URL(), c.Nodes[1].URL()
	acq := call(t, "POST", n1+"/v1/locks/job", map[string]any{"owner": "w1"})
	if acq.status != http.StatusCreated {
		t.Fatalf("acquire: %d %v", acq.status, acq.body)
	}
	token := acq.token()

	// Rewrite 32 KiB values until etcd refuses: history fills the quota.
	value := strings.Repeat("x", 32<<10-16)
	hc := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	var mu sync.Mutex
	n, full := 0, false
	for w := range 6 {
		wg.Go(func() {
			for {
				mu.Lock()
				i, done := n, full || n > 4*quota/len(value)
				n++
				mu.Unlock()
				if done {
					return
				}
				b, _ := json.Marshal(map[string]any{"token": token, "value": value})
				req, _ := http.NewRequest("PUT", c.Nodes[w%3].URL()+fmt.Sprintf("/v1/fenced/res-%d", i%20), bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					t.Errorf("fill: %v", err)
					return
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
				case http.StatusInsufficientStorage:
					mu.Lock()
					full = true
					mu.Unlock()
					return
				default:
					t.Errorf("fill: status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	if !full {
		t.Fatalf("no 507 after %d writes of %d bytes", n, len(value))
	}
	// Every node refuses writes and says it is not ready.
	for _, node := range c.Nodes {
		if r := call(t, "PUT", node.URL()+"/v1/fenced/res-0", map[string]any{"token": token, "value": 1}); r.status != http.StatusInsufficientStorage {
			t.Fatalf("%s: write answered %d %v, want 507", node.Name, r.status, r.body)
		}
		if r := call(t, "GET", node.URL()+"/readyz", nil); r.status != http.StatusServiceUnavailable || r.body["code"] != "nospace" {
			t.Fatalf("%s: readyz answered %d %v, want 503 nospace", node.Name, r.status, r.body)
		}
	}

	r := call(t, "POST", n2+"/v1/maintenance/recover", nil)
	if r.status != http.StatusOK {
		t.Fatalf("recover: %d %v", r.status, r.body)
	}
	if got := fmt.Sprint(r.body["defragmented"]); got != "[n1 n2 n3]" || fmt.Sprint(r.body["alarms"]) != "[]" {
		t.Fatalf("recover: %v, want n1 n2 n3 defragmented and no alarm left", r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, node := range c.Nodes {
		if err := node.WaitReady(ctx); err != nil {
			t.Fatalf("%s not ready after the recovery: %v", node.Name, err)
		}
		if r := call(t, "PUT", node.URL()+"/v1/fenced/res-0", map[string]any{"token": token, "value": "after"}); r.status != http.StatusOK {
			t.Fatalf("%s: write after the recovery answered %d %v", node.Name, r.status, r.body)
		}
	}
	if r := call(t, "POST", n1+"/v1/locks/other", map[string]any{"owner": "w2"}); r.status != http.StatusCreated {
		t.Fatalf("acquire after the recovery: %d %v", r.status, r.body)
	}
}
