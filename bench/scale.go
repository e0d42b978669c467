package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/report"
)

const (
	// setupClients make the scale scenario's sessions and locks.
	setupClients = 64
	// probeRate is how many acquire+release probes per second run
	// alongside the held locks.
	probeRate = 10
	// rssEvery is how often the scale scenario samples RSS.
	rssEvery = time.Second
)

// scale holds ScaleSessions × ScaleLocks locks for ScaleDuration while
// renewing the sessions on schedule, and samples this process's RSS.
func (b *bench) scale(ctx context.Context) (*report.ScaleResult, error) {
	rssBefore, err := measure.RSSBytes()
	if err != nil {
		return nil, err
	}
	// Returns once every lock is held.
	lg, err := load.Start(ctx, load.Spec{
		Kind:     kindScale,
		URL:      b.url,
		Duration: b.cfg.ScaleDuration,
		Prefix:   "scale-",
		Sessions: b.cfg.ScaleSessions,
		Locks:    b.cfg.ScaleLocks,
		Renew:    b.cfg.ScaleRenew,
	})
	if err != nil {
		return nil, err
	}
	defer lg.Close()

	var rep scaleReport
	var rssMax int64
	u, err := measure.Measured(func() (time.Duration, error) {
		sampling, stopSampling := context.WithCancel(ctx)
		sampled := make(chan error, 1)
		go func() { sampled <- sampleRSS(sampling, &rssMax) }()
		cpu, err := lg.Run(&rep)
		stopSampling()
		if serr := <-sampled; err == nil {
			err = serr
		}
		return cpu, err
	})
	if err != nil {
		return nil, err
	}
	// Counted by etcd, before the sessions (no longer renewed) expire.
	stats, err := b.node.Engine().Stats(ctx)
	if err != nil {
		return nil, fmt.Errorf("count held locks: %w", err)
	}
	if err := lg.Wait(); err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	return newScaleResult(b.cfg, rep, stats.LocksHeld, rssBefore, rssMax, u), nil
}

// newScaleResult is the result of the scale scenario: its generator's
// report, the locks etcd held at its end, and the RSS before it and at
// most during it.
func newScaleResult(cfg Config, r scaleReport, held, rssBefore, rssMax int64, u measure.Spent) *report.ScaleResult {
	const mib = 1 << 20
	return &report.ScaleResult{
		Sessions:          cfg.ScaleSessions,
		LocksPerSession:   cfg.ScaleLocks,
		LocksHeld:         held,
		SetupSeconds:      r.Setup.Seconds(),
		Seconds:           r.Elapsed.Seconds(),
		RSSBeforeMiB:      float64(rssBefore) / mib,
		RSSMaxMiB:         float64(rssMax) / mib,
		Renew:             r.Renew,
		Probe:             r.Probe,
		Cores:             report.NewCPUCores(u),
		RaftEntriesPerSec: report.Per(u.RaftEntries, r.Elapsed.Seconds()),
		Errors:            r.Errors,
		FirstError:        r.FirstError,
		ProbesPerSec:      probeRate,
	}
}

// sampleRSS keeps the largest RSS seen in *maxRSS, sampling at once, every
// rssEvery and when ctx ends.
func sampleRSS(ctx context.Context, maxRSS *int64) error {
	t := time.NewTicker(rssEvery)
	defer t.Stop()
	for {
		rss, err := measure.RSSBytes()
		if err != nil {
			return err
		}
		*maxRSS = max(*maxRSS, rss)
		select {
		case <-ctx.Done():
			rss, err := measure.RSSBytes()
			*maxRSS = max(*maxRSS, rss)
			return err
		case <-t.C:
		}
	}
}

// scaleReport is what the scale load generator reports.
type scaleReport struct {
	Setup      time.Duration   `json:"setup"`
	Elapsed    time.Duration   `json:"elapsed"`
	Renew      measure.Latency `json:"renew"`
	Probe      measure.Latency `json:"probe"`
	Errors     int64           `json:"errors"`
	FirstError string          `json:"first_error,omitempty"`
}

