package etcdrecipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// The load kinds of the keys scenario's etcd peer: Put or Get of a key of
// each worker's own over gRPC, what a Go user of etcd's KV writes.
const (
	KindKVPut = "etcd-kv-put"
	KindKVGet = "etcd-kv-get"
)

// GenKV is the load generator's side of the etcd peer of the keys
// scenario: a client per worker, as the other etcd peers have, each
// putting (or getting) its own key, spec.Prefix and its number, back to
// back. The value is spec.Password's bytes: the keys scenario's value.
func GenKV(ctx context.Context, spec load.Spec, p *load.Parent) error {
	clients := make([]*clientv3.Client, spec.Clients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	value := string(spec.Value)
	for w := range clients {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{spec.URL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return fmt.Errorf("dial etcd %s: %w", spec.URL, err)
		}
		clients[w] = c
		if _, err := c.Put(ctx, kvKey(spec.Prefix, w), value); err != nil {
			return err
		}
	}
	if err := p.Ready(); err != nil {
		return err
	}
	loop := load.ClosedLoop(ctx, spec.Clients, spec.Duration, func(ctx context.Context, w, _ int) error {
		if spec.Kind == KindKVGet {
			_, err := clients[w].Get(ctx, kvKey(spec.Prefix, w))
			return err
		}
		_, err := clients[w].Put(ctx, kvKey(spec.Prefix, w), value)
		return err
	})
	return p.Report(loop)
}

func kvKey(prefix string, w int) string { return fmt.Sprintf("/bench-etcd-kv/%s%d", prefix, w) }

// WatchNotify measures how soon etcd's watch (over gRPC, from endpoint)
// hears of a put on an idle member: n puts, gap apart, by one client,
// watched by another; each latency runs from just before the put to the
// watch's event.
func WatchNotify(ctx context.Context, endpoint string, n int, gap time.Duration) (measure.Latency, error) {
	var cs [2]*clientv3.Client
	for i := range cs {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return measure.Latency{}, fmt.Errorf("dial etcd %s: %w", endpoint, err)
		}
		defer c.Close()
		cs[i] = c
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := "/bench-etcd-kv/watched"
	wch := cs[0].Watch(wctx, key)
	// The watch is open once etcd says so: a progress request's answer
	// comes on it after the watch was created.
	if err := cs[0].RequestProgress(wctx); err != nil {
		return measure.Latency{}, err
	}
	if wr, ok := <-wch; !ok || wr.Err() != nil {
		return measure.Latency{}, fmt.Errorf("watch %s did not open: %v", key, wr.Err())
	}
	lat := measure.NewLatencies()
	for i := range n {
		t := time.NewTimer(gap)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return measure.Latency{}, ctx.Err()
		}
		t0 := time.Now()
		if _, err := cs[1].Put(ctx, key, fmt.Sprintf(`{"seq":%d}`, i)); err != nil {
			return measure.Latency{}, err
		}
		select {
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil || len(wr.Events) == 0 {
				return measure.Latency{}, fmt.Errorf("watch %s: %v", key, wr.Err())
			}
			lat.Record(time.Since(t0))
		case <-time.After(10 * time.Second):
			return measure.Latency{}, errors.New("the watch heard nothing within 10s")
		}
	}
	return lat.Summary(), nil
}
