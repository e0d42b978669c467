package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/report"
)

// cycles runs acquire+release cycles, each client on a lock of its own
// (load.WorkerLock), through the HTTP API, in mode "lease" (a lease per lock) or "session" (one session per
// client, made before the clock starts); or, in mode "etcd-gateway",
// through etcd's own lock API on its HTTP gateway, the peer.
func (b *bench) cycles(ctx context.Context, mode string, clients int) (report.CycleResult, error) {
	spec := load.Spec{
		Kind:     kindCycles,
		URL:      b.url,
		Clients:  clients,
		Duration: b.cfg.Duration,
		Prefix:   fmt.Sprintf("%s-%d-", mode, clients),
		Session:  mode == "session",
	}
	if mode == "etcd-gateway" {
		spec.Kind, spec.URL = kindGateway, b.etcdURL
	}
	lg, err := load.Start(ctx, spec)
	if err != nil {
		return report.CycleResult{}, err
	}
	defer lg.Close()
	var loop load.LoopResult
	u, err := measure.Measured(func() (time.Duration, error) { return lg.Run(&loop) })
	if err != nil {
		return report.CycleResult{}, err
	}
	if err := lg.Wait(); err != nil {
		return report.CycleResult{}, fmt.Errorf("load generator: %w", err)
	}
	return report.NewCycleResult(clients, loop, u), nil
}

// genCycles is the load generator's side of cycles.
func genCycles(ctx context.Context, spec load.Spec, p *load.Parent) error {
	a := httpapi.New(spec.URL, spec.Clients)
	bodies := make([][]byte, spec.Clients)
	var sessions []string
	for w := range spec.Clients {
		body := httpapi.AcquireBody{Owner: "bench-" + strconv.Itoa(w)}
		if spec.Session {
			id, err := a.CreateSession(ctx, body.Owner)
			if err != nil {
				return err
			}
			sessions = append(sessions, id)
			body.Session = id
		} else {
			body.TTL = load.SessionTTL.String()
		}
		bodies[w] = body.Encode()
	}
	renewCtx, stopRenewing := context.WithCancel(ctx)
	renewing := make(chan error, 1)
	go func() { renewing <- keepRenewing(renewCtx, sessions, a.RenewSession) }()

	if err := p.Ready(); err != nil {
		stopRenewing()
		return err
	}
	loop := load.ClosedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, _ int) error {
		name := load.WorkerLock(spec.Prefix, w)
		token, err := a.Acquire(ctx, name, bodies[w])
		if err != nil {
			return err
		}
		return a.Release(ctx, name, token)
	})
	stopRenewing()
	if err := <-renewing; err != nil {
		return err
	}
	if err := p.Report(loop); err != nil {
		return err
	}
	// After the report, so the parent's counters stop first, but before
	// exiting, because the parent waits for that: sessions left to expire
	// would be revoked by etcd in the middle of the next scenario.
	for _, id := range sessions {
		if err := a.DeleteSession(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// keepRenewing renews every session with renew a third of its TTL after
// the last renew, as a client would, until ctx ends; it matters only for
// runs longer than that.
func keepRenewing(ctx context.Context, sessions []string, renew func(ctx context.Context, id string) error) error {
	if len(sessions) == 0 {
		return nil
	}
	t := time.NewTicker(load.SessionTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, id := range sessions {
			if err := renew(ctx, id); err != nil && ctx.Err() == nil {
				return fmt.Errorf("renew session %s: %w", id, err)
			}
		}
	}
}

// genGateway is the load generator's side of the etcd-gateway peer: the
// lock+unlock cycles of etcd's v3lock API through etcd's grpc-gateway
// (POST /v3/lock/lock, POST /v3/lock/unlock), all under one lease granted
// before the clock starts, as etcd's own clients share a session's lease.
// etcd's lock waits on the server until it is granted; with a lock per
// client it never waits.
func genGateway(ctx context.Context, spec load.Spec, p *load.Parent) error {
	a := httpapi.New(spec.URL, spec.Clients)
	// One lease for the run; its TTL outlasts it, so no keep-alive runs.
	ttl := int64((spec.Duration + load.SessionTTL) / time.Second)
	var lease struct {
		ID string `json:"ID"`
	}
	if err := a.Call(ctx, http.MethodPost, "/v3/lease/grant", httpapi.MustJSON(map[string]int64{"TTL": ttl}), http.StatusOK, &lease); err != nil {
		return err
	}
	if err := p.Ready(); err != nil {
		return err
	}
	loop := load.ClosedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, _ int) error {
		name := load.WorkerLock(spec.Prefix, w)
		var held struct {
			Key string `json:"key"`
		}
		body := httpapi.MustJSON(map[string]string{"name": base64.StdEncoding.EncodeToString([]byte(name)), "lease": lease.ID})
		if err := a.Call(ctx, http.MethodPost, "/v3/lock/lock", body, http.StatusOK, &held); err != nil {
			return err
		}
		if held.Key == "" {
			return fmt.Errorf("lock %s: etcd answered no key", name)
		}
		return a.Call(ctx, http.MethodPost, "/v3/lock/unlock", httpapi.MustJSON(map[string]string{"key": held.Key}), http.StatusOK, nil)
	})
	if err := p.Report(loop); err != nil {
		return err
	}
	return a.Call(ctx, http.MethodPost, "/v3/lease/revoke", httpapi.MustJSON(map[string]string{"ID": lease.ID}), http.StatusOK, nil)
}
