package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/report"
)

// runHolds runs the semaphore and rwlock scenarios (see package contend)
// for baton and, when the zookeeper peer runs, for Curator's recipes.
func (b *bench) runHolds(ctx context.Context, res *report.Results) error {
	n := b.cfg.ContentionClients
	for _, kind := range []string{contend.KindSemaphore, contend.KindRWLock} {
		if !b.cfg.runs(kind) {
			continue
		}
		b.log.Info("running", "scenario", kind, "clients", n)
		var rep contend.HoldsReport
		u, err := load.Measured(ctx, load.Spec{Kind: kind, URL: b.url, Clients: n, Duration: b.cfg.Duration, Prefix: kind + "-"}, &rep)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		baton := report.NewHoldsResult(kind, n, rep, u)
		var peer *report.HoldsResult
		if b.zkServer != nil {
			b.log.Info("running", "scenario", "zookeeper "+kind, "clients", n)
			if peer, err = b.zookeeperHolds(ctx, kind); err != nil {
				return fmt.Errorf("zookeeper %s: %w", kind, err)
			}
		}
		if kind == contend.KindSemaphore {
			res.Semaphore, res.ZooKeeperSemaphore = baton, peer
		} else {
			res.RWLock, res.ZooKeeperRWLock = baton, peer
		}
	}
	return nil
}

// genSemaphore is the load generator's side of baton's semaphore scenario.
func genSemaphore(ctx context.Context, spec load.Spec, p *load.Parent) error {
	a := httpapi.New(spec.URL, spec.Clients)
	name := spec.Prefix + "one"
	counter := contend.NewHoldCounter(contend.SemaphoreLimit)
	return contend.GenerateThen(ctx, spec, p, func(w int) contend.Contender {
		body := httpapi.AcquireBody{Owner: "worker-" + strconv.Itoa(w), TTL: load.SessionTTL.String(), Wait: contend.Wait.String(), Limit: contend.SemaphoreLimit}.Encode()
		return contend.Contender{
			Take: func(ctx context.Context, _ contend.HoldMode) (int64, error) {
				return a.Hold(ctx, "/v1/semaphores/"+name, body)
			},
			Give:  func(ctx context.Context, token int64) error { return a.Unhold(ctx, "/v1/semaphores/"+name, token) },
			Modes: contend.Permits,
		}.Counted(counter, 0)
	}, counter.Report)
}

// genRWLock is the load generator's side of baton's rwlock scenario.
func genRWLock(ctx context.Context, spec load.Spec, p *load.Parent) error {
	a := httpapi.New(spec.URL, spec.Clients)
	path := "/v1/rwlocks/" + spec.Prefix + "one"
	counter := contend.NewHoldCounter(0)
	return contend.GenerateThen(ctx, spec, p, func(w int) contend.Contender {
		body := httpapi.AcquireBody{Owner: "worker-" + strconv.Itoa(w), TTL: load.SessionTTL.String(), Wait: contend.Wait.String()}
		body.Mode = "read"
		read := body.Encode()
		body.Mode = "write"
		write := body.Encode()
		return contend.Contender{
			Take: func(ctx context.Context, m contend.HoldMode) (int64, error) {
				if m == contend.HoldWrite {
					return a.Hold(ctx, path, write)
				}
				return a.Hold(ctx, path, read)
			},
			Give:  func(ctx context.Context, token int64) error { return a.Unhold(ctx, path, token) },
			Modes: contend.RWModes(w),
		}.Counted(counter, contend.RWHold)
	}, counter.Report)
}
