package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/node"
	"github.com/baton-dev/baton/tests/testetcd"
)

func testConfig(t *testing.T) node.Config {
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Name = "n1"
	cfg.HTTPAddr = testetcd.FreeAddr(t)
	cfg.PeerURL = "http://" + testetcd.FreeAddr(t)
	cfg.ClientURL = "http://" + testetcd.FreeAddr(t)
	cfg.LogLevel = "warn"
	cfg.ShutdownTimeout = 10 * time.Second
	return cfg
}

func start(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// call sends a JSON request and decodes the JSON answer into out.
func call(t *testing.T, method, url string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil && err != io.EOF {
			t.Fatalf("%s %s: decode: %v", method, url, err)
		}
	}
	return resp.StatusCode
}

type lockJSON struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Token int64  `json:"token"`
}

func TestNode_RestartKeepsLocksTokensHistoryAndFencedValues(t *testing.T) {
	cfg := testConfig(t)
	n := start(t, cfg)
	base := "http://" + n.Addr()

	var held, gone lockJSON
	if st := call(t, "POST", base+"/v1/locks/held", map[string]string{"owner": "w1", "ttl": "5m"}, &held); st != 201 {
		t.Fatalf("acquire held: %d", st)
	}
	if st := call(t, "POST", base+"/v1/locks/gone", map[string]string{"owner": "w2"}, &gone); st != 201 {
		t.Fatalf("acquire gone: %d", st)
	}
	if st := call(t, "DELETE", fmt.Sprintf("%s/v1/locks/gone?token=%d", base, gone.Token), nil, nil); st != 204 {
		t.Fatalf("release gone: %d", st)
	}
	if st := call(t, "PUT", base+"/v1/fenced/ledger", map[string]any{"token": held.Token, "value": 42, "lock": "held"}, nil); st != 200 {
		t.Fatalf("fenced write: %d", st)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	n = start(t, cfg)
	base = "http://" + n.Addr()
	var after lockJSON
	if st := call(t, "GET", base+"/v1/locks/held", nil, &after); st != 200 || after.Token != held.Token || after.Owner != "w1" {
		t.Fatalf("lock with a live lease after restart: status %d, %+v, want token %d", st, after, held.Token)
	}
	var again lockJSON
	if st := call(t, "POST", base+"/v1/locks/gone", map[string]string{"owner": "w3"}, &again); st != 201 {
		t.Fatalf("reacquire after restart: %d", st)
	}
	if again.Token <= held.Token || again.Token <= gone.Token {
		t.Fatalf("token after restart %d is not above earlier tokens %d, %d", again.Token, held.Token, gone.Token)
	}
	var fenced struct {
		Token int64           `json:"token"`
		Value json.RawMessage `json:"value"`
	}
	if st := call(t, "GET", base+"/v1/fenced/ledger", nil, &fenced); st != 200 || fenced.Token != held.Token || string(fenced.Value) != "42" {
		t.Fatalf("fenced value after restart: %d %+v", st, fenced)
	}
	var hist struct {
		Events []struct {
			Type  string `json:"type"`
			Lock  string `json:"lock"`
			Token int64  `json:"token"`
		} `json:"events"`
	}
	if st := call(t, "GET", base+"/v1/history?lock=gone", nil, &hist); st != 200 {
		t.Fatalf("history: %d", st)
	}
	var types []string
	for _, e := range hist.Events {
		types = append(types, e.Type)
	}
	if fmt.Sprint(types) != "[acquired released acquired]" {
		t.Fatalf("history of gone after restart, newest first: %v", types)
	}
}

func TestNode_ShutdownEndsWaitingAcquiresQuickly(t *testing.T) {
	cfg := testConfig(t)
	n := start(t, cfg)
	base := "http://" + n.Addr()
	if st := call(t, "POST", base+"/v1/locks/busy", map[string]string{"owner": "holder"}, nil); st != 201 {
		t.Fatalf("acquire: %d", st)
	}
	type answer struct {
		status int
		code   string
	}
	got := make(chan answer, 1)
	go func() {
		var p struct {
			Code string `json:"code"`
		}
		st := call(t, "POST", base+"/v1/locks/busy", map[string]string{"owner": "waiter", "wait": "2m"}, &p)
		got <- answer{st, p.Code}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ws, err := n.Engine().Waiters(ctx, "busy")
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("waiter never queued")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// An open event stream must not hold the shutdown up either.
	streamReq, _ := http.NewRequest("GET", base+"/v1/events", nil)
	stream, err := http.DefaultClient.Do(streamReq)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("open event stream: %v", err)
	}
	defer stream.Body.Close()
	streamEnded := make(chan struct{})
	go func() { io.Copy(io.Discard, stream.Body); close(streamEnded) }()

	start := time.Now()
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d > cfg.ShutdownTimeout {
		t.Fatalf("shutdown took %s; a waiting acquire held it up", d)
	}
	select {
	case <-streamEnded:
	case <-time.After(5 * time.Second):
		t.Fatal("event stream still open after shutdown")
	}
	a := <-got
	if a.status != http.StatusServiceUnavailable || a.code != "shutting_down" {
		t.Fatalf("waiting acquire at shutdown: %d %q, want 503 shutting_down", a.status, a.code)
	}
}

// A start that fails half-way (here: the HTTP address is taken) returns
// the error and stops what it started, so the same data dir can be used
// again at once.
func TestNode_FailedStartReturnsTheErrorAndCleansUp(t *testing.T) {
	cfg := testConfig(t)
	taken, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := node.Start(ctx, cfg); err == nil || n != nil || !strings.Contains(err.Error(), "listen on") {
		t.Fatalf("start on a taken address: node %v, err %v; want no node and the listen error", n, err)
	}
	taken.Close()
	n := start(t, cfg)
	if st := call(t, "POST", "http://"+n.Addr()+"/v1/locks/after", map[string]string{"owner": "w"}, nil); st != 201 {
		t.Fatalf("acquire after a failed start on the same data dir: %d", st)
	}
}
