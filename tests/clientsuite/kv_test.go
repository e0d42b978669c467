package clientsuite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/client"
	"github.com/baton-dev/baton/internal/poll"
)

func TestKeys_CompareAndSetListAndDelete(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	dir := lockName(t, "cfg")
	key := dir + "/db"

	_, err := c.GetKey(ctx, key)
	var e *client.Error
	if !errors.Is(err, client.ErrKeyNotFound) || !errors.As(err, &e) || e.Revision <= 0 {
		t.Fatalf("get of a missing key: %v, want ErrKeyNotFound with a revision", err)
	}
	a, err := c.PutKey(ctx, key, map[string]string{"host": "a"}, client.PutKeyOptions{IfRevision: client.Revision(0)})
	if err != nil || a.Version != 1 || a.Key != key || string(a.Value) != `{"host":"a"}` {
		t.Fatalf("create: %+v, %v", a, err)
	}
	_, err = c.PutKey(ctx, key, "x", client.PutKeyOptions{IfRevision: client.Revision(0)})
	if !errors.Is(err, client.ErrRevisionMismatch) || !errors.As(err, &e) || e.Revision != a.Revision {
		t.Fatalf("second create: %v, want ErrRevisionMismatch naming %d", err, a.Revision)
	}
	b, err := c.PutKey(ctx, key, map[string]string{"host": "b"}, client.PutKeyOptions{IfRevision: client.Revision(a.Revision)})
	if err != nil || b.Version != 2 || b.CreatedRevision != a.Revision {
		t.Fatalf("update: %+v, %v", b, err)
	}
	var v struct{ Host string }
	if got, err := c.GetKey(ctx, key); err != nil || got.Decode(&v) != nil || v.Host != "b" || got.Revision != b.Revision {
		t.Fatalf("get: %+v, %v", got, err)
	}
	for i := range 3 {
		if _, err := c.PutKey(ctx, fmt.Sprintf("%s/n%d", dir, i), i, client.PutKeyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var listed []string
	for cursor := ""; ; {
		p, err := c.Keys(ctx, dir+"/", client.ListOptions{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if p.Revision < b.Revision {
			t.Fatalf("page read at %d, before the put at %d", p.Revision, b.Revision)
		}
		for _, k := range p.Keys {
			listed = append(listed, strings.TrimPrefix(k.Key, dir+"/"))
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if got := strings.Join(listed, ","); got != "db,n0,n1,n2" {
		t.Fatalf("listed %s", got)
	}
	if err := c.DeleteKey(ctx, key, client.DeleteKeyOptions{IfRevision: client.Revision(a.Revision)}); !errors.Is(err, client.ErrRevisionMismatch) {
		t.Fatalf("stale delete: %v", err)
	}
	if err := c.DeleteKey(ctx, key, client.DeleteKeyOptions{IfRevision: client.Revision(b.Revision)}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteKey(ctx, key, client.DeleteKeyOptions{}); !errors.Is(err, client.ErrKeyNotFound) {
		t.Fatalf("delete of a deleted key: %v", err)
	}
}

func TestKeys_FencedAndSessionBound(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	name := lockName(t, "l")
	key := lockName(t, "k")
	lk, err := c.Acquire(ctx, name, client.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := lk.Token()
	if _, err := c.PutKey(ctx, key, 10, client.PutKeyOptions{Fence: &client.Fence{Kind: "lock", Name: name, Token: old}}); err != nil {
		t.Fatal(err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lk2, err := c.Acquire(ctx, name, client.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	releaseAtEnd(t, lk2)
	if _, err := c.PutKey(ctx, key, 9, client.PutKeyOptions{Fence: &client.Fence{Kind: "lock", Name: name, Token: old}}); !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("put with the old holder's token: %v, want ErrStaleToken", err)
	}

	s, err := c.CreateSession(ctx, "member", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	member := key + "/m1"
	if k, err := c.PutKey(ctx, member, "10.0.0.1:80", client.PutKeyOptions{Session: s.ID}); err != nil || k.Session != s.ID {
		t.Fatalf("bound put: %+v, %v", k, err)
	}
	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetKey(ctx, member); !errors.Is(err, client.ErrKeyNotFound) {
		t.Fatalf("a session's key after its end: %v, want ErrKeyNotFound", err)
	}
}

func TestWaitKey_ReturnsAtTheNextChange(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	key := lockName(t, "k")
	_, err := c.GetKey(ctx, key)
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("get: %v", err)
	}
	got := make(chan *client.Key, 1)
	go func() {
		k, err := c.WaitKey(ctx, key, e.Revision, 30*time.Second)
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		got <- k
	}()
	put, err := c.PutKey(ctx, key, "up", client.PutKeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if k := <-got; k == nil || k.Revision != put.Revision {
		t.Fatalf("wait returned %+v, want the put at %d", k, put.Revision)
	}
}

// TestWatchKeys_EveryChangeOnceAcrossADisconnect: a watch from a
// listing's revision sees every put and delete under its prefix after
// it, once and in order, with values, although its stream is cut and
// kept away while some of them happen.
func TestWatchKeys_EveryChangeOnceAcrossADisconnect(t *testing.T) {
	t.Parallel()
	_, c, ctx := setup(t)
	wf := newFront(t)
	wc := newClient(t, wf.URL)
	dir := lockName(t, "w")
	if _, err := c.PutKey(ctx, dir+"/before", 0, client.PutKeyOptions{}); err != nil {
		t.Fatal(err)
	}
	page, err := c.Keys(ctx, dir+"/", client.ListOptions{})
	if err != nil || len(page.Keys) != 1 {
		t.Fatalf("list: %+v, %v", page, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	evc := make(chan client.KeyEvent, 64)
	go func() {
		defer close(evc)
		for ev, err := range wc.WatchKeys(ctx, dir+"/", page.Revision) {
			if err != nil {
				return
			}
			evc <- ev
		}
	}()
	var last int64
	expect := func(typ, key, value string) {
		t.Helper()
		var ev client.KeyEvent
		select {
		case ev = <-evc:
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s of %s within 20s", typ, key)
		}
		if ev.Type != typ || ev.Key.Key != dir+"/"+key || string(ev.Value) != value || ev.Revision <= last {
			t.Fatalf("event %+v (value %s) after %d; want %s of %s with %s", ev, ev.Value, last, typ, key, value)
		}
		last = ev.Revision
	}
	put := func(key string, v any) {
		t.Helper()
		if _, err := c.PutKey(ctx, dir+"/"+key, v, client.PutKeyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", 1)
	expect("put", "a", "1")

	wf.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/v1/kv/events") {
			problem(w, http.StatusServiceUnavailable, "unavailable", 0)
			return true
		}
		return false
	})
	wf.CloseClientConnections()
	put("b", 2)
	put("a", 3)
	if err := c.DeleteKey(ctx, dir+"/b", client.DeleteKeyOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the watch to be refused", func() bool { return wf.count(http.MethodGet, "/v1/kv/events") >= 2 })
	wf.setIntercept(nil)
	expect("put", "b", "2")
	expect("put", "a", "3")
	expect("delete", "b", "")
	put("c", json.RawMessage(`{"x":true}`))
	expect("put", "c", `{"x":true}`)

	reqs := wf.matching(http.MethodGet, "/v1/kv/events")
	if id := reqs[len(reqs)-1].Header.Get("Last-Event-ID"); id == "" {
		t.Errorf("the reconnection sent no Last-Event-ID")
	}
	select {
	case ev := <-evc:
		t.Fatalf("an extra event %+v", ev)
	default:
	}
}
