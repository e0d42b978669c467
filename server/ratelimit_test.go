package server_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/testserver"
)

// startLimited starts the real server with a per-address limit so slow
// (one token per 100 s) that no token comes back during the test.
func startLimited(t *testing.T, burst int) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.WithServer(func(c *server.Config) {
		c.RateLimit = server.RateLimit{Rate: 0.01, Burst: burst}
	}))
}

func TestRateLimit_BurstBeyondTheLimitGets429AndDoesNothing(t *testing.T) {
	const burst, extra = 5, 4
	s := startLimited(t, burst)
	var took []string
	refused := 0
	for i := range burst + extra {
		name := fmt.Sprintf("flood-%d", i)
		r := s.Do("POST", "/v1/locks/"+name, `{"owner":"flooder"}`)
		switch r.Status {
		case http.StatusCreated:
			took = append(took, name)
		case http.StatusTooManyRequests:
			refused++
			p := testserver.WantProblem(t, r, http.StatusTooManyRequests, "rate_limited")
			ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
			// The bucket refills at 0.01/s: the next token is about 100 s away.
			if err != nil || ra < 99 || ra > 100 || p.RetryAfter != int64(ra) {
				t.Fatalf("Retry-After %q and retry_after %d, want the limiter's ~100 s in both", r.Header.Get("Retry-After"), p.RetryAfter)
			}
		default:
			t.Fatalf("acquire %s: %d %s", name, r.Status, r.Body)
		}
	}
	if len(took) != burst || refused != extra {
		t.Fatalf("%d acquired and %d refused, want %d and %d", len(took), refused, burst, extra)
	}
	// A refused acquire wrote nothing: no lock, no audit event, no lease.
	if n := stats(t, s).LocksHeld; n != int64(burst) {
		t.Fatalf("%d lock keys, want the %d acquired", n, burst)
	}
	for k := range s.Keys() {
		for i := burst; i < burst+extra; i++ {
			if strings.Contains(k, fmt.Sprintf("/flood-%d/", i)) || strings.HasSuffix(k, fmt.Sprintf("/flood-%d", i)) {
				t.Errorf("refused acquire left key %s", k)
			}
		}
	}
	if n := len(s.Leases()); n > burst+2 {
		t.Errorf("%d leases for %d locks: refused acquires granted some", n, burst)
	}
}

func TestRateLimit_ProbesAreNeverThrottled(t *testing.T) {
	s := startLimited(t, 1)
	s.Do("GET", "/v1/cluster", "")
	testserver.WantProblem(t, s.Do("GET", "/v1/cluster", ""), http.StatusTooManyRequests, "rate_limited")
	for range 20 {
		for _, p := range []string{"/healthz", "/readyz"} {
			testserver.WantStatus(t, s.Do("GET", p, ""), http.StatusOK)
		}
	}
	// Everything else is limited, metrics included.
	testserver.WantProblem(t, s.Do("GET", "/metrics", ""), http.StatusTooManyRequests, "rate_limited")
}

func TestRateLimit_ProxyHeadersCannotPickAnotherAddress(t *testing.T) {
	s := startLimited(t, 1)
	s.Do("GET", "/v1/cluster", "")
	for i, h := range []string{"X-Forwarded-For", "X-Real-IP"} {
		req, _ := http.NewRequest("GET", s.TS.URL+"/v1/cluster", nil)
		req.Header.Set(h, fmt.Sprintf("203.0.113.%d", i+1))
		resp, err := s.TS.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("with %s: %d, want 429: the header chose a fresh bucket", h, resp.StatusCode)
		}
	}
}

func TestRateLimit_OffByDefaultSoOneAddressMaySendFreely(t *testing.T) {
	s := testserver.Start(t)
	for range 200 {
		testserver.WantStatus(t, s.Do("GET", "/v1/cluster", ""), http.StatusOK)
	}
}
