package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// zkKVRoot holds the znodes of the keys scenario.
const zkKVRoot = "/bench-kv"

// KV runs the keys scenario's op ("put" or "get") at clients for d: each
// worker sets (setData, any version) or reads (getData) a znode of its
// own, value as its data, back to back: what a ZooKeeper user keeping
// configuration in znodes does.
func (s *Server) KV(ctx context.Context, op string, clients int, d time.Duration, value []byte) (load.LoopResult, measure.Spent, error) {
	conns, closeAll, err := zkSessions(ctx, s.Addr, clients)
	if err != nil {
		return load.LoopResult{}, measure.Spent{}, err
	}
	defer closeAll()
	paths := make([]string, clients)
	for w := range paths {
		paths[w] = fmt.Sprintf("%s/%s-%d-%d", zkKVRoot, op, clients, w)
		if err := zkEnsure(conns[w], paths[w]); err != nil {
			return load.LoopResult{}, measure.Spent{}, err
		}
		if _, err := conns[w].Set(paths[w], value, -1); err != nil {
			return load.LoopResult{}, measure.Spent{}, fmt.Errorf("set %s: %w", paths[w], err)
		}
	}
	var loop load.LoopResult
	u, err := s.measured(func() error {
		loop = load.ClosedLoop(ctx, clients, d, func(ctx context.Context, w, _ int) error {
			if op == "get" {
				_, _, err := conns[w].Get(paths[w])
				return err
			}
			_, err := conns[w].Set(paths[w], value, -1)
			return err
		})
		return nil
	})
	return loop, u, err
}

// WatchNotify measures how soon a watch hears of a change on an idle
// server: n times, gap apart, one session sets a znode that another
// watches (an exists watch, set again after each event, as a ZooKeeper
// user re-arms one); each latency runs from just before the setData to
// the watch's event.
func (s *Server) WatchNotify(ctx context.Context, n int, gap time.Duration) (measure.Latency, error) {
	conns, closeAll, err := zkSessions(ctx, s.Addr, 2)
	if err != nil {
		return measure.Latency{}, err
	}
	defer closeAll()
	watcher, writer := conns[0], conns[1]
	path := zkKVRoot + "/watched"
	if err := zkEnsure(writer, path); err != nil {
		return measure.Latency{}, err
	}
	lat := measure.NewLatencies()
	for i := range n {
		_, _, ch, err := watcher.ExistsW(path)
		if err != nil {
			return measure.Latency{}, fmt.Errorf("exists watch: %w", err)
		}
		if err := sleepCtx(ctx, gap); err != nil {
			return measure.Latency{}, err
		}
		t0 := time.Now()
		if _, err := writer.Set(path, fmt.Appendf(nil, `{"seq":%d}`, i), -1); err != nil {
			return measure.Latency{}, fmt.Errorf("set %s: %w", path, err)
		}
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDataChanged {
				return measure.Latency{}, fmt.Errorf("watch of %s: event %v, want a data change", path, ev.Type)
			}
			lat.Record(time.Since(t0))
		case <-time.After(10 * time.Second):
			return measure.Latency{}, errors.New("the watch did not fire within 10s")
		case <-ctx.Done():
			return measure.Latency{}, ctx.Err()
		}
	}
	return lat.Summary(), nil
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
