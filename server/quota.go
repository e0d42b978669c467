package server

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/lock"
)

// quotaRefusals counts the requests refused by a credential's quota, by
// credential and quota; the engine's refusals (holds, waiters, sessions)
// are counted where it answers them (countQuota).
type quotaRefusals struct{ *prometheus.CounterVec }

func newQuotaRefusals(reg prometheus.Registerer) quotaRefusals {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "baton_quota_exceeded_total",
		Help: "Requests refused with 429 quota_exceeded, by credential and quota (holds, waiters, sessions, streams, rate).",
	}, []string{"credential", "quota"})
	if reg != nil {
		reg.MustRegister(c)
	}
	return quotaRefusals{c}
}

// count counts err when it is a quota's refusal.
func (q quotaRefusals) count(cred *auth.Credential, err error) {
	if le, ok := quotaError(err); ok {
		q.WithLabelValues(cred.ID, le.Quota).Inc()
	}
}

// enforceQuotas applies the request's credential's rate and streams
// quotas (auth.Quotas), on this node, after authentication has named it:
// 429 quota_exceeded, naming the quota and its limit, before anything
// runs. The rate's quota comes on top of the node's per-credential rate
// limit. It counts every quota refusal, the engine's too.
func enforceQuotas(routes routeTable, reg prometheus.Registerer) echo.MiddlewareFunc {
	refusals := newQuotaRefusals(reg)
	rates := &quotaBuckets{m: map[string]*quotaBucket{}}
	streams := &streamCounts{n: map[string]int{}}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			cred, _ := c.Get(api.AccessKey).(*auth.Credential)
			if cred == nil {
				return next(c)
			}
			q := cred.Quotas
			if q.Rate > 0 {
				if wait := rates.take(cred.ID, q.Rate, q.Burst); wait > 0 {
					refusals.WithLabelValues(cred.ID, "rate").Inc()
					return &lock.LimitError{
						Err: lock.ErrQuotaExceeded, Quota: "rate", Limit: int(math.Ceil(q.Rate)), RetryAfter: wait,
						Reason: fmt.Sprintf("credential %s may send %g requests a second (burst %d), its quota; retry in %d s", cred.ID, q.Rate, burstOf(q), max(1, int64(math.Ceil(wait.Seconds())))),
					}
				}
			}
			if r := routes.of(c); q.Streams > 0 && r != nil && r.Stream {
				if !streams.take(cred.ID, q.Streams) {
					refusals.WithLabelValues(cred.ID, "streams").Inc()
					return &lock.LimitError{
						Err: lock.ErrQuotaExceeded, Quota: "streams", Limit: q.Streams, RetryAfter: streamRetryAfter,
						Reason: fmt.Sprintf("credential %s has %d event streams open on this node, its quota; close one", cred.ID, q.Streams),
					}
				}
				defer streams.give(cred.ID)
			}
			err := next(c)
			if err != nil {
				refusals.count(cred, err)
			}
			return err
		}
	}
}

// quotaError is err's quota refusal, if it is one.
func quotaError(err error) (*lock.LimitError, bool) {
	var le *lock.LimitError
	if errors.As(err, &le) && le.Quota != "" {
		return le, true
	}
	return nil, false
}

// burstOf is the burst a rate quota allows: Burst, or one second's worth.
func burstOf(q auth.Quotas) int {
	if q.Burst > 0 {
		return q.Burst
	}
	return max(1, int(math.Ceil(q.Rate)))
}

// quotaBuckets holds a token bucket per credential with a rate quota.
// Credentials are the auth file's, so the map is bounded by it; a reload
// that changes a credential's quota gives it a new, full bucket.
type quotaBuckets struct {
	mu sync.Mutex
	m  map[string]*quotaBucket
}

type quotaBucket struct {
	rate  float64
	burst int
	lim   *rate.Limiter
}

// take spends a token of id's bucket and returns 0, or, when the bucket
// is empty, spends nothing and returns how long until it holds a token.
func (b *quotaBuckets) take(id string, r float64, burst int) time.Duration {
	burst = burstOf(auth.Quotas{Rate: r, Burst: burst})
	b.mu.Lock()
	qb := b.m[id]
	if qb == nil || qb.rate != r || qb.burst != burst {
		qb = &quotaBucket{rate: r, burst: burst, lim: rate.NewLimiter(rate.Limit(r), burst)}
		b.m[id] = qb
	}
	b.mu.Unlock()
	now := time.Now()
	res := qb.lim.ReserveN(now, 1)
	if wait := res.DelayFrom(now); wait > 0 {
		// Refused requests spend no token: a client that backs off as
		// told gets through.
		res.CancelAt(now)
		return wait
	}
	return 0
}
