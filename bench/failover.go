package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/report"
	"github.com/baton-dev/baton/client"
)

// kindFailoverHolder is the load generator that holds the failover
// scenario's lock until it is killed.
const kindFailoverHolder = "failover-holder"

// runFailover runs the failover scenario: a holder process takes a lock
// and keeps it, through the Go client, another client waits for it, and
// the holder is killed with SIGKILL; timed from the kill to the waiter's
// grant. Once with the lock in a session bound to the holder's stream
// (1s grace, baton exec --bind's), once with a lease of its own at the
// least TTL (2s), each Config.FailoverKills times.
func (b *bench) runFailover(ctx context.Context, res *report.Results) error {
	if !b.cfg.runs("failover") {
		return nil
	}
	f := &report.FailoverResult{}
	for _, row := range []report.FailoverRow{{Mode: "stream", Grace: time.Second}, {Mode: "ttl", TTL: 2 * time.Second}} {
		b.log.Info("running", "scenario", "failover", "mode", row.Mode)
		lat := measure.NewLatencies()
		for i := range b.cfg.FailoverKills {
			d, err := b.failoverOnce(ctx, row, i)
			if err != nil {
				return fmt.Errorf("failover, %s, kill %d: %w", row.Mode, i, err)
			}
			lat.Record(d)
		}
		row.Trials, row.Latency = b.cfg.FailoverKills, lat.Summary()
		f.Rows = append(f.Rows, row)
	}
	res.Failover = f
	return nil
}

// failoverOnce starts a holder of a lock of its own, queues a waiter for
// it, kills the holder and returns how long the waiter then waited.
func (b *bench) failoverOnce(ctx context.Context, row report.FailoverRow, i int) (time.Duration, error) {
	name := "failover-" + row.Mode + "-" + strconv.Itoa(i)
	spec := load.Spec{Kind: kindFailoverHolder, URL: b.url, Prefix: name, Session: row.Mode == "stream", Duration: row.Grace + row.TTL}
	holder, err := load.Start(ctx, spec) // ready once it holds the lock
	if err != nil {
		return 0, err
	}
	defer holder.Close()
	a := httpapi.New(b.url, 2)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	granted := make(chan error, 1)
	var (
		at    time.Time
		token int64
	)
	go func() {
		var err error
		token, err = a.Acquire(wctx, name, httpapi.AcquireBody{Owner: "next", Wait: "30s"}.Encode())
		at = time.Now()
		granted <- err
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var l struct {
			Waiters []struct{} `json:"waiters"`
		}
		if err := a.Call(wctx, http.MethodGet, "/v1/locks/"+name, nil, http.StatusOK, &l); err != nil {
			return 0, fmt.Errorf("the waiter in line: %w", err)
		}
		if len(l.Waiters) == 1 {
			break
		}
		select {
		case <-tick.C:
		case <-wctx.Done():
			return 0, fmt.Errorf("the waiter never queued: %w", wctx.Err())
		}
	}
	killed := time.Now()
	holder.Close()
	if err := <-granted; err != nil {
		return 0, fmt.Errorf("the waiter: %w", err)
	}
	// Nothing stays behind for the scenarios after (scale counts locks).
	return at.Sub(killed), a.Release(wctx, name, token)
}

// genFailoverHolder takes spec's lock with the Go client and keeps it
// until the process is killed: in a session bound to its stream, with
// spec.Duration as the grace, or with a lease of its own of that TTL.
func genFailoverHolder(ctx context.Context, spec load.Spec, p *load.Parent) error {
	c, err := client.New(spec.URL)
	if err != nil {
		return err
	}
	o := client.AcquireOptions{Owner: "holder"}
	if spec.Session {
		ss, err := c.OpenStreamSession(ctx, "holder", spec.Duration)
		if err != nil {
			return err
		}
		o.Session = ss.ID()
	} else {
		o.TTL = spec.Duration
	}
	if _, err := c.Acquire(ctx, spec.Prefix, o); err != nil {
		return err
	}
	if err := p.Ready(); err != nil {
		return err
	}
	<-ctx.Done() // held, stream or renewals, until the kill
	return nil
}
