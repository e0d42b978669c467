package zookeeper

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/measure"
)

// measured runs load in this process and returns what it spent: the
// server's CPU as the node's, this process's (the clients') as the load
// generator's; the node in this process only idles meanwhile, and nothing
// goes through raft.
func (s *Server) measured(run func() error) (measure.Spent, error) {
	var server time.Duration
	u, err := measure.Measured(func() (time.Duration, error) {
		before, err := measure.ProcCPU(s.PID)
		if err != nil {
			return 0, err
		}
		if err := run(); err != nil {
			return 0, err
		}
		after, err := measure.ProcCPU(s.PID)
		server = after - before
		return 0, err
	})
	u.LoadgenCPU, u.CPU, u.RaftEntries, u.KeyWrites, u.DBBytes = u.CPU, server, 0, 0, 0
	return u, err
}

// Cycles runs the zookeeper peer's throughput at clients for d: each
// worker locks and unlocks a lock name of its own, back to back.
func (s *Server) Cycles(ctx context.Context, clients int, d time.Duration) (load.LoopResult, measure.Spent, error) {
	conns, closeAll, err := zkSessions(ctx, s.Addr, clients)
	if err != nil {
		return load.LoopResult{}, measure.Spent{}, err
	}
	defer closeAll()
	mutexes := make([]zkMutex, clients)
	for w := range mutexes {
		mutexes[w] = zkMutex{conn: conns[w], dir: fmt.Sprintf("%s/zookeeper-%d-%d", zkLocksRoot, clients, w)}
		if err := zkEnsure(conns[w], mutexes[w].dir); err != nil {
			return load.LoopResult{}, measure.Spent{}, err
		}
	}
	var loop load.LoopResult
	u, err := s.measured(func() error {
		loop = load.ClosedLoop(ctx, clients, d, func(ctx context.Context, w, _ int) error {
			h, err := mutexes[w].lock(ctx)
			if err != nil {
				return err
			}
			if h.waits != 0 {
				return fmt.Errorf("lock %s: waited on a lock only this worker takes", mutexes[w].dir)
			}
			return mutexes[w].unlock(h)
		})
		return nil
	})
	if err != nil {
		return load.LoopResult{}, measure.Spent{}, err
	}
	return loop, u, nil
}

// Warm runs the contention loop of clients on the server for d, untimed,
// before any zookeeper scenario. The server is a JVM: it interprets its
// code at first and compiles the hot paths as they run, so a cold
// server's first scenarios measure the JIT (a later scenario of the same
// recipe ran about 25% faster before this warm-up).
func (s *Server) Warm(ctx context.Context, clients int, d time.Duration) error {
	conns, closeAll, err := zkSessions(ctx, s.Addr, clients)
	if err != nil {
		return err
	}
	defer closeAll()
	dir := zkLocksRoot + "/warm-up"
	if err := zkEnsure(conns[0], dir); err != nil {
		return err
	}
	if rep := zkContend(ctx, conns, dir, d); rep.Errors > 0 {
		return fmt.Errorf("warm-up: %d errors, the first: %s", rep.Errors, rep.FirstError)
	}
	return nil
}

// OneLock runs the contention loop of clients for d on the one ZooKeeper
// lock at zkLocksRoot/name: each waits in the recipe's queue, then
// unlocks at once. The sequence number of a hold is its token: holds
// come in its order.
func (s *Server) OneLock(ctx context.Context, clients int, d time.Duration, name string) (contend.Report, measure.Spent, error) {
	conns, closeAll, err := zkSessions(ctx, s.Addr, clients)
	if err != nil {
		return contend.Report{}, measure.Spent{}, err
	}
	defer closeAll()
	dir := zkLocksRoot + "/" + name
	if err := zkEnsure(conns[0], dir); err != nil {
		return contend.Report{}, measure.Spent{}, err
	}
	var rep contend.Report
	u, err := s.measured(func() error {
		rep = zkContend(ctx, conns, dir, d)
		return nil
	})
	if err != nil {
		return contend.Report{}, measure.Spent{}, err
	}
	return rep, u, nil
}

// zkContend is the contention loop on a zkMutex per session.
func zkContend(ctx context.Context, conns []*zk.Conn, dir string, d time.Duration) contend.Report {
	cs := make([]contend.Contender, len(conns))
	for w, conn := range conns {
		m := zkMutex{conn: conn, dir: dir}
		var h zkHold // the worker's hold between its take and give
		cs[w] = contend.Contender{
			Take: func(ctx context.Context, _ contend.HoldMode) (int64, error) {
				wctx, cancel := context.WithTimeout(ctx, contend.Wait)
				defer cancel()
				var err error
				h, err = m.lock(wctx)
				return h.seq, err
			},
			Give: func(context.Context, int64) error { return m.unlock(h) },
		}
	}
	var errs measure.ErrorCount
	start := time.Now()
	grants := contend.Turns(ctx, start, start.Add(d), cs, &errs)
	return contend.GrantReport(time.Since(start), &errs, grants)
}
