package main

import (
	"context"
	"fmt"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/peer/zookeeper"
	"github.com/baton-dev/baton/bench/internal/report"
)

// The peers' scenarios, wired to the run: each peer's package runs its
// recipe and measures it, and the results are made here, as baton's are.

// The etcd-mutex peer is etcd's own Go lock recipe, clientv3/concurrency's
// Session and Mutex, over gRPC to the node's member (package etcdrecipe).
const (
	kindEtcdMutex           = "etcd-mutex"
	kindEtcdMutexContention = "etcd-mutex-contention"
)

// runEtcdMutex runs the etcd-mutex peer's cycles at every client count,
// then its contention at ContentionClients.
func (b *bench) runEtcdMutex(ctx context.Context, res *report.Results) error {
	if !b.cfg.runs("etcd-mutex") {
		return nil
	}
	for _, c := range b.cfg.Clients {
		b.log.Info("running", "scenario", "etcd-mutex", "clients", c)
		spec := load.Spec{Kind: kindEtcdMutex, URL: b.etcdURL, Clients: c, Duration: b.cfg.Duration, Prefix: fmt.Sprintf("etcd-mutex-%d-", c)}
		var loop load.LoopResult
		u, err := load.Measured(ctx, spec, &loop)
		if err != nil {
			return fmt.Errorf("etcd-mutex, %d clients: %w", c, err)
		}
		res.EtcdMutex = append(res.EtcdMutex, report.NewCycleResult(c, loop, u))
	}
	n := b.cfg.ContentionClients
	b.log.Info("running", "scenario", "etcd-mutex contention", "clients", n)
	spec := load.Spec{Kind: kindEtcdMutexContention, URL: b.etcdURL, Clients: n, Duration: b.cfg.Duration, Prefix: "etcd-mutex-contention-"}
	var rep contend.Report
	u, err := load.Measured(ctx, spec, &rep)
	if err != nil {
		return fmt.Errorf("etcd-mutex contention: %w", err)
	}
	res.EtcdMutexContention = report.NewContentionResult(n, rep, u)
	return nil
}

// redis runs the redis peer at clients (see package redis): its CPU
// figures are the redis-server process's when it could be found, and it
// has no raft entries.
func (b *bench) redis(ctx context.Context, clients int) (report.CycleResult, error) {
	spec := load.Spec{
		Kind:     kindRedis,
		URL:      b.cfg.Redis,
		Password: b.cfg.RedisPassword,
		Clients:  clients,
		Duration: b.cfg.Duration,
		Prefix:   fmt.Sprintf("redis-%d-", clients),
	}
	loop, u, err := b.redisServer.Cycles(ctx, spec)
	if err != nil {
		return report.CycleResult{}, err
	}
	return report.NewCycleResult(clients, loop, u), nil
}

// zooKeeperPeer starts the zookeeper peer's server when the peer runs.
// Without the package the peer is skipped, and says so, unless -only
// named it (Validate fails then); with no jar at all, it is skipped
// quietly.
func zooKeeperPeer(ctx context.Context, cfg Config) (*zookeeper.Server, error) {
	if !cfg.runs("zookeeper") {
		if err := zookeeper.Installed(cfg.ZooKeeperJar); err != nil && cfg.ZooKeeperJar != "" && len(cfg.Only) == 0 {
			cfg.Logger.Warn("skipping the zookeeper peer", "why", err)
		}
		return nil, nil
	}
	s, err := zookeeper.Start(ctx, cfg.ZooKeeperJar)
	if err != nil {
		return nil, fmt.Errorf("zookeeper peer: %w", err)
	}
	return s, nil
}

// warmZooKeeper warms the zookeeper peer's JVM up with the contention
// loop, untimed, for the run's duration, before any zookeeper scenario.
func (b *bench) warmZooKeeper(ctx context.Context) error {
	return b.zkServer.Warm(ctx, b.cfg.ContentionClients, b.cfg.Duration)
}

// zookeeper runs the zookeeper peer's throughput at clients: each worker
// locks and unlocks a lock name of its own, back to back.
func (b *bench) zookeeper(ctx context.Context, clients int) (report.CycleResult, error) {
	loop, u, err := b.zkServer.Cycles(ctx, clients, b.cfg.Duration)
	if err != nil {
		return report.CycleResult{}, err
	}
	return report.NewCycleResult(clients, loop, u), nil
}

// zookeeperContention runs the contention scenario's clients on one
// ZooKeeper lock: each waits in the recipe's queue, then unlocks at once.
func (b *bench) zookeeperContention(ctx context.Context) (*report.ContentionResult, error) {
	return b.zookeeperOneLock(ctx, "zookeeper-contention-one")
}

// zookeeperOneLock runs the contention scenario's clients on the one
// ZooKeeper lock name.
func (b *bench) zookeeperOneLock(ctx context.Context, name string) (*report.ContentionResult, error) {
	clients := b.cfg.ContentionClients
	rep, u, err := b.zkServer.OneLock(ctx, clients, b.cfg.Duration, name)
	if err != nil {
		return nil, err
	}
	return report.NewContentionResult(clients, rep, u), nil
}

// zookeeperHolds runs the semaphore or rwlock scenario's clients on
// Curator's recipe for it.
func (b *bench) zookeeperHolds(ctx context.Context, kind string) (*report.HoldsResult, error) {
	clients := b.cfg.ContentionClients
	rep, u, err := b.zkServer.Holds(ctx, kind, clients, b.cfg.Duration)
	if err != nil {
		return nil, err
	}
	return report.NewHoldsResult(kind, clients, rep, u), nil
}
