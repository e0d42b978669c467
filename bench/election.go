package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"
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

// etcdElectionPrefix starts the etcd-election peer's keys: outside
// baton's prefix, as the etcd-mutex peer's.
const etcdElectionPrefix = "/bench-election/"

// runElection runs the election scenario for baton and its peers.
func (b *bench) runElection(ctx context.Context, res *Results) error {
	if !b.cfg.runs("election") {
		return nil
	}
	n := b.cfg.ContentionClients
	b.log.Info("running", "scenario", "election", "candidates", n)
	var rep contentionReport
	u, err := measuredLoad(ctx, loadSpec{Kind: kindElection, URL: b.url, Clients: n, Duration: b.cfg.Duration, Prefix: "election-"}, &rep)
	if err != nil {
		return fmt.Errorf("election: %w", err)
	}
	res.Election = newContentionResult(n, rep, u)

	b.log.Info("running", "scenario", "etcd-election", "candidates", n)
	rep = contentionReport{}
	u, err = measuredLoad(ctx, loadSpec{Kind: kindEtcdElection, URL: b.etcdURL, Clients: n, Duration: b.cfg.Duration, Prefix: "etcd-election-"}, &rep)
	if err != nil {
		return fmt.Errorf("etcd-election: %w", err)
	}
	res.EtcdElection = newContentionResult(n, rep, u)

	if b.zkServer != nil {
		b.log.Info("running", "scenario", "zookeeper election", "candidates", n)
		if res.ZooKeeperElection, err = b.zookeeperOneLock(ctx, "zookeeper-election-one"); err != nil {
			return fmt.Errorf("zookeeper election: %w", err)
		}
	}
	return nil
}

// genElection is the load generator's side of baton's election scenario.
func genElection(ctx context.Context, spec loadSpec, p *parentConn) error {
	a := newAPI(spec.URL, spec.Clients)
	name := spec.Prefix + "one"
	return contend(ctx, spec, p, func(w int) contender {
		body := acquireBody{TTL: sessionTTL.String(), Wait: contentionWait.String(), Candidate: "candidate-" + strconv.Itoa(w)}.encode()
		return contender{
			take: func(ctx context.Context, _ holdMode) (int64, error) { return a.campaign(ctx, name, body) },
			give: func(ctx context.Context, token int64) error { return a.resign(ctx, name, token) },
		}
	})
}

// campaign leads name, waiting as the body says, and returns the
// leadership's token.
func (a *httpAPI) campaign(ctx context.Context, name string, body []byte) (int64, error) {
	var l struct {
		Token int64 `json:"token"`
	}
	err := a.call(ctx, http.MethodPost, "/v1/elections/"+name+"/campaign", body, http.StatusCreated, &l)
	return l.Token, err
}

func (a *httpAPI) resign(ctx context.Context, name string, token int64) error {
	return a.call(ctx, http.MethodDelete, "/v1/elections/"+name+"/leader?token="+strconv.FormatInt(token, 10), nil, http.StatusNoContent, nil)
}

// genEtcdElection is the load generator's side of the etcd-election peer:
// each candidate's session campaigns on one Election and resigns at once.
// A leadership's token is the revision of the leader's key (Election.Rev).
func genEtcdElection(ctx context.Context, spec loadSpec, p *parentConn) error {
	sessions, closeAll, err := mutexClients(ctx, spec.URL, spec.Clients)
	if err != nil {
		return err
	}
	defer closeAll()
	prefix := etcdElectionPrefix + spec.Prefix + "one"
	err = contend(ctx, spec, p, func(w int) contender {
		e := concurrency.NewElection(sessions[w], prefix)
		value := "candidate-" + strconv.Itoa(w)
		take := func(ctx context.Context, _ holdMode) (int64, error) {
			cctx, cancel := context.WithTimeout(ctx, contentionWait)
			defer cancel()
			if err := e.Campaign(cctx, value); err != nil {
				return 0, fmt.Errorf("campaign %s: %w", prefix, err)
			}
			return e.Rev(), nil
		}
		give := func(ctx context.Context, _ int64) error { return e.Resign(ctx) }
		return contender{take: take, give: give}
	})
	if err != nil {
		return err
	}
	return closeAll()
}

// contend runs spec.Clients workers, each looping on the contender turns
// gives it: take (which waits for its turn) then give at once, as
// genContention's contenders do, and reports their grants as the
// contention scenario does. No take starts after the duration, every take
// started is seen through, and each worker has at least two turns.
func contend(ctx context.Context, spec loadSpec, p *parentConn, turns func(w int) contender) error {
	return contendThen(ctx, spec, p, turns, func(elapsed time.Duration, errs *errorCount, grants []grant) (any, error) {
		return grantReport(elapsed, errs, grants), nil
	})
}

// contendThen is contend with the report report makes of the grants; an
// error from report fails the load generator instead.
func contendThen(ctx context.Context, spec loadSpec, p *parentConn, turns func(w int) contender,
	report func(elapsed time.Duration, errs *errorCount, grants []grant) (any, error)) error {
	cs := make([]contender, spec.Clients)
	for w := range spec.Clients {
		cs[w] = turns(w)
	}
	if err := p.ready(); err != nil {
		return err
	}
	var errs errorCount
	start := time.Now()
	grants := turnsOf(ctx, start, start.Add(spec.Duration), cs, &errs)
	rep, err := report(time.Since(start), &errs, grants)
	if err != nil {
		return err
	}
	return p.report(rep)
}
