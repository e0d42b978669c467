package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

// prefix is DefaultConfig's key prefix; tests read etcd under it directly
// to check what the engine wrote (or did not write).
const prefix = holdtest.Prefix

// The internal tests of package lock start and read the trail through
// these: they cannot import trail, which imports lock.
func init() {
	lock.StartTrail = holdtest.StartTrail
	lock.HistoryOf = func(ctx context.Context, e *lock.Engine, name string) ([]lock.Event, error) {
		evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: name})
		return evs, err
	}
}

// leaseCount is the number of leases etcd holds.
func leaseCount(t *testing.T, cli *clientv3.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Leases(ctx)
	if err != nil {
		t.Fatalf("list leases: %v", err)
	}
	return len(resp.Leases)
}

// keylessLeases counts leases with no key attached but their marker
// (a lease that held a lock keeps it): the idle own leases the engine
// keeps for reuse.
func keylessLeases(t *testing.T, cli *clientv3.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Leases(ctx)
	if err != nil {
		t.Fatalf("list leases: %v", err)
	}
	n := 0
	for _, l := range resp.Leases {
		ttl, err := cli.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())
		if err != nil {
			t.Fatalf("time to live of lease %x: %v", int64(l.ID), err)
		}
		if ttl.TTL > 0 && !slices.ContainsFunc(ttl.Keys, func(k []byte) bool { return !strings.HasPrefix(string(k), holdtest.Prefix+"leases/") }) {
			n++
		}
	}
	return n
}

// lockLease returns the lease the lock key of name is attached to.
func lockLease(t *testing.T, cli *clientv3.Client, name string) clientv3.LeaseID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, holdtest.Prefix+"locks/"+name)
	if err != nil {
		t.Fatalf("get lock key: %v", err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("lock key of %q absent", name)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// remainingTTL is etcd's view of a lease's remaining TTL in seconds
// (rounded down), -1 when the lease is gone.
func remainingTTL(t *testing.T, cli *clientv3.Client, id clientv3.LeaseID) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.TimeToLive(ctx, id)
	if err != nil {
		t.Fatalf("time to live of lease %x: %v", int64(id), err)
	}
	return resp.TTL
}

// isNotHeld reports whether name is free, failing on any other error.
func isNotHeld(t *testing.T, e *lock.Engine, name string) bool {
	t.Helper()
	_, err := e.Get(context.Background(), name)
	if err == nil {
		return false
	}
	if !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("get %q: %v", name, err)
	}
	return true
}

// asHeld returns err as a *HeldError or fails the test.
func asHeld(t *testing.T, err error) *lock.HeldError {
	t.Helper()
	var he *lock.HeldError
	if !errors.Is(err, lock.ErrHeld) || !errors.As(err, &he) {
		t.Fatalf("got %v, want a *lock.HeldError", err)
	}
	return he
}

func owner(i int) string { return fmt.Sprintf("w%02d", i) }
