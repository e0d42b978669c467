package main

import (
	"context"
	"fmt"
	"os"

	"github.com/baton-dev/baton/bench/internal/contend"
	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/bench/internal/peer/etcdrecipe"
	"github.com/baton-dev/baton/bench/internal/peer/redis"
)

// The kinds of load a generator makes (load.Spec's Kind); the
// scenarios of one file have theirs beside them.
const (
	kindCycles     = "cycles"
	kindGateway    = "etcd-gateway"
	kindRedis      = "redis"
	kindContention = "contention"
	kindScale      = "scale"
)

// generate makes the load spec names, in a load generator: each kind is
// a scenario's, or a peer's that runs in a generator as baton's do.
func generate(ctx context.Context, spec load.Spec, p *load.Parent) error {
	httpapi.Token = os.Getenv(tokenEnv)
	switch spec.Kind {
	case kindCycles:
		return genCycles(ctx, spec, p)
	case kindGateway:
		return genGateway(ctx, spec, p)
	case kindRedis:
		return redis.GenCycles(ctx, spec, p)
	case kindContention:
		return genContention(ctx, spec, p)
	case kindElection:
		return genElection(ctx, spec, p)
	case kindEtcdElection:
		return etcdrecipe.GenElection(ctx, spec, p)
	case kindEtcdMutex:
		return etcdrecipe.GenCycles(ctx, spec, p)
	case kindEtcdMutexContention:
		return etcdrecipe.GenContention(ctx, spec, p)
	case contend.KindSemaphore:
		return genSemaphore(ctx, spec, p)
	case contend.KindRWLock:
		return genRWLock(ctx, spec, p)
	case kindLockSet, kindOneByOne:
		return genLockSets(ctx, spec, p)
	case kindScale:
		return genScale(ctx, spec, p)
	case kindKVPut, kindKVGet:
		return genKV(ctx, spec, p)
	case kindFailoverHolder:
		return genFailoverHolder(ctx, spec, p)
	case etcdrecipe.KindKVPut, etcdrecipe.KindKVGet:
		return etcdrecipe.GenKV(ctx, spec, p)
	}
	return fmt.Errorf("unknown load kind %q", spec.Kind)
}
