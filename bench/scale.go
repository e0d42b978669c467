package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
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
func (b *bench) scale(ctx context.Context) (*ScaleResult, error) {
	rssBefore, err := rssBytes()
	if err != nil {
		return nil, err
	}
	// Returns once every lock is held.
	lg, err := startLoadgen(ctx, loadSpec{
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
	defer lg.close()

	var rep scaleReport
	var rssMax int64
	u, err := measured(func() (time.Duration, error) {
		sampling, stopSampling := context.WithCancel(ctx)
		sampled := make(chan error, 1)
		go func() { sampled <- sampleRSS(sampling, &rssMax) }()
		cpu, err := lg.run(&rep)
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
	if err := lg.wait(); err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	return newScaleResult(b.cfg, rep, stats.LocksHeld, rssBefore, rssMax, u), nil
}

// sampleRSS keeps the largest RSS seen in *maxRSS, sampling at once, every
// rssEvery and when ctx ends.
func sampleRSS(ctx context.Context, maxRSS *int64) error {
	t := time.NewTicker(rssEvery)
	defer t.Stop()
	for {
		rss, err := rssBytes()
		if err != nil {
			return err
		}
		*maxRSS = max(*maxRSS, rss)
		select {
		case <-ctx.Done():
			rss, err := rssBytes()
			*maxRSS = max(*maxRSS, rss)
			return err
		case <-t.C:
		}
	}
}

// scaleReport is what the scale load generator reports.
type scaleReport struct {
	Setup      time.Duration `json:"setup"`
	Elapsed    time.Duration `json:"elapsed"`
	Renew      Latency       `json:"renew"`
	Probe      Latency       `json:"probe"`
	Errors     int64         `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
}

// genScale is the load generator's side of scale. It leaves its sessions
// and their locks behind: deleting them would take long and measure
// nothing, scale runs last, and the node is closed right after.
func genScale(ctx context.Context, spec loadSpec, p *parentConn) error {
	a := newAPI(spec.URL, setupClients)
	start := time.Now()
	ids := make([]string, spec.Sessions)
	err := parallel(ctx, setupClients, spec.Sessions, func(ctx context.Context, i int) error {
		var err error
		ids[i], err = a.createSession(ctx, "scale-"+strconv.Itoa(i))
		return err
	})
	if err != nil {
		return fmt.Errorf("create sessions: %w", err)
	}
	// Renewing starts now: taking every lock can outlast a session's TTL.
	var errs errorCount
	r := &renewer{api: a, ids: ids, lat: newLatencies(), errs: &errs}
	renewCtx, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		pace(renewCtx, spec.Renew/time.Duration(len(ids)), r.renew(ctx))
	}()
	defer func() { stopRenewing(); <-renewed }()

	bodies := make([][]byte, len(ids))
	for i, id := range ids {
		bodies[i] = acquireBody{Owner: "scale-" + strconv.Itoa(i), Session: id}.encode()
	}
	err = parallel(ctx, setupClients, spec.Sessions*spec.Locks, func(ctx context.Context, k int) error {
		s, l := k/spec.Locks, k%spec.Locks
		_, err := a.acquire(ctx, spec.Prefix+strconv.Itoa(s)+"-"+strconv.Itoa(l), bodies[s])
		return err
	})
	if err != nil {
		return fmt.Errorf("take locks: %w", err)
	}
	rep := scaleReport{Setup: time.Since(start)}

	if err := p.ready(); err != nil {
		return err
	}
	r.measuring.Store(true)
	measureStart := time.Now()
	probes := newLatencies()
	probeCtx, stopProbing := context.WithTimeout(ctx, spec.Duration)
	defer stopProbing()
	probeBody := acquireBody{Owner: "scale-probe", TTL: sessionTTL.String()}.encode()
	pace(probeCtx, time.Second/probeRate, func(k int, due time.Time) {
		name := spec.Prefix + "probe-" + strconv.Itoa(k)
		token, err := a.acquire(ctx, name, probeBody)
		if err == nil {
			err = a.release(ctx, name, token)
		}
		if err != nil {
			errs.add(err)
			return
		}
		probes.record(time.Since(due))
	})
	r.measuring.Store(false)
	stopRenewing()
	<-renewed
	rep.Elapsed = time.Since(measureStart)
	rep.Renew, rep.Probe = r.lat.summary(), probes.summary()
	rep.Errors, rep.FirstError = errs.n.Load(), errs.first
	return p.report(rep)
}

// renewer renews every session once per period, the sessions' turns
// spread evenly over it, as a fleet of clients on their own timers would.
type renewer struct {
	api  *httpAPI
	ids  []string
	lat  *latencies
	errs *errorCount
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
		if err := r.api.renewSession(ctx, r.ids[k%len(r.ids)]); err != nil {
			r.errs.add(err)
			return
		}
		if counted {
			r.lat.record(time.Since(due))
		}
	}
}
