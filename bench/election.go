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

// The election scenario is the contention scenario's loop on an election:
// every candidate campaigns (waiting in line), and resigns as soon as it
// leads, so each grant is a handover of leadership. Beside baton's run
// its peers': etcd's own Go recipe (clientv3/concurrency's Election,
// Campaign then Resign, a session per candidate) and, when the zookeeper
// peer runs, Curator's LeaderSelector, which takes leadership with the
// lock recipe (InterProcessMutex on the election's path): the zookeeper
// contention loop on a path of its own.
const (
	kindElection     = "election"
	kindEtcdElection = "etcd-election"
)

// runElection runs the election scenario for baton and its peers.
func (b *bench) runElection(ctx context.Context, res *report.Results) error {
	if !b.cfg.runs("election") {
		return nil
	}
	n := b.cfg.ContentionClients
	b.log.Info("running", "scenario", "election", "candidates", n)
	var rep contend.Report
	u, err := load.Measured(ctx, load.Spec{Kind: kindElection, URL: b.url, Clients: n, Duration: b.cfg.Duration, Prefix: "election-"}, &rep)
	if err != nil {
		return fmt.Errorf("election: %w", err)
	}
	res.Election = report.NewContentionResult(n, rep, u)

	b.log.Info("running", "scenario", "etcd-election", "candidates", n)
	rep = contend.Report{}
	u, err = load.Measured(ctx, load.Spec{Kind: kindEtcdElection, URL: b.etcdURL, Clients: n, Duration: b.cfg.Duration, Prefix: "etcd-election-"}, &rep)
	if err != nil {
		return fmt.Errorf("etcd-election: %w", err)
	}
	res.EtcdElection = report.NewContentionResult(n, rep, u)

	if b.zkServer != nil {
		b.log.Info("running", "scenario", "zookeeper election", "candidates", n)
		if res.ZooKeeperElection, err = b.zookeeperOneLock(ctx, "zookeeper-election-one"); err != nil {
			return fmt.Errorf("zookeeper election: %w", err)
		}
	}
	return nil
}

// genElection is the load generator's side of baton's election scenario.
func genElection(ctx context.Context, spec load.Spec, p *load.Parent) error {
	a := httpapi.New(spec.URL, spec.Clients)
	name := spec.Prefix + "one"
	return contend.Generate(ctx, spec, p, func(w int) contend.Contender {
		body := httpapi.AcquireBody{TTL: load.SessionTTL.String(), Wait: contend.Wait.String(), Candidate: "candidate-" + strconv.Itoa(w)}.Encode()
		return contend.Contender{
			Take: func(ctx context.Context, _ contend.HoldMode) (int64, error) { return a.Campaign(ctx, name, body) },
			Give: func(ctx context.Context, token int64) error { return a.Resign(ctx, name, token) },
		}
	})
}
