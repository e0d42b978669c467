package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/testcluster"
	"github.com/baton-dev/baton/tests/testetcd"
)

var bin string

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, &bin)) }

// electionTimeout is etcd's default, which baton keeps.
const electionTimeout = time.Second

type answer struct {
	status int
	header http.Header
	body   map[string]any
	took   time.Duration
}

func (a answer) token() int64 { n, _ := a.body["token"].(float64); return int64(n) }

func call(t *testing.T, method, url string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := (&http.Client{Timeout: 40 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header, took: time.Since(start)}
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &a.body); err != nil {
			t.Fatalf("%s %s: %d %q is not a JSON object", method, url, resp.StatusCode, b)
		}
	}
	return a
}

func want(t *testing.T, what string, a answer, status int) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: %d %v, want %d", what, a.status, a.body, status)
	}
	return a
}

func TestCluster_EveryNodeServesTheSameLocksInFIFOOrder(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Bin: bin})
	n1, n2, n3 := c.Nodes[0].URL(), c.Nodes[1].URL(), c.Nodes[2].URL()

	held := want(t, "acquire on n1", call(t, "POST", n1+"/v1/locks/shared", map[string]any{"owner": "a", "ttl": "1m"}), 201)
	// Reads are linearizable on every node: a read right after the
	// acquire answered sees it, whichever member serves it.
	for _, u := range []string{n2, n3} {
		got := want(t, "get on "+u, call(t, "GET", u+"/v1/locks/shared", nil), 200)
		if got.token() != held.token() || got.body["owner"] != "a" {
			t.Fatalf("%s sees %v, want owner a token %d", u, got.body, held.token())
		}
	}

	// Two waiters on two other nodes are served in arrival order.
	type grant struct {
		owner string
		a     answer
	}
	grants := make(chan grant, 2)
	wait := func(u, owner string) {
		a := call(t, "POST", u+"/v1/locks/shared", map[string]any{"owner": owner, "ttl": "1m", "wait": "30s"})
		grants <- grant{owner, a}
	}
	waitQueued := func(n int) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			got := call(t, "GET", n1+"/v1/locks/shared", nil)
			if ws, _ := got.body["waiters"].([]any); len(ws) == n {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("never %d waiters: %v", n, got.body)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	go wait(n2, "b")
	waitQueued(1)
	go wait(n3, "c")
	waitQueued(2)

	want(t, "release on n3", call(t, "DELETE", fmt.Sprintf("%s/v1/locks/shared?token=%d", n3, held.token()), nil), 204)
	first := <-grants
	if first.owner != "b" || first.a.status != 201 || first.a.token() <= held.token() {
		t.Fatalf("first grant after release: %s %d %v; want b, 201, token above %d", first.owner, first.a.status, first.a.body, held.token())
	}
	want(t, "release b", call(t, "DELETE", fmt.Sprintf("%s/v1/locks/shared?token=%d", n1, first.a.token()), nil), 204)
	second := <-grants
	if second.owner != "c" || second.a.status != 201 || second.a.token() <= first.a.token() {
		t.Fatalf("second grant: %s %d %v", second.owner, second.a.status, second.a.body)
	}

	// The audit trail reads the same from every node.
	var views []string
	for _, u := range []string{n1, n2, n3} {
		h := want(t, "history", call(t, "GET", u+"/v1/history?lock=shared", nil), 200)
		var types []string
		for _, e := range h.body["events"].([]any) {
			types = append(types, e.(map[string]any)["type"].(string))
		}
		views = append(views, strings.Join(types, ","))
	}
	if views[0] != "acquired,released,acquired,released,acquired" || views[1] != views[0] || views[2] != views[0] {
		t.Fatalf("history per node, newest first: %q", views)
	}
}

