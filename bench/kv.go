package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/peer/etcdrecipe"
	"github.com/baton-dev/baton/bench/internal/report"
)

// The load kinds of baton's side of the keys scenario.
const (
	kindKVPut = "kv-put"
	kindKVGet = "kv-get"
)

// kvValue is the value every put of the keys scenario writes: a small
// configuration record, 100 bytes of JSON.
var kvValue = []byte(`{"host":"db-1.internal","port":5432,"pool":32,"replicas":["db-2","db-3"],"tls":true,"v":"1.24.000"}`)

// Watch notification: kvWatches puts on an idle node, kvWatchGap apart.
const (
	kvWatches  = 200
	kvWatchGap = 10 * time.Millisecond
)

// runKV runs the keys scenario: at each client count, puts then gets of
// a key of each worker's own by baton (HTTP, from a load generator),
// etcd's KV over gRPC (from a load generator) and ZooKeeper (setData and
// getData, in this process) when its peer runs; then how soon a watch of
// each hears of a put.
func (b *bench) runKV(ctx context.Context, res *report.Results) error {
	if !b.cfg.runs("kv") {
		return nil
	}
	k := &report.KVResult{ValueBytes: len(kvValue)}
	for _, c := range b.cfg.Clients {
		for _, op := range []string{"put", "get"} {
			b.log.Info("running", "scenario", "kv", "op", op, "clients", c)
			for _, sys := range []string{"baton", "etcd", "zookeeper"} {
				row, ok, err := b.kvRow(ctx, sys, op, c)
				if err != nil {
					return fmt.Errorf("kv %s %s, %d clients: %w", sys, op, c, err)
				}
				if ok {
					k.Rows = append(k.Rows, row)
				}
			}
		}
	}
	b.log.Info("running", "scenario", "kv watch")
	lat, err := b.batonWatchNotify(ctx)
	if err != nil {
		return fmt.Errorf("kv watch, baton: %w", err)
	}
	k.Watch = append(k.Watch, report.KVWait{System: "baton", Latency: lat})
	if lat, err = etcdrecipe.WatchNotify(ctx, b.etcdURL, kvWatches, kvWatchGap); err != nil {
		return fmt.Errorf("kv watch, etcd: %w", err)
	}
	k.Watch = append(k.Watch, report.KVWait{System: "etcd", Latency: lat})
	if b.zkServer != nil {
		if lat, err = b.zkServer.WatchNotify(ctx, kvWatches, kvWatchGap); err != nil {
			return fmt.Errorf("kv watch, zookeeper: %w", err)
		}
		k.Watch = append(k.Watch, report.KVWait{System: "zookeeper", Latency: lat})
	}
	res.KV = k
	return nil
}

// kvRow runs one row of the keys scenario; ok is false for a peer that
// does not run.
func (b *bench) kvRow(ctx context.Context, sys, op string, clients int) (report.KVRow, bool, error) {
	var (
		loop load.LoopResult
		u    measure.Spent
		err  error
	)
	prefix := fmt.Sprintf("kv-%s-%d-", op, clients)
	switch sys {
	case "zookeeper":
		if b.zkServer == nil {
			return report.KVRow{}, false, nil
		}
		loop, u, err = b.zkServer.KV(ctx, op, clients, b.cfg.Duration, kvValue)
	case "etcd":
		kind := etcdrecipe.KindKVPut
		if op == "get" {
			kind = etcdrecipe.KindKVGet
		}
		u, err = load.Measured(ctx, load.Spec{Kind: kind, URL: b.etcdURL, Clients: clients, Duration: b.cfg.Duration, Prefix: prefix, Value: kvValue}, &loop)
	default:
		kind := kindKVPut
		if op == "get" {
			kind = kindKVGet
		}
		path := ""
		if b.cfg.CPUProfileRows {
			path = fmt.Sprintf("%s.kv-%s-%d", b.cfg.CPUProfile, op, clients)
		}
		stop, perr := startCPUProfile(path)
		if perr != nil {
			return report.KVRow{}, false, perr
		}
		u, err = load.Measured(ctx, load.Spec{Kind: kind, URL: b.url, Clients: clients, Duration: b.cfg.Duration, Prefix: prefix, Value: kvValue}, &loop)
		stop()
	}
	if err != nil {
		return report.KVRow{}, false, err
	}
	return report.NewKVRow(sys, op, clients, loop, u), true, nil
}

// genKV is the load generator's side of baton's keys scenario: each
// worker puts (PUT /v1/kv/{key}, unconditional) or reads (GET) a key of
// its own, back to back.
func genKV(ctx context.Context, spec load.Spec, p *load.Parent) error {
	a := httpapi.New(spec.URL, spec.Clients)
	body, err := json.Marshal(struct {
		Value json.RawMessage `json:"value"`
	}{spec.Value})
	if err != nil {
		return err
	}
	paths := make([]string, spec.Clients)
	for w := range paths {
		paths[w] = "/v1/kv/bench/" + load.WorkerLock(spec.Prefix, w)
		if err := a.Call(ctx, http.MethodPut, paths[w], body, http.StatusCreated, nil); err != nil {
			return err
		}
	}
	if err := p.Ready(); err != nil {
		return err
	}
	loop := load.ClosedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, _ int) error {
		if spec.Kind == kindKVGet {
			return a.Call(ctx, http.MethodGet, paths[w], nil, http.StatusOK, nil)
		}
		return a.Call(ctx, http.MethodPut, paths[w], body, http.StatusOK, nil)
	})
	return p.Report(loop)
}

// batonWatchNotify measures how soon GET /v1/kv/events hears of a put on
// an idle node: kvWatches puts, kvWatchGap apart, each timed from just
// before its PUT was sent to its event on the stream.
func (b *bench) batonWatchNotify(ctx context.Context) (measure.Latency, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, b.url+"/v1/kv/events?prefix=bench-watch/", nil)
	if err != nil {
		return measure.Latency{}, err
	}
	if httpapi.Token != "" {
		req.Header.Set("Authorization", "Bearer "+httpapi.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return measure.Latency{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return measure.Latency{}, fmt.Errorf("GET /v1/kv/events: %d", resp.StatusCode)
	}
	arrived := make(chan time.Time, kvWatches)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: put") {
				arrived <- time.Now()
			}
		}
	}()
	a := httpapi.New(b.url, 1)
	body := []byte(`{"value":{"seq":0}}`)
	// The stream is live once a put shows on it.
	if err := a.Call(ctx, http.MethodPut, "/v1/kv/bench-watch/k", body, http.StatusCreated, nil); err != nil {
		return measure.Latency{}, err
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		return measure.Latency{}, fmt.Errorf("the stream showed no put within 10s")
	}
	lat := measure.NewLatencies()
	for range kvWatches {
		time.Sleep(kvWatchGap) // pacing, so that the node is idle when each put comes
		t0 := time.Now()
		if err := a.Call(ctx, http.MethodPut, "/v1/kv/bench-watch/k", body, http.StatusOK, nil); err != nil {
			return measure.Latency{}, err
		}
		select {
		case at := <-arrived:
			lat.Record(at.Sub(t0))
		case <-time.After(10 * time.Second):
			return measure.Latency{}, fmt.Errorf("the stream showed no put within 10s")
		}
	}
	return lat.Summary(), nil
}
