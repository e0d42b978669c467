package server

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The cache hands out the vectors' own series, past its bound too: every
// request is counted once in the series of its method, route and status.
func TestRequestObservers_CountIntoTheVectorsSeriesBeyondTheCacheBound(t *testing.T) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "r"}, []string{"method", "route", "code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "l"}, []string{"method", "route"})
	obs := &requestObservers{requests: requests, latency: latency, m: map[requestKey]requestObserver{}}
	const methods = maxCachedSeries + 100
	for round := range 3 {
		for i := range methods {
			o := obs.get(requestKey{fmt.Sprintf("M%d", i), "/v1/locks/:name", 200 + i%2})
			o.count.Inc()
			o.latency.Observe(0.001)
		}
		if len(obs.m) != maxCachedSeries {
			t.Fatalf("round %d: %d series cached, want the bound %d", round, len(obs.m), maxCachedSeries)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(requests, latency)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if len(mf.GetMetric()) != methods {
			t.Errorf("%s: %d series, want one per method (%d)", mf.GetName(), len(mf.GetMetric()), methods)
		}
		for _, m := range mf.GetMetric() {
			got := m.GetCounter().GetValue()
			if mf.GetName() == "l" {
				got = float64(m.GetHistogram().GetSampleCount())
			}
			if got != 3 {
				t.Errorf("%s%v: %v, want 3", mf.GetName(), m.GetLabel(), got)
			}
		}
	}
}