func TestCluster_NodeWithoutQuorumAnswers503FastAndRecovers(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Bin: bin})
	u := c.Nodes[0].URL()
	before := want(t, "acquire", call(t, "POST", u+"/v1/locks/q", map[string]any{"owner": "a", "ttl": "1m"}), 201)

	c.Nodes[1].Kill()
	c.Nodes[2].Kill()
	// The survivor loses its leader within about an election timeout
	// (check-quorum on a leader, pre-vote on a follower); until then a
	// request may wait on a proposal, never longer than the 5 s bound.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		st, err := c.Status(ctx, 0)
		if err != nil {
			t.Fatalf("/v1/cluster on a node without quorum must answer: %v", err)
		}
		if st.Leader == "" {
			if len(st.Members) != 3 {
				t.Fatalf("members seen without quorum: %+v", st.Members)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the lone survivor still reports a leader")
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/readyz"},
		{"POST", "/v1/locks/q2"},
		{"GET", "/v1/locks/q"},
		{"GET", "/v1/history"},
	} {
		var body any
		if r.method == "POST" {
			body = map[string]any{"owner": "b"}
		}
		a := call(t, r.method, u+r.path, body)
		if a.status != 503 || a.header.Get("Retry-After") == "" || a.body["code"] != "unavailable" {
			t.Fatalf("%s %s without quorum: %d %v (Retry-After %q), want 503 unavailable with Retry-After",
				r.method, r.path, a.status, a.body, a.header.Get("Retry-After"))
		}
		// Well under a client's timeout (the Go client's is 10 s): it
		// fails at once instead of waiting for a proposal.
		if a.took > time.Second {
			t.Fatalf("%s %s took %s to answer 503", r.method, r.path, a.took)
		}
	}

	for _, n := range c.Nodes[1:] {
		if err := n.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		if err := n.WaitReady(ctx); err != nil {
			t.Fatalf("%s after restart: %v", n.Name, err)
		}
	}
	got := want(t, "get after recovery", call(t, "GET", c.Nodes[2].URL()+"/v1/locks/q", nil), 200)
	if got.token() != before.token() {
		t.Fatalf("lock after recovery: %v, want token %d", got.body, before.token())
	}
	after := want(t, "acquire after recovery", call(t, "POST", c.Nodes[1].URL()+"/v1/locks/q2", map[string]any{"owner": "b"}), 201)
	if after.token() <= before.token() {
		t.Fatalf("token after recovery %d, not above %d", after.token(), before.token())
	}
}

