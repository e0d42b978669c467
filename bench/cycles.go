package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// cycles runs acquire+release cycles, each client on a lock of its own
// (workerLock), through the HTTP API, in mode "lease" (a lease per lock) or "session" (one session per
// client, made before the clock starts); or, in mode "etcd-gateway",
// through etcd's own lock API on its HTTP gateway, the peer.
func (b *bench) cycles(ctx context.Context, mode string, clients int) (CycleResult, error) {
	spec := loadSpec{
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
	lg, err := startLoadgen(ctx, spec)
	if err != nil {
		return CycleResult{}, err
	}
	defer lg.close()
	var loop loopResult
	u, err := measured(func() (time.Duration, error) { return lg.run(&loop) })
	if err != nil {
		return CycleResult{}, err
	}
	if err := lg.wait(); err != nil {
		return CycleResult{}, fmt.Errorf("load generator: %w", err)
	}
	return newCycleResult(clients, loop, u), nil
}

// genCycles is the load generator's side of cycles.
func genCycles(ctx context.Context, spec loadSpec, p *parentConn) error {
	a := newAPI(spec.URL, spec.Clients)
	bodies := make([][]byte, spec.Clients)
	var sessions []string
	for w := range spec.Clients {
		body := acquireBody{Owner: "bench-" + strconv.Itoa(w)}
		if spec.Session {
			id, err := a.createSession(ctx, body.Owner)
			if err != nil {
				return err
			}
			sessions = append(sessions, id)
			body.Session = id
		} else {
			body.TTL = sessionTTL.String()
		}
		bodies[w] = body.encode()
	}
	renewCtx, stopRenewing := context.WithCancel(ctx)
	renewing := make(chan error, 1)
	go func() { renewing <- keepRenewing(renewCtx, sessions, a.renewSession) }()

	if err := p.ready(); err != nil {
		stopRenewing()
		return err
	}
	loop := closedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, _ int) error {
		name := workerLock(spec.Prefix, w)
		token, err := a.acquire(ctx, name, bodies[w])
		if err != nil {
			return err
		}
		return a.release(ctx, name, token)
	})
	stopRenewing()
	if err := <-renewing; err != nil {
		return err
	}
	if err := p.report(loop); err != nil {
		return err
	}
	// After the report, so the parent's counters stop first, but before
	// exiting, because the parent waits for that: sessions left to expire
	// would be revoked by etcd in the middle of the next scenario.
	for _, id := range sessions {
		if err := a.deleteSession(ctx, id); err != nil {
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
	t := time.NewTicker(sessionTTL / 3)
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
func genGateway(ctx context.Context, spec loadSpec, p *parentConn) error {
	a := newAPI(spec.URL, spec.Clients)
	// One lease for the run; its TTL outlasts it, so no keep-alive runs.
	ttl := int64((spec.Duration + sessionTTL) / time.Second)
	var lease struct {
		ID string `json:"ID"`
	}
	if err := a.call(ctx, http.MethodPost, "/v3/lease/grant", mustJSON(map[string]int64{"TTL": ttl}), http.StatusOK, &lease); err != nil {
		return err
	}
	if err := p.ready(); err != nil {
		return err
	}
	loop := closedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, _ int) error {
		name := workerLock(spec.Prefix, w)
		var held struct {
			Key string `json:"key"`
		}
		body := mustJSON(map[string]string{"name": base64.StdEncoding.EncodeToString([]byte(name)), "lease": lease.ID})
		if err := a.call(ctx, http.MethodPost, "/v3/lock/lock", body, http.StatusOK, &held); err != nil {
			return err
		}
		if held.Key == "" {
			return fmt.Errorf("lock %s: etcd answered no key", name)
		}
		return a.call(ctx, http.MethodPost, "/v3/lock/unlock", mustJSON(map[string]string{"key": held.Key}), http.StatusOK, nil)
	})
	if err := p.report(loop); err != nil {
		return err
	}
	return a.call(ctx, http.MethodPost, "/v3/lease/revoke", mustJSON(map[string]string{"ID": lease.ID}), http.StatusOK, nil)
}

// mustJSON encodes a map of plain values, which cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
