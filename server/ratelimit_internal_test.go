package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestKeyedLimiter_RetryAfterComesFromTheBucketAndRefusalsSpendNothing(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	lim := newKeyedLimiter(RateLimit{Rate: 2, Burst: 3}, clock.now)
	for i := range 3 {
		if wait := lim.take("a"); wait != 0 {
			t.Fatalf("request %d of a burst of 3 refused (wait %s)", i+1, wait)
		}
	}
	// Empty: the next token comes in 1/2 s.
	if wait := lim.take("a"); wait != 500*time.Millisecond {
		t.Fatalf("wait %s for an empty bucket at 2/s, want 500ms", wait)
	}
	clock.t = clock.t.Add(200 * time.Millisecond)
	if wait := lim.take("a"); wait != 300*time.Millisecond {
		t.Fatalf("wait %s 200ms later, want 300ms: a refusal must not spend a token", wait)
	}
	clock.t = clock.t.Add(300 * time.Millisecond)
	if wait := lim.take("a"); wait != 0 {
		t.Fatalf("refused (wait %s) once the token came", wait)
	}
	// Another key has a bucket of its own.
	if wait := lim.take("b"); wait != 0 {
		t.Fatalf("another client refused (wait %s)", wait)
	}
}

func TestKeyedLimiter_ManyClientsNeverGrowItPastItsCap(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	const maxClients = 100
	lim := newKeyedLimiter(RateLimit{Rate: 1, Burst: 5, MaxClients: maxClients}, clock.now)
	lim.take("victim")
	lim.take("victim")
	for i := range 10 * maxClients {
		lim.take(fmt.Sprintf("10.0.%d.%d", i/256, i%256))
		if n := lim.size(); n > maxClients {
			t.Fatalf("%d buckets after %d clients, want at most %d", n, i+2, maxClients)
		}
	}
	if n := lim.size(); n != maxClients {
		t.Fatalf("%d buckets, want the cap %d", n, maxClients)
	}
	// At the cap the least recently seen bucket went: the victim, which
	// comes back with a full bucket (more lenient, never stricter).
	for i := range 5 {
		if wait := lim.take("victim"); wait != 0 {
			t.Fatalf("evicted client's request %d refused: it should start with a full bucket", i+1)
		}
	}
}

func TestKeyedLimiter_ForgetsBucketsThatRefilled(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	// A bucket of 4 at 2/s refills in 2 s: after that it is as good as new.
	lim := newKeyedLimiter(RateLimit{Rate: 2, Burst: 4}, clock.now)
	for i := range 50 {
		lim.take(strconv.Itoa(i))
	}
	clock.t = clock.t.Add(1900 * time.Millisecond)
	lim.take("late")
	if n := lim.size(); n != 51 {
		t.Fatalf("%d buckets 1.9 s on, want 51: none has refilled yet", n)
	}
	clock.t = clock.t.Add(100 * time.Millisecond)
	lim.take("later")
	if n := lim.size(); n != 2 {
		t.Fatalf("%d buckets once the first 50 refilled, want 2 (late and later)", n)
	}
}

func TestAddressKey_IPv4AloneIPv6ByItsSlash64(t *testing.T) {
	for _, c := range []struct{ ip, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"not an address", "not an address"},
	} {
		if got := addressKey(c.ip); got != c.want {
			t.Errorf("addressKey(%q) = %q, want %q", c.ip, got, c.want)
		}
	}
}

// The auth middleware, when present, sets the credential ID; here a
// stand-in sets it from a test header, in the position server.New gives
// authentication (between the two limits).
func TestRateLimit_PerCredentialLimitsEachCredentialAlone(t *testing.T) {
	e := echo.New()
	e.HTTPErrorHandler = api.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)), errorRows...)
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if id := c.Request().Header.Get("X-Test-Credential"); id != "" {
				c.Set(CredentialKey, id)
			}
			return next(c)
		}
	})
	e.Use(rateLimitByCredential(RateLimit{Rate: 0.01, Burst: 2}, nil))
	ran := 0
	e.GET("/v1/thing", func(c echo.Context) error { ran++; return c.NoContent(http.StatusNoContent) })
	ts := httptest.NewServer(e)
	defer ts.Close()
	get := func(cred string) *http.Response {
		req, _ := http.NewRequest("GET", ts.URL+"/v1/thing", nil)
		if cred != "" {
			req.Header.Set("X-Test-Credential", cred)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for range 2 {
		if r := get("cred-aaaaaaaaaaaa"); r.StatusCode != http.StatusNoContent {
			t.Fatalf("request within the burst: %d", r.StatusCode)
		}
	}
	r := get("cred-aaaaaaaaaaaa")
	var p api.Problem
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	// 0.01/s: the next token is 100 s away, and the header says so.
	if r.StatusCode != http.StatusTooManyRequests || p.Code != "rate_limited" || r.Header.Get("Retry-After") != "100" ||
		p.RetryAfter != 100 || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("over the limit: %d, Retry-After %q, %+v", r.StatusCode, r.Header.Get("Retry-After"), p)
	}
	if ran != 2 {
		t.Fatalf("handler ran %d times, want 2: a refused request must do nothing", ran)
	}
	if r := get("cred-bbbbbbbbbbbb"); r.StatusCode != http.StatusNoContent {
		t.Fatalf("another credential: %d, want its own bucket", r.StatusCode)
	}
	// Without a credential (auth off, or an open route) nothing is limited.
	for range 5 {
		if r := get(""); r.StatusCode != http.StatusNoContent {
			t.Fatalf("request without a credential: %d", r.StatusCode)
		}
	}
}
