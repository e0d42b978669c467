package clientsuite_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/lock"
)

// The fakes here stand in front of nothing: they answer as a node in
// trouble would, and count what reaches them.

// deadEndpoint returns the URL of a port that refuses connections.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// fake is a node that answers every request with h, counting them.
type fake struct {
	*httptest.Server
	n atomic.Int64
}

func newFake(t *testing.T, h func(n int64, w http.ResponseWriter, r *http.Request)) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(f.n.Add(1), w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func unavailable503(_ int64, w http.ResponseWriter, _ *http.Request) {
	problem(w, http.StatusServiceUnavailable, "unavailable", 1)
}

func TestFailover_IdempotentCallsSucceedOnTheSecondEndpointWhenTheFirstIsDead(t *testing.T) {
	f := newFront(t)
	ctx := ctxFor(t, time.Minute)
	name := lockName(t, "l")
	lk, err := newClient(t, f.URL).Acquire(ctx, name, client.AcquireOptions{Owner: "w1"})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	releaseAtEnd(t, lk)

	for _, tc := range []struct {
		what string
		call func(c *client.Client) error
	}{
		{"get", func(c *client.Client) error { _, err := c.Get(ctx, name); return err }},
		{"list", func(c *client.Client) error { _, _, err := c.Locks(ctx, client.ListOptions{Prefix: name}); return err }},
		{"renew", func(c *client.Client) error { _, err := c.Renew(ctx, name, lk.Token()); return err }},
		{"history", func(c *client.Client) error {
			_, _, err := c.History(ctx, client.HistoryOptions{Lock: name})
			return err
		}},
		{"cluster", func(c *client.Client) error { _, err := c.Cluster(ctx); return err }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			c := newClient(t, deadEndpoint(t), f.URL)
			if err := tc.call(c); err != nil {
				t.Fatalf("%s with the first endpoint dead: %v", tc.what, err)
			}
		})
	}
}

func TestFailover_AcquireMovesOnOnlyWhenTheConnectionIsRefused(t *testing.T) {
	f := newFront(t)
	ctx := ctxFor(t, time.Minute)
	// A refused connection carried no request: moving on is safe even for
	// an acquire.
	c := newClient(t, deadEndpoint(t), f.URL)
	name := lockName(t, "l")
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{Owner: "w1"})
	if err != nil {
		t.Fatalf("acquire with the first endpoint dead: %v", err)
	}
	releaseAtEnd(t, lk)
	if n := f.count(http.MethodPost, "/v1/locks/"+name); n != 1 {
		t.Errorf("%d acquire requests reached the live node, want 1", n)
	}
	// Every node refusing: ErrUnavailable, at once.
	c = newClient(t, deadEndpoint(t), deadEndpoint(t))
	if _, err := c.Acquire(ctx, lockName(t, "x"), client.AcquireOptions{}); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("acquire with every endpoint dead: %v, want ErrUnavailable", err)
	}
}

func TestRetry_CallsThatAreNotIdempotentAreNotRetriedAfterA503(t *testing.T) {
	f := newFront(t)
	ctx := ctxFor(t, time.Minute)
	for _, tc := range []struct {
		what, path string
		call       func(c *client.Client) error
	}{
		{"acquire", "/v1/locks/", func(c *client.Client) error {
			_, err := c.Acquire(ctx, lockName(t, "a"), client.AcquireOptions{})
			return err
		}},
		{"create session", "/v1/sessions", func(c *client.Client) error { _, err := c.CreateSession(ctx, "w", 0); return err }},
		{"revoke", "/revoke", func(c *client.Client) error { return c.Revoke(ctx, lockName(t, "r"), "x") }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			bad := newFake(t, unavailable503)
			c := newClient(t, bad.URL, f.URL)
			err := tc.call(c)
			if !errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("%v, want ErrUnavailable", err)
			}
			var e *client.Error
			if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.RetryAfter != time.Second {
				t.Errorf("%v: want the 503 with its Retry-After", err)
			}
			if !strings.Contains(err.Error(), "outcome is unknown") {
				t.Errorf("%v: does not say the outcome is unknown", err)
			}
			if n := bad.n.Load(); n != 1 {
				t.Errorf("the 503 node got %d requests, want 1", n)
			}
			if n := f.count(http.MethodPost, tc.path); n != 0 {
				t.Errorf("the call went on to the healthy node (%d requests)", n)
			}
		})
	}
}

func TestRetry_ACallThatIsNotIdempotentCutMidRequestIsNotRetried(t *testing.T) {
	f := newFront(t)
	ctx := ctxFor(t, time.Minute)
	// The node reads the request, then the connection dies: the acquire
	// may have been granted there.
	cut := newFake(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	c := newClient(t, cut.URL, f.URL)
	name := lockName(t, "l")
	_, err := c.Acquire(ctx, name, client.AcquireOptions{})
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "outcome is unknown") {
		t.Fatalf("%v, want ErrUnavailable with the outcome unknown", err)
	}
	if n := cut.n.Load(); n != 1 {
		t.Errorf("the cut node got %d requests, want 1", n)
	}
	if n := f.count(http.MethodPost, "/v1/locks/"+name); n != 0 {
		t.Errorf("the acquire was repeated on the healthy node")
	}
	// An idempotent call through the same client moves on.
	if _, err := c.Get(ctx, name); !errors.Is(err, client.ErrNotHeld) {
		t.Errorf("get: %v, want the healthy node's not_held", err)
	}
}

