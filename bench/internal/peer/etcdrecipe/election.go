package etcdrecipe

import (
	"context"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/load"
)

// etcdElectionPrefix starts the etcd-election peer's keys: outside
// baton's prefix, as the etcd-mutex peer's.
const etcdElectionPrefix = "/bench-election/"

// GenElection is the load generator's side of the etcd-election peer:
// each candidate's session campaigns on one Election and resigns at once.
// A leadership's token is the revision of the leader's key (Election.Rev).
func GenElection(ctx context.Context, spec load.Spec, p *load.Parent) error {
	sessions, closeAll, err := mutexClients(ctx, spec.URL, spec.Clients)
	if err != nil {
		return err
	}
	defer closeAll()
	prefix := etcdElectionPrefix + spec.Prefix + "one"
	err = contend.Generate(ctx, spec, p, func(w int) contend.Contender {
		e := concurrency.NewElection(sessions[w], prefix)
		value := "candidate-" + strconv.Itoa(w)
		take := func(ctx context.Context, _ contend.HoldMode) (int64, error) {
			cctx, cancel := context.WithTimeout(ctx, contend.Wait)
			defer cancel()
			if err := e.Campaign(cctx, value); err != nil {
				return 0, fmt.Errorf("campaign %s: %w", prefix, err)
			}
			return e.Rev(), nil
		}
		give := func(ctx context.Context, _ int64) error { return e.Resign(ctx) }
		return contend.Contender{Take: take, Give: give}
	})
	if err != nil {
		return err
	}
	return closeAll()
}