// genScale is the load generator's side of scale. It leaves its sessions
// and their locks behind: deleting them would take long and measure
// nothing, scale runs last, and the node is closed right after.
func genScale(ctx context.Context, spec load.Spec, p *load.Parent) error {
	a := httpapi.New(spec.URL, setupClients)
	start := time.Now()
	ids := make([]string, spec.Sessions)
	err := load.Parallel(ctx, setupClients, spec.Sessions, func(ctx context.Context, i int) error {
		var err error
		ids[i], err = a.CreateSession(ctx, "scale-"+strconv.Itoa(i))
		return err
	})
	if err != nil {
		return fmt.Errorf("create sessions: %w", err)
	}
	// Renewing starts now: taking every lock can outlast a session's TTL.
	var errs measure.ErrorCount
	r := &renewer{api: a, ids: ids, lat: measure.NewLatencies(), errs: &errs}
	renewCtx, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		load.Pace(renewCtx, spec.Renew/time.Duration(len(ids)), r.renew(ctx))
	}()
	defer func() { stopRenewing(); <-renewed }()

	bodies := make([][]byte, len(ids))
	for i, id := range ids {
		bodies[i] = httpapi.AcquireBody{Owner: "scale-" + strconv.Itoa(i), Session: id}.Encode()
	}
	err = load.Parallel(ctx, setupClients, spec.Sessions*spec.Locks, func(ctx context.Context, k int) error {
		s, l := k/spec.Locks, k%spec.Locks
		_, err := a.Acquire(ctx, spec.Prefix+strconv.Itoa(s)+"-"+strconv.Itoa(l), bodies[s])
		return err
	})
	if err != nil {
		return fmt.Errorf("take locks: %w", err)
	}
	rep := scaleReport{Setup: time.Since(start)}

	if err := p.Ready(); err != nil {
		return err
	}
	r.measuring.Store(true)
	measureStart := time.Now()
	probes := measure.NewLatencies()
	probeCtx, stopProbing := context.WithTimeout(ctx, spec.Duration)
	defer stopProbing()
	probeBody := httpapi.AcquireBody{Owner: "scale-probe", TTL: load.SessionTTL.String()}.Encode()
	load.Pace(probeCtx, time.Second/probeRate, func(k int, due time.Time) {
		name := spec.Prefix + "probe-" + strconv.Itoa(k)
		token, err := a.Acquire(ctx, name, probeBody)
		if err == nil {
			err = a.Release(ctx, name, token)
		}
		if err != nil {
			errs.Add(err)
			return
		}
		probes.Record(time.Since(due))
	})
	r.measuring.Store(false)
	stopRenewing()
	<-renewed
	rep.Elapsed = time.Since(measureStart)
	rep.Renew, rep.Probe = r.lat.Summary(), probes.Summary()
	rep.Errors, rep.FirstError = errs.Count(), errs.First()
	return p.Report(rep)
}

// renewer renews every session once per period, the sessions' turns
// spread evenly over it, as a fleet of clients on their own timers would.
type renewer struct {
	api  *httpapi.Client
	ids  []string
	lat  *measure.Latencies
	errs *measure.ErrorCount
	// measuring is set while the measured phase runs: renews scheduled
	// during setup compete with it for CPU and would not say what a
	// steady load costs.
	measuring atomic.Bool
}

// renew returns the function pace calls for the k-th renew; requests run
// under ctx, which outlives the schedule, so the last renews finish.
func (r *renewer) renew(ctx context.Context) func(k int, due time.Time) {
	return func(k int, due time.Time) {
		counted := r.measuring.Load()
		if err := r.api.RenewSession(ctx, r.ids[k%len(r.ids)]); err != nil {
			r.errs.Add(err)
			return
		}
		if counted {
			r.lat.Record(time.Since(due))
		}
	}
}