// TestCluster_DeadHoldersLockIsFreeWithinTTLPlusElectionAfterLeaderChange
// measures the bound docs/CLUSTER.md gives: etcd's new leader restarts
// every lease's clock (its full TTL plus an election timeout), so a lock
// whose holder is gone is free at most TTL + election timeout after the
// new leader took over.
func TestCluster_DeadHoldersLockIsFreeWithinTTLPlusElectionAfterLeaderChange(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Bin: bin})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	survivor := c.Nodes[(leader+1)%3]
	const ttl = 3 * time.Second
	// The holder dies at once: nobody renews its lease.
	want(t, "acquire", call(t, "POST", survivor.URL()+"/v1/locks/orphan", map[string]any{"owner": "dead", "ttl": ttl.String()}), 201)
	c.Nodes[leader].Kill()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	got := want(t, "waiting acquire", call(t, "POST", survivor.URL()+"/v1/locks/orphan", map[string]any{"owner": "next", "wait": "30s"}), 201)
	bound := ttl + electionTimeout + 2*time.Second
	if took := time.Since(healed); took > bound {
		t.Fatalf("the dead holder's lock was free %s after the new leader, over the bound %s", took, bound)
	} else {
		t.Logf("free %s after the new leader took over (TTL %s; bound %s)", took.Round(time.Millisecond), ttl, bound)
	}
	// The expiry is recorded by whichever node's recorder sees the lease
	// go first, after the fact: it may come after the next acquire.
	for {
		h := want(t, "history", call(t, "GET", survivor.URL()+"/v1/history?lock=orphan", nil), 200)
		var types []string
		for _, e := range h.body["events"].([]any) {
			types = append(types, e.(map[string]any)["type"].(string))
		}
		slices.Sort(types)
		if strings.Join(types, ",") == "acquired,acquired,expired" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("history: %v (token %d)", types, got.token())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestCluster_MemberAddJoinsAndMemberRemoveStopsTheNode(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Bin: bin})
	ep := c.Nodes[0].ClientURL
	peer := "http://" + testetcd.FreeAddr(t)
	// etcd refuses a member add until the member asked has been connected
	// to a quorum for a few seconds (its strict reconfiguration check).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []byte
	for {
		var err error
		out, err = exec.Command(bin, "member", "add", "n4", peer, "--etcd-endpoints", ep, "-o", "json").CombinedOutput()
		if err == nil {
			break
		}
		if !strings.Contains(string(out), "unhealthy cluster") || ctx.Err() != nil {
			t.Fatalf("member add: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond) // a retry's pace, not a wait for a condition
	}
	var added struct {
		Flags []string `json:"flags"`
	}
	if err := json.Unmarshal(out, &added); err != nil || len(added.Flags) == 0 {
		t.Fatalf("member add output %q: %v", out, err)
	}
	n4 := c.AddNode("n4", added.Flags)

	a := want(t, "acquire on n4", call(t, "POST", n4.URL()+"/v1/locks/grown", map[string]any{"owner": "x"}), 201)
	got := want(t, "get on n1", call(t, "GET", c.Nodes[0].URL()+"/v1/locks/grown", nil), 200)
	if got.token() != a.token() {
		t.Fatalf("n1 sees %v", got.body)
	}
	st, err := c.Status(context.Background(), 1)
	if err != nil || len(st.Members) != 4 {
		t.Fatalf("members after add: %+v %v", st, err)
	}

	out, err = exec.Command(bin, "member", "remove", "n4", "--etcd-endpoints", ep).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "removed member n4") {
		t.Fatalf("member remove: %v\n%s", err, out)
	}
	// A removed node stops by itself, cleanly: its member is gone.
	select {
	case <-n4.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("n4 still runs after its removal")
	}
	// The whole log: LogTail's last 4 KB can be all of etcd's shutdown
	// noise, with the removal message before it.
	b, err := os.ReadFile(n4.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if log := string(b); !strings.Contains(log, "removed from the cluster") || !strings.Contains(log, "exit: <nil>") {
		t.Fatalf("n4 did not stop cleanly:\n%s", n4.LogTail())
	}
	st, err = c.Status(context.Background(), 2)
	if err != nil || len(st.Members) != 3 {
		t.Fatalf("members after remove: %+v %v", st, err)
	}
	want(t, "acquire after remove", call(t, "POST", c.Nodes[2].URL()+"/v1/locks/grown2", map[string]any{"owner": "y"}), 201)
}

func TestCluster_NodeOnExternalEtcdServesTheSameLocks(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Bin: bin})
	var eps []string
	for _, n := range c.Nodes {
		eps = append(eps, n.ClientURL)
	}
	ext := c.AddNode("ext", []string{"--etcd-endpoints", strings.Join(eps, ",")})
	a := want(t, "acquire on the external-etcd node", call(t, "POST", ext.URL()+"/v1/locks/ext", map[string]any{"owner": "e"}), 201)
	got := want(t, "get on n2", call(t, "GET", c.Nodes[1].URL()+"/v1/locks/ext", nil), 200)
	if got.token() != a.token() {
		t.Fatalf("n2 sees %v, want token %d", got.body, a.token())
	}
	st := want(t, "cluster on ext", call(t, "GET", ext.URL()+"/v1/cluster", nil), 200)
	if ms, _ := st.body["members"].([]any); len(ms) != 3 {
		t.Fatalf("ext sees members %v", st.body)
	}
	want(t, "release on n3", call(t, "DELETE", fmt.Sprintf("%s/v1/locks/ext?token=%d", c.Nodes[2].URL(), a.token()), nil), 204)
}
