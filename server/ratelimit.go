package server

import (
	"container/list"
	"math"
	"net/netip"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// RateLimit is a token bucket per client: Rate requests per second on
// average, Burst at once. The zero value is off.
type RateLimit struct {
	// Rate is the sustained requests per second each client may send; 0
	// switches the limit off.
	Rate float64
	// Burst is how many requests a client may send at once after being
	// idle; 0 means one second's worth (Rate, rounded up, at least 1).
	Burst int
	// MaxClients bounds the buckets kept in memory; 0 means
	// DefaultRateLimitClients. At the bound, the bucket of the client
	// seen longest ago is dropped: if it comes back it starts with a full
	// bucket, so a flood of addresses can make the limit more lenient for
	// others, never stricter, and never costs more memory.
	MaxClients int
}

// DefaultRateLimitClients is RateLimit.MaxClients's default: about 250
// bytes a bucket, so some 25 MB at most.
const DefaultRateLimitClients = 100_000

// rateLimitByAddress limits each client address (echo's RealIP under the
// server's IPExtractor, which trusts no proxy header, so a client cannot
// pick its address). IPv6 clients are limited per /64, the block one
// subscriber usually gets: an address each would give one host 2^64
// buckets. It belongs before authentication, so that requests with bad
// credentials are throttled too.
func rateLimitByAddress(l RateLimit, reg prometheus.Registerer) echo.MiddlewareFunc {
	return rateLimit("address", l, reg, func(c echo.Context) string { return addressKey(c.RealIP()) })
}

// rateLimitByCredential limits each credential, after authentication has
// named it; requests without one (auth off, open routes) pass.
func rateLimitByCredential(l RateLimit, reg prometheus.Registerer) echo.MiddlewareFunc {
	return rateLimit("credential", l, reg, func(c echo.Context) string {
		id, _ := c.Get(CredentialKey).(string)
		return id
	})
}

// rateLimit answers 429 rate_limited, with Retry-After, to a request over
// its client's limit, before anything else runs. Probes are exempt: an
// orchestrator must see the truth about the node however busy it is. reg
// (may be nil) receives baton_rate_limited_total and
// baton_rate_limit_clients for the scope.
func rateLimit(scope string, l RateLimit, reg prometheus.Registerer, key func(echo.Context) string) echo.MiddlewareFunc {
	if l.Rate <= 0 {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	lim := newKeyedLimiter(l, time.Now)
	labels := prometheus.Labels{"scope": scope}
	refused := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "baton_rate_limited_total", ConstLabels: labels,
		Help: "Requests refused with 429 rate_limited, by whose limit (address or credential).",
	})
	if reg != nil {
		reg.MustRegister(refused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "baton_rate_limit_clients", ConstLabels: labels,
			Help: "Clients (addresses or credentials) with a token bucket in memory.",
		}, func() float64 { return float64(lim.size()) }))
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			switch c.Request().URL.Path {
			case "/healthz", "/readyz":
				return next(c)
			}
			k := key(c)
			if k == "" {
				return next(c)
			}
			if wait := lim.take(k); wait > 0 {
				refused.Inc()
				return &RateLimitedError{Scope: scope, Wait: wait}
			}
			return next(c)
		}
	}
}

// addressKey is the bucket of a client address: the address itself for
// IPv4, its /64 for IPv6.
func addressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}

// keyedLimiter holds a token bucket per key in bounded memory: a bucket
// unused long enough to have refilled is the same as a new one, so it is
// dropped; and past maxKeys the least recently used bucket goes.
type keyedLimiter struct {
	limit   rate.Limit
	burst   int
	maxKeys int
	idle    time.Duration
	now     func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     list.List // of *bucket, most recently used first
}

type bucket struct {
	key  string
	lim  *rate.Limiter
	seen time.Time
}

func newKeyedLimiter(l RateLimit, now func() time.Time) *keyedLimiter {
	if l.Burst <= 0 {
		l.Burst = max(1, int(math.Ceil(l.Rate)))
	}
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultRateLimitClients
	}
	// Time for an empty bucket to fill up, at least a second so that a
	// high rate does not churn buckets.
	refill := time.Duration(float64(l.Burst) / l.Rate * float64(time.Second))
	return &keyedLimiter{
		limit: rate.Limit(l.Rate), burst: l.Burst, maxKeys: l.MaxClients,
		idle: max(refill, time.Second), now: now,
		entries: map[string]*list.Element{},
	}
}

// take spends a token of key's bucket and returns 0, or, when the bucket
// is empty, spends nothing and returns how long until it holds a token.
func (k *keyedLimiter) take(key string) time.Duration {
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	// Buckets idle long enough are full again: forget them (oldest last).
	for el := k.lru.Back(); el != nil && now.Sub(el.Value.(*bucket).seen) >= k.idle; el = k.lru.Back() {
		k.remove(el)
	}
	el, ok := k.entries[key]
	if ok {
		k.lru.MoveToFront(el)
	} else {
		if k.lru.Len() >= k.maxKeys {
			k.remove(k.lru.Back())
		}
		el = k.lru.PushFront(&bucket{key: key, lim: rate.NewLimiter(k.limit, k.burst)})
		k.entries[key] = el
	}
	b := el.Value.(*bucket)
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		// Refused requests do not spend tokens: a client that backs off
		// as told gets through.
		r.CancelAt(now)
		return wait
	}
	return 0
}

func (k *keyedLimiter) remove(el *list.Element) {
	delete(k.entries, el.Value.(*bucket).key)
	k.lru.Remove(el)
}

// size is how many buckets are held.
func (k *keyedLimiter) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lru.Len()
}
