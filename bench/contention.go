package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/report"
)

// contention runs clients that each loop on one key: acquire with wait,
// release at once.
func (b *bench) contention(ctx context.Context) (*report.ContentionResult, error) {
	lg, err := load.Start(ctx, load.Spec{
		Kind:     kindContention,
		URL:      b.url,
		Clients:  b.cfg.ContentionClients,
		Duration: b.cfg.Duration,
		Prefix:   "contention-",
	})
	if err != nil {
		return nil, err
	}
	defer lg.Close()
	var rep contend.Report
	u, err := measure.Measured(func() (time.Duration, error) { return lg.Run(&rep) })
	if err != nil {
		return nil, err
	}
	if err := lg.Wait(); err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	return report.NewContentionResult(b.cfg.ContentionClients, rep, u), nil
}

// genContention is the load generator's side of contention. Clients are
// goroutines of one process so that every timestamp is on one clock.
func genContention(ctx context.Context, spec load.Spec, p *load.Parent) error {
	a := httpapi.New(spec.URL, spec.Clients)
	name := spec.Prefix + "one"
	return contend.Generate(ctx, spec, p, func(w int) contend.Contender {
		body := httpapi.AcquireBody{Owner: "contender-" + strconv.Itoa(w), TTL: load.SessionTTL.String(), Wait: contend.Wait.String()}.Encode()
		return contend.Contender{
			Take: func(ctx context.Context, _ contend.HoldMode) (int64, error) { return a.Acquire(ctx, name, body) },
			Give: func(ctx context.Context, token int64) error { return a.Release(ctx, name, token) },
		}
	})
}
