package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/tests/testserver"
)

// smallQuota is the backend quota of the tests that fill etcd: small, so
// that filling it takes a second or two.
const smallQuota = 16 << 20

// newSmallServer starts the server over a member with smallQuota.
func newSmallServer(t *testing.T) *testServer {
	t.Helper()
	ec := testetcd.Config(t)
	ec.QuotaBackendBytes = smallQuota
	cfg := lock.DefaultConfig()
	cfg.BackendQuota = smallQuota
	s := &testServer{Server: testserver.StartOn(t, testetcd.StartConfig(t, ec), cfg), t: t}
	// 507 and the readiness probe's 503 are what these tests are about.
	s.Allow5xx.Store(true)
	return s
}

// fill writes 32 KiB fenced values with token, round-robin over names
// resources, from several goroutines, until etcd refuses for space. Every
// write rewrites a resource, so what fills the backend is history (old
// revisions), which compaction frees.
func fill(t *testing.T, e *lock.Engine, token int64, names int) {
	t.Helper()
	value, _ := json.Marshal(strings.Repeat("x", 32<<10-16))
	ctx := context.Background()
	var wg sync.WaitGroup
	var next sync.Mutex
	n := 0
	for range 8 {
		wg.Go(func() {
			for {
				next.Lock()
				i := n
				n++
				next.Unlock()
				if i > 4*smallQuota/len(value) {
					t.Errorf("%d writes of %d bytes without NOSPACE", i, len(value))
					return
				}
				_, err := e.PutFenced(ctx, fmt.Sprintf("res-%d", i%names), token, value, "")
				if errors.Is(err, lock.ErrNoSpace) {
					return
				}
				if err != nil {
					t.Errorf("fill: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func TestNoSpace_WritesGet507ReadsWorkAndRecoverBringsWritesBack(t *testing.T) {
	s := newSmallServer(t)
	held := s.acquire("job", `{"owner":"w1"}`)
	sess := s.createSession(`{"owner":"w1"}`)
	testserver.WantJSON[api.Key](t, s.Do("PUT", "/v1/kv/config/kept", `{"value":1}`), http.StatusCreated)
	fill(t, s.Eng, held.Token, 20)

	// Every write: 507 with our own words, never "no leader".
	for _, w := range []struct{ method, path, body string }{
		{"PUT", "/v1/fenced/res-0", fmt.Sprintf(`{"token":%d,"value":1}`, held.Token)},
		{"POST", "/v1/locks/other", `{"owner":"w2"}`},
		{"POST", "/v1/sessions", `{"owner":"w2"}`},
		{"POST", "/v1/locks/insession", `{"session":"` + sess.ID + `"}`},
		{"PUT", "/v1/kv/config/db", `{"value":{"host":"db-1"}}`},
		{"DELETE", "/v1/kv/config/kept", ""},
	} {
		p := testserver.WantProblem(t, s.Do(w.method, w.path, w.body), http.StatusInsufficientStorage, "insufficient_storage")
		if !strings.Contains(p.Detail, "full") || !strings.Contains(p.Detail, "baton maintenance recover") || strings.Contains(p.Detail, "leader") {
			t.Errorf("%s %s: detail %q, want what is full and what to do", w.method, w.path, p.Detail)
		}
	}
	// Reads and renewals keep working: keepalives are no raft writes.
	testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/job/renew", fmt.Sprintf(`{"token":%d}`, held.Token)), http.StatusOK)
	testserver.WantJSON[api.Session](t, s.Do("POST", "/v1/sessions/"+sess.ID+"/renew", ""), http.StatusOK)
	testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/job", ""), http.StatusOK)
	testserver.WantJSON[api.FencedValue](t, s.Do("GET", "/v1/fenced/res-1", ""), http.StatusOK)
	testserver.WantJSON[api.Session](t, s.Do("GET", "/v1/sessions/"+sess.ID, ""), http.StatusOK)
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/other", ""), http.StatusNotFound, "not_held")
	testserver.WantJSON[api.Key](t, s.Do("GET", "/v1/kv/config/kept", ""), http.StatusOK)
	testserver.WantProblem(t, s.Do("GET", "/v1/kv/config/db", ""), http.StatusNotFound, "key_not_found")
	// The node is not ready: a load balancer should send it no writes.
	r := s.Do("GET", "/readyz", "")
	p := testserver.WantProblem(t, r, http.StatusServiceUnavailable, "nospace")
	if r.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "full") {
		t.Fatalf("readyz problem %+v, Retry-After %q; want the data store named full and a retry hint", p, r.Header.Get("Retry-After"))
	}

	got := testserver.WantJSON[api.RecoverResult](t, s.Do("POST", "/v1/maintenance/recover", ""), http.StatusOK)
	if got.CompactedRevision <= held.Token || len(got.Defragmented) != 1 || got.Defragmented[0] != "test" || len(got.Alarms) != 0 {
		t.Fatalf("recover = %+v, want a compaction past the fill, member test defragmented, no alarm left", got)
	}
	if got.DBSize <= 0 || got.DBSize >= smallQuota/2 || got.Quota != smallQuota {
		t.Fatalf("recover = %+v, want the backend well under the quota of %d", got, smallQuota)
	}
	testserver.WantJSON[api.Status](t, s.Do("GET", "/readyz", ""), http.StatusOK)
	testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/res-0", fmt.Sprintf(`{"token":%d,"value":"after"}`, held.Token)), http.StatusOK)
	s.acquire("other", `{"owner":"w2"}`)
	s.createSession(`{"owner":"w2"}`)
	testserver.WantJSON[api.Key](t, s.Do("PUT", "/v1/kv/config/db", `{"value":{"host":"db-1"}}`), http.StatusCreated)
}

func TestPutFenced_ValueOverTheCapGets413WithLimit(t *testing.T) {
	s := newCappedServer(t, func(c *lock.Config) { c.MaxFencedValueBytes = 64 })
	held := s.acquire("job", `{"owner":"w1"}`)
	r := s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":"%s"}`, held.Token, strings.Repeat("v", 100)))
	p := testserver.WantProblem(t, r, http.StatusRequestEntityTooLarge, "value_too_large")
	if p.Limit != 64 {
		t.Fatalf("problem %+v, want limit 64", p)
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/fenced/ledger", ""), http.StatusNotFound, "not_found")
}

func TestPutFenced_NewResourceBeyondTheCapGets429WithLimit(t *testing.T) {
	s := newCappedServer(t, func(c *lock.Config) { c.MaxFencedValues = 1 })
	held := s.acquire("job", `{"owner":"w1"}`)
	body := fmt.Sprintf(`{"token":%d,"value":1}`, held.Token)
	testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/one", body), http.StatusOK)
	p := testserver.WantProblem(t, s.Do("PUT", "/v1/fenced/two", body), http.StatusTooManyRequests, "too_many_fenced_values")
	if p.Limit != 1 {
		t.Fatalf("problem %+v, want limit 1", p)
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/fenced/two", ""), http.StatusNotFound, "not_found")
	testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/one", body), http.StatusOK)
}

func TestAcquire_BeyondTheLockCapGets429TooManyLocks(t *testing.T) {
	s := newCappedServer(t, func(c *lock.Config) { c.MaxLocks = 1 })
	s.acquire("one", `{"owner":"w1"}`)
	leases := s.Leases()
	r := s.Do("POST", "/v1/locks/two", `{"owner":"w2"}`)
	p := testserver.WantProblem(t, r, http.StatusTooManyRequests, "too_many_locks")
	if p.Limit != 1 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("problem %+v, Retry-After %q; want limit 1 and a retry hint", p, r.Header.Get("Retry-After"))
	}
	testserver.WantProblem(t, s.Do("GET", "/v1/locks/two", ""), http.StatusNotFound, "not_held")
	if got := s.Leases(); len(got) != len(leases) {
		t.Fatalf("%d leases after the refusal, want %d", len(got), len(leases))
	}
}

// A token no lock was granted with, MaxInt64 above all, is the client's
// mistake: 409 unknown_token at once, nothing written.
func TestPutFenced_TokenNeverIssuedGets409UnknownToken(t *testing.T) {
	s := newTestServer(t)
	held := s.acquire("job", `{"owner":"w1"}`)
	testserver.WantJSON[api.FencedValue](t, s.Do("PUT", "/v1/fenced/ledger", fmt.Sprintf(`{"token":%d,"value":"kept"}`, held.Token)), http.StatusOK)
	r := s.Do("PUT", "/v1/fenced/ledger", `{"token":9223372036854775807,"value":"never"}`)
	testserver.WantProblem(t, r, http.StatusConflict, "unknown_token")
	got := testserver.WantJSON[api.FencedValue](t, s.Do("GET", "/v1/fenced/ledger", ""), http.StatusOK)
	if got.Token != held.Token || string(got.Value) != `"kept"` {
		t.Fatalf("ledger after the refusal: %+v", got)
	}
}

// Live data that fills the quota cannot be compacted away: 409 still_full
// names what holds the space, and writes stay refused.
func TestRecover_StillFullGets409NamingWhatHoldsTheSpace(t *testing.T) {
	s := newSmallServer(t)
	held := s.acquire("job", `{"owner":"w1"}`)
	fill(t, s.Eng, held.Token, 1<<30) // a new resource every write
	p := testserver.WantProblem(t, s.Do("POST", "/v1/maintenance/recover", ""), http.StatusConflict, "still_full")
	if !strings.Contains(p.Detail, "fenced values") || !strings.Contains(p.Detail, "--etcd-quota-bytes") {
		t.Fatalf("detail %q, want what holds the space and what to do", p.Detail)
	}
	testserver.WantProblem(t, s.Do("POST", "/v1/locks/other", `{"owner":"w2"}`), http.StatusInsufficientStorage, "insufficient_storage")
	testserver.WantProblem(t, s.Do("GET", "/readyz", ""), http.StatusServiceUnavailable, "nospace")
}
