package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

func rev(n int64) *int64 { return &n }

func mustPut(t *testing.T, e *lock.Engine, req lock.PutKeyRequest) *lock.KeyEntry {
	t.Helper()
	en, err := e.KV().Put(holdtest.Ctx(t), req)
	if err != nil {
		t.Fatalf("put %q: %v", req.Key, err)
	}
	return en
}

func TestKV_CompareAndSet(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	kv := e.KV()

	var nf *lock.KeyNotFoundError
	if _, err := kv.Get(ctx, "config/db"); !errors.As(err, &nf) || nf.Revision <= 0 {
		t.Fatalf("get of a missing key: %v, want a KeyNotFoundError with the read's revision", err)
	}
	a := mustPut(t, e, lock.PutKeyRequest{Key: "config/db", Value: json.RawMessage(`{"host":"a"}`), IfRevision: rev(0)})
	if a.Version != 1 || a.CreatedRevision != a.Revision {
		t.Fatalf("create = %+v, want version 1 created at its revision", a)
	}
	// Create-only again: the key exists.
	_, err := kv.Put(ctx, lock.PutKeyRequest{Key: "config/db", Value: json.RawMessage(`1`), IfRevision: rev(0)})
	var rm *lock.RevisionMismatchError
	if !errors.As(err, &rm) || rm.Revision != a.Revision {
		t.Fatalf("second create: %v, want a mismatch naming revision %d", err, a.Revision)
	}
	b := mustPut(t, e, lock.PutKeyRequest{Key: "config/db", Value: json.RawMessage(`{"host":"b"}`), IfRevision: rev(a.Revision)})
	if b.Version != 2 || b.CreatedRevision != a.Revision || b.Revision <= a.Revision {
		t.Fatalf("update = %+v after %+v", b, a)
	}
	// A writer that read a, not b, loses.
	if _, err := kv.Put(ctx, lock.PutKeyRequest{Key: "config/db", Value: json.RawMessage(`{"host":"c"}`), IfRevision: rev(a.Revision)}); !errors.As(err, &rm) || rm.Revision != b.Revision {
		t.Fatalf("stale compare: %v, want a mismatch naming %d", err, b.Revision)
	}
	got, err := kv.Get(ctx, "config/db")
	if err != nil || got.Revision != b.Revision || !sameJSON(t, got.Value, json.RawMessage(`{"host":"b"}`)) {
		t.Fatalf("get = %+v, %v; want b", got, err)
	}
	// Deletes compare too.
	if err := kv.Delete(ctx, lock.DeleteKeyRequest{Key: "config/db", IfRevision: rev(a.Revision)}); !errors.As(err, &rm) {
		t.Fatalf("stale delete: %v, want a mismatch", err)
	}
	if err := kv.Delete(ctx, lock.DeleteKeyRequest{Key: "config/db", IfRevision: rev(b.Revision)}); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, lock.DeleteKeyRequest{Key: "config/db"}); !errors.Is(err, lock.ErrKeyNotFound) {
		t.Fatalf("delete of a deleted key: %v, want ErrKeyNotFound", err)
	}
	c := mustPut(t, e, lock.PutKeyRequest{Key: "config/db", Value: json.RawMessage(`"again"`)})
	if c.Version != 1 || c.CreatedRevision != c.Revision {
		t.Fatalf("put after a delete = %+v, want a new key", c)
	}
}

func TestKV_BadInputWritesNothing(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	big := json.RawMessage(fmt.Sprintf("%q", make([]byte, lock.DefaultConfig().MaxKeyValueBytes)))
	for _, c := range []struct {
		req   lock.PutKeyRequest
		field string
	}{
		{lock.PutKeyRequest{Key: "", Value: json.RawMessage(`1`)}, "key"},
		{lock.PutKeyRequest{Key: "a//b", Value: json.RawMessage(`1`)}, "key"},
		{lock.PutKeyRequest{Key: "/a", Value: json.RawMessage(`1`)}, "key"},
		{lock.PutKeyRequest{Key: "a/", Value: json.RawMessage(`1`)}, "key"},
		{lock.PutKeyRequest{Key: "a b", Value: json.RawMessage(`1`)}, "key"},
		{lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`{`)}, "value"},
		{lock.PutKeyRequest{Key: "a"}, "value"},
		{lock.PutKeyRequest{Key: "a", Value: big}, "value"},
		{lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`1`), IfRevision: rev(-1)}, "if_revision"},
		{lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`1`), Session: "zz"}, "session"},
		{lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`1`), Fence: lock.KeyFence{Kind: lock.KindLock, Name: "job"}}, "token"},
		{lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`1`), Fence: lock.KeyFence{Token: 5}}, "token"},
		{lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`1`), Fence: lock.KeyFence{Kind: lock.KindLock, Name: "a/b", Token: 5}}, "lock"},
	} {
		_, err := e.KV().Put(ctx, c.req)
		var ie *lock.InvalidError
		var le *lock.LimitError
		switch {
		case errors.As(err, &ie) && ie.Field == c.field:
		case errors.As(err, &le) && le.Field == c.field:
		default:
			t.Errorf("put %+v: %v, want an error naming %s", c.req, err, c.field)
		}
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"kv/"); len(keys) != 0 {
		t.Fatalf("bad puts wrote %v", keys)
	}
	if _, err := e.KV().Put(ctx, lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`1`), Session: "7fffffff"}); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("put into a missing session: %v, want ErrSessionNotFound", err)
	}
}

