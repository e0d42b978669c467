package main

import (
	"context"
	"fmt"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/httpfloor"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/report"
)

// The httpfloor scenarios run package httpfloor's server, in this
// process on the node's etcd client, under the load generators of
// baton's session and contention scenarios.

// runHTTPFloor runs the httpfloor scenario at every client count.
func (b *bench) runHTTPFloor(ctx context.Context, res *report.Results) error {
	for _, c := range b.cfg.Clients {
		if !b.cfg.runs("httpfloor-batched") {
			break
		}
		b.log.Info("running", "scenario", "httpfloor-batched", "clients", c)
		r, err := b.httpFloor(ctx, c, true)
		if err != nil {
			return fmt.Errorf("httpfloor-batched, %d clients: %w", c, err)
		}
		res.HTTPFloorBatched = append(res.HTTPFloorBatched, r)
	}
	if !b.cfg.runs("httpfloor") {
		return nil
	}
	for _, c := range b.cfg.Clients {
		b.log.Info("running", "scenario", "httpfloor", "clients", c)
		r, err := b.httpFloor(ctx, c, false)
		if err != nil {
			return fmt.Errorf("httpfloor, %d clients: %w", c, err)
		}
		res.HTTPFloor = append(res.HTTPFloor, r)
	}
	n := b.cfg.ContentionClients
	b.log.Info("running", "scenario", "httpfloor contention", "clients", n)
	r, err := b.httpFloorContention(ctx, n)
	if err != nil {
		return fmt.Errorf("httpfloor contention: %w", err)
	}
	res.HTTPFloorContention = r
	return nil
}

// httpFloorContention starts a floor server and runs the contention
// scenario's clients against it, acquiring with wait.
func (b *bench) httpFloorContention(ctx context.Context, clients int) (*report.ContentionResult, error) {
	f, err := httpfloor.Start(ctx, b.node.Engine().Client(), false, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	spec := load.Spec{Kind: kindContention, URL: f.URL(), Clients: clients, Duration: b.cfg.Duration, Prefix: "httpfloor-contention-"}
	var rep contend.Report
	u, err := load.Measured(ctx, spec, &rep)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return report.NewContentionResult(clients, rep, u), nil
}

// httpFloor starts a floor server, batching its txns, with
// -floor-records, if batched, runs session-mode cycles against it from a
// load generator, and stops the server.
func (b *bench) httpFloor(ctx context.Context, clients int, batched bool) (report.CycleResult, error) {
	f, err := httpfloor.Start(ctx, b.node.Engine().Client(), batched, b.cfg.FloorRecords)
	if err != nil {
		return report.CycleResult{}, err
	}
	defer f.Close()
	prefix := fmt.Sprintf("httpfloor-%d-", clients)
	if batched {
		prefix = fmt.Sprintf("httpfloor-batched-%d-", clients)
	}
	spec := load.Spec{Kind: kindCycles, URL: f.URL(), Clients: clients, Duration: b.cfg.Duration, Prefix: prefix, Session: true}
	var loop load.LoopResult
	u, err := load.Measured(ctx, spec, &loop)
	if err != nil {
		return report.CycleResult{}, err
	}
	if err := f.Close(); err != nil {
		return report.CycleResult{}, err
	}
	return report.NewCycleResult(clients, loop, u), nil
}