func TestRetry_IdempotentCallsMoveOnAfterA503(t *testing.T) {
	f := newFront(t)
	ctx := ctxFor(t, time.Minute)
	name := lockName(t, "l")
	lk, err := newClient(t, f.URL).Acquire(ctx, name, client.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lk)

	bad := newFake(t, unavailable503)
	c := newClient(t, bad.URL, f.URL)
	start := time.Now()
	if _, err := c.Renew(ctx, name, lk.Token()); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("moving on took %s: another node is tried at once, Retry-After is for the node that sent it", took)
	}
	if _, err := c.Get(ctx, name); err != nil {
		t.Fatalf("get: %v", err)
	}
	// The client now starts with the node that answered.
	if n := bad.n.Load(); n != 1 {
		t.Errorf("the 503 node got %d requests, want 1", n)
	}
}

func TestRetry_HonoursRetryAfterWhenNoOtherNodeIsLeft(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	node := newFake(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			problem(w, http.StatusServiceUnavailable, "unavailable", 1)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"x","owner":"w","token":7,"ttl":"30s","acquired_at":"2026-11-29T14:25:13.886Z","expires_at":"2026-11-29T14:25:43.881Z","metadata":{}}`)
	})
	c := newClient(t, node.URL)
	start := time.Now()
	l, err := c.Get(ctx, "x")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("retried after %s, want the 1s Retry-After honoured", took)
	}
	if l.Token != 7 || l.TTL != 30*time.Second || l.ExpiresAt.Sub(l.AcquiredAt) != 29995*time.Millisecond {
		t.Errorf("decoded %+v", l)
	}
	if n := node.n.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestRetry_IsBoundedByTheContext(t *testing.T) {
	node := newFake(t, func(_ int64, w http.ResponseWriter, _ *http.Request) {
		problem(w, http.StatusServiceUnavailable, "unavailable", 30)
	})
	c := newClient(t, node.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Get(ctx, "x")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("returned after %s: the context's 300ms must bound the retries", took)
	}
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v, want ErrUnavailable and the context's deadline", err)
	}
}

func TestRetry_GivesUpAfterMaxRetries(t *testing.T) {
	node := newFake(t, func(_ int64, w http.ResponseWriter, _ *http.Request) {
		problem(w, http.StatusBadGateway, "", 0)
	})
	c, err := client.NewWithConfig(client.Config{Endpoints: []string{node.URL}, RetryBackoff: time.Millisecond, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctxFor(t, time.Minute), "x"); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("%v, want ErrUnavailable", err)
	}
	if n := node.n.Load(); n != 3 {
		t.Errorf("%d requests, want 1 + 2 retries", n)
	}
}

func TestClient_DrainsBodiesSoConnectionsAreReused(t *testing.T) {
	var conns atomic.Int64
	node := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/fenced/ok" {
			// A success with more after the JSON than the decoder reads.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"resource":"ok","token":1,"value":null,"revision":2}`+strings.Repeat(" ", 8<<10))
			return
		}
		problem(w, http.StatusNotFound, "not_found", 0)
	}))
	node.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	node.Start()
	t.Cleanup(node.Close)
	c := newClient(t, node.URL)
	ctx := ctxFor(t, time.Minute)
	for range 20 {
		if _, err := c.GetFenced(ctx, "missing"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("%v, want ErrNotFound", err)
		}
		if _, err := c.GetFenced(ctx, "ok"); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("40 sequential calls opened %d connections, want 1: bodies are not drained", n)
	}
}

// TestAcquire_IsNotAmbiguousAfterTheNodeDroppedIdleConnections: a node
// that restarts, or times idle connections out, closes the pooled
// connections under the client. A request written onto one of those fails
// after it left, which for an acquire would mean "outcome unknown" although
// the node never saw it. Calls that must not be repeated therefore go on
// connections of their own.
func TestAcquire_IsNotAmbiguousAfterTheNodeDroppedIdleConnections(t *testing.T) {
	f, c, ctx := setup(t)
	for i := range 5 {
		name := lockName(t, fmt.Sprint(i))
		if _, err := c.Get(ctx, name); !errors.Is(err, client.ErrNotHeld) { // leaves a pooled connection
			t.Fatalf("get: %v", err)
		}
		f.CloseClientConnections()
		lk, err := c.Acquire(ctx, name, client.AcquireOptions{})
		if err != nil {
			t.Fatalf("acquire after the node dropped its connections: %v", err)
		}
		if err := lk.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
}

// TestRelease_IsRetriedAndSaysWhenItsAnswerMayBeAboutAnEarlierAttempt: a
// node releases the lock, then answers 503 (etcd applied the change, but
// too late for the node to know). Release is retried on the next node:
// repeating it can never end anyone else's hold, since it names the
// token. That node finds the lock free; the error says why that may be.
func TestRelease_IsRetriedAndSaysWhenItsAnswerMayBeAboutAnEarlierAttempt(t *testing.T) {
	f := newFront(t)
	ctx := ctxFor(t, time.Minute)
	eng, h := backend()
	name := lockName(t, "l")
	held, _, err := eng.Acquire(ctx, lock.AcquireRequest{Name: name, Owner: "w1", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	token := held.Token

	late := newFake(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(httptest.NewRecorder(), r) // takes effect…
		problem(w, http.StatusServiceUnavailable, "unavailable", 1)
	})
	c := newClient(t, late.URL, f.URL)
	err = c.Release(ctx, name, token)
	if !errors.Is(err, client.ErrNotHeld) || !strings.Contains(err.Error(), "may have taken effect") {
		t.Fatalf("%v, want ErrNotHeld saying an earlier attempt may have released it", err)
	}
	if late.n.Load() != 1 || f.count(http.MethodDelete, "/"+name) != 1 {
		t.Errorf("requests: %d to the late node, %d to the next; want one each", late.n.Load(), f.count(http.MethodDelete, "/"+name))
	}
}