func TestKV_SessionBoundKeysEndWithTheirSession(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "member-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, e, lock.PutKeyRequest{Key: "services/api/m1", Value: json.RawMessage(`{"addr":"10.0.0.1:80"}`), Session: s.ID})
	mustPut(t, e, lock.PutKeyRequest{Key: "services/api/m2", Value: json.RawMessage(`{"addr":"10.0.0.2:80"}`)})
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	page, err := e.KV().List(ctx, lock.KeyListOptions{Prefix: "services/api/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Keys) != 1 || page.Keys[0].Key != "services/api/m2" {
		t.Fatalf("after the session's end: %+v, want m2 alone", page.Keys)
	}
	// The history says which session took the key with it, and the
	// credentials of the put and of a delete by a request.
	evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Kind: lock.KindKey, Name: "services/api/m1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Type != lock.EventDelete || evs[0].Session != s.ID || evs[0].Detail == "" ||
		evs[1].Type != lock.EventPut || evs[1].Session != s.ID || evs[1].Version != 1 || evs[1].Value != nil {
		t.Fatalf("history of m1 = %+v, want its put in the session (no value) and its delete by the session's end", evs)
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"audit/"); len(keys) != 0 {
		t.Fatalf("pending records left: %v", keys)
	}
}

func TestKV_HistoryNamesWriters(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	alice := lock.WithCaller(ctx, lock.Caller{Credential: "alice"})
	bob := lock.WithCaller(ctx, lock.Caller{Credential: "bob"})
	if _, err := e.KV().Put(alice, lock.PutKeyRequest{Key: "a/b", Value: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.KV().Put(bob, lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`2`)}); err != nil {
		t.Fatal(err)
	}
	if err := e.KV().Delete(bob, lock.DeleteKeyRequest{Key: "a/b"}); err != nil {
		t.Fatal(err)
	}
	// The index of "a" holds none of "a/b"'s events.
	evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Kind: lock.KindKey, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Name != "a" || evs[0].Credential != "bob" {
		t.Fatalf("history of a = %+v", evs)
	}
	evs, _, err = holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Kind: lock.KindKey, Name: "a/b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Type != lock.EventDelete || evs[0].Credential != "bob" || evs[1].Type != lock.EventPut || evs[1].Credential != "alice" {
		t.Fatalf("history of a/b = %+v, want alice's put and bob's delete", evs)
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"audit/"); len(keys) != 0 {
		t.Fatalf("pending records left: %v", keys)
	}
}

func TestKV_StreamCarriesValuesLive(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	sub, err := holdtest.TrailOf(e).Subscribe(ctx, trail.SubscribeOptions{Kind: lock.KindKey, NamePrefix: "cfg/"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	mustPut(t, e, lock.PutKeyRequest{Key: "other", Value: json.RawMessage(`0`)})
	p := mustPut(t, e, lock.PutKeyRequest{Key: "cfg/x", Value: json.RawMessage(`{"v":1}`)})
	ev := <-sub.C
	if ev.Type != lock.EventPut || ev.Name != "cfg/x" || ev.Revision != p.Revision || ev.Version != 1 || ev.CreatedRevision != p.Revision || !sameJSON(t, ev.Value, json.RawMessage(`{"v":1}`)) {
		t.Fatalf("streamed %+v, want cfg/x's put with its value", ev)
	}
}

func TestKV_FencedWritesRefusedAfterHandover(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	kv := e.KV()
	old := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "inventory", Owner: "w1"})
	mustPut(t, e, lock.PutKeyRequest{Key: "stock/sku1", Value: json.RawMessage(`10`), Fence: lock.KeyFence{Kind: lock.KindLock, Name: "inventory", Token: old.Token}})
	if err := e.Release(ctx, "inventory", old.Token); err != nil {
		t.Fatal(err)
	}
	cur := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "inventory", Owner: "w2"})
	_, err := kv.Put(ctx, lock.PutKeyRequest{Key: "stock/sku1", Value: json.RawMessage(`9`), Fence: lock.KeyFence{Kind: lock.KindLock, Name: "inventory", Token: old.Token}})
	if !errors.Is(err, lock.ErrStaleToken) {
		t.Fatalf("write with the old holder's token: %v, want ErrStaleToken", err)
	}
	if err := kv.Delete(ctx, lock.DeleteKeyRequest{Key: "stock/sku1", Fence: lock.KeyFence{Kind: lock.KindLock, Name: "inventory", Token: old.Token}}); !errors.Is(err, lock.ErrStaleToken) {
		t.Fatalf("delete with the old holder's token: %v, want ErrStaleToken", err)
	}
	got, err := kv.Get(ctx, "stock/sku1")
	if err != nil || string(got.Value) != "10" {
		t.Fatalf("after stale writes: %+v, %v; want 10", got, err)
	}
	mustPut(t, e, lock.PutKeyRequest{Key: "stock/sku1", Value: json.RawMessage(`8`), Fence: lock.KeyFence{Kind: lock.KindLock, Name: "inventory", Token: cur.Token}})

	// A semaphore's permit and a read/write lock's write hold fence too;
	// a read hold does not.
	p, err := e.AcquirePermit(ctx, lock.PermitRequest{Name: "pool", Owner: "w1", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, e, lock.PutKeyRequest{Key: "pool/state", Value: json.RawMessage(`1`), Fence: lock.KeyFence{Kind: lock.KindSemaphore, Name: "pool", Token: p.Token}})
	if _, err := kv.Put(ctx, lock.PutKeyRequest{Key: "pool/state", Value: json.RawMessage(`2`), Fence: lock.KeyFence{Kind: lock.KindSemaphore, Name: "pool", Token: p.Token + 1000}}); !errors.Is(err, lock.ErrStaleToken) {
		t.Fatalf("write with no permit's token: %v, want ErrStaleToken", err)
	}
	r, _, err := e.AcquireRW(ctx, lock.RWRequest{Name: "catalog", Mode: lock.ModeRead, Owner: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, lock.PutKeyRequest{Key: "catalog/v", Value: json.RawMessage(`1`), Fence: lock.KeyFence{Kind: lock.KindRWLock, Name: "catalog", Token: r.Token}}); !errors.Is(err, lock.ErrStaleToken) {
		t.Fatalf("write under a read hold: %v, want ErrStaleToken", err)
	}
}

// TestKV_ListPagesByPrefix pages keys over the member's client, and
// from the member's own store as a node reads them (Config.Embedded).
func TestKV_ListPagesByPrefix(t *testing.T) {
	for _, embedded := range []bool{false, true} {
		t.Run(fmt.Sprintf("embedded=%v", embedded), func(t *testing.T) {
			m := testetcd.Start(t)
			cfg := lock.DefaultConfig()
			if embedded {
				cfg.Embedded = m
			}
			listPagesByPrefix(t, holdtest.StartEngine(t, m, cfg))
		})
	}
}

func listPagesByPrefix(t *testing.T, e *lock.Engine) {
	ctx := holdtest.Ctx(t)
	for i := range 7 {
		mustPut(t, e, lock.PutKeyRequest{Key: fmt.Sprintf("app/k%d", i), Value: json.RawMessage(`true`)})
	}
	mustPut(t, e, lock.PutKeyRequest{Key: "apple", Value: json.RawMessage(`1`)})
	last := mustPut(t, e, lock.PutKeyRequest{Key: "b", Value: json.RawMessage(`1`)})
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 4 {
			t.Fatal("listing does not end")
		}
		page, err := e.KV().List(ctx, lock.KeyListOptions{Prefix: "app/", Limit: 3, After: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if page.Revision < last.Revision {
			t.Fatalf("page read at revision %d, before the last put's %d", page.Revision, last.Revision)
		}
		for _, k := range page.Keys {
			if k.Version != 1 || k.Revision <= 0 || string(k.Value) != "true" {
				t.Fatalf("listed %+v", k)
			}
		}
		for _, k := range page.Keys {
			got = append(got, k.Key)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	want := fmt.Sprint([]string{"app/k0", "app/k1", "app/k2", "app/k3", "app/k4", "app/k5", "app/k6"})
	if fmt.Sprint(got) != want {
		t.Fatalf("pages = %v, want %v", got, want)
	}
	for _, o := range []lock.KeyListOptions{{Prefix: "a//"}, {Limit: -1}, {After: "x y"}} {
		var ie *lock.InvalidError
		if _, err := e.KV().List(ctx, o); !errors.As(err, &ie) {
			t.Errorf("list %+v: %v, want InvalidError", o, err)
		}
	}
}

func TestKV_WaitReturnsAtTheNextChange(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	kv := e.KV()
	a := mustPut(t, e, lock.PutKeyRequest{Key: "flag", Value: json.RawMessage(`1`)})
	// Already past: at once.
	if got, err := kv.Wait(ctx, "flag", a.Revision-1, time.Minute); err != nil || got.Revision != a.Revision {
		t.Fatalf("wait from before the put: %+v, %v", got, err)
	}
	// No change: the wait runs out and answers the key as it is.
	start := time.Now()
	if got, err := kv.Wait(ctx, "flag", a.Revision, 200*time.Millisecond); err != nil || got.Revision != a.Revision || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("wait without change: %+v, %v after %s", got, err, time.Since(start))
	}
	type result struct {
		en  *lock.KeyEntry
		err error
	}
	waitFor := func(after int64) chan result {
		ch := make(chan result, 1)
		go func() {
			en, err := kv.Wait(ctx, "flag", after, time.Minute)
			ch <- result{en, err}
		}()
		return ch
	}
	ch := waitFor(a.Revision)
	b := mustPut(t, e, lock.PutKeyRequest{Key: "flag", Value: json.RawMessage(`2`)})
	if r := <-ch; r.err != nil || r.en.Revision != b.Revision {
		t.Fatalf("wait woke with %+v, %v; want the put at %d", r.en, r.err, b.Revision)
	}
	ch = waitFor(b.Revision)
	if err := kv.Delete(ctx, lock.DeleteKeyRequest{Key: "flag"}); err != nil {
		t.Fatal(err)
	}
	r := <-ch
	var nf *lock.KeyNotFoundError
	if !errors.As(r.err, &nf) {
		t.Fatalf("wait over a delete: %+v, %v; want KeyNotFoundError", r.en, r.err)
	}
	// Waiting for a missing key from the revision it was read at.
	ch = waitFor(nf.Revision)
	c := mustPut(t, e, lock.PutKeyRequest{Key: "flag", Value: json.RawMessage(`3`)})
	if r := <-ch; r.err != nil || r.en.Revision != c.Revision {
		t.Fatalf("wait for a missing key woke with %+v, %v", r.en, r.err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := kv.Wait(cctx, "flag", c.Revision, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

func TestKV_MaxKeys(t *testing.T) {
	m := testetcd.Start(t)
	cfg := lock.DefaultConfig()
	cfg.MaxKeys = 2
	e := holdtest.StartEngine(t, m, cfg)
	ctx := holdtest.Ctx(t)
	mustPut(t, e, lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`1`)})
	mustPut(t, e, lock.PutKeyRequest{Key: "b", Value: json.RawMessage(`1`)})
	_, err := e.KV().Put(ctx, lock.PutKeyRequest{Key: "c", Value: json.RawMessage(`1`)})
	if le := holdtest.AsLimit(t, err, lock.ErrTooManyKeys); le.Limit != 2 {
		t.Fatalf("limit = %d", le.Limit)
	}
	// At the cap, existing keys still take puts.
	mustPut(t, e, lock.PutKeyRequest{Key: "a", Value: json.RawMessage(`2`)})
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"kv/"); len(keys) != 2 {
		t.Fatalf("keys = %v", keys)
	}
}

// TestKV_SessionOfAnotherCredential: a caller may bind keys to its own
// sessions only, an admin to any; without a caller the txn's compare of
// the session record is the check, and a missing session is refused.
func TestKV_SessionOfAnotherCredential(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	alice := lock.WithCaller(ctx, lock.Caller{Credential: "alice"})
	bob := lock.WithCaller(ctx, lock.Caller{Credential: "bob"})
	admin := lock.WithCaller(ctx, lock.Caller{Credential: "root", Admin: true})
	s, err := e.CreateSession(alice, "alice-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	put := func(ctx context.Context, key string) error {
		_, err := e.KV().Put(ctx, lock.PutKeyRequest{Key: key, Value: json.RawMessage(`1`), Session: s.ID})
		return err
	}
	if err := put(bob, "m/bob"); !errors.Is(err, lock.ErrNotOwner) {
		t.Fatalf("bob binding a key to alice's session: %v, want ErrNotOwner", err)
	}
	for _, c := range []struct {
		ctx context.Context
		key string
	}{{alice, "m/alice"}, {admin, "m/admin"}, {ctx, "m/anonymous"}} {
		if err := put(c.ctx, c.key); err != nil {
			t.Fatalf("put %s: %v", c.key, err)
		}
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"kv/m/"); len(keys) != 3 {
		t.Fatalf("keys %v, want alice's, the admin's and the anonymous one", keys)
	}
	if err := e.DeleteSession(alice, s.ID); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, "m/late"); !errors.Is(err, lock.ErrSessionNotFound) {
		t.Fatalf("put into an ended session: %v, want ErrSessionNotFound", err)
	}
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"kv/m/"); len(keys) != 0 {
		t.Fatalf("keys %v outlived their session", keys)
	}
}
