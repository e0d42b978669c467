package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/testetcd"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/embedetcd"
)

// newEngine starts an engine on a fresh embedded etcd member.
func newEngine(t *testing.T) (*lock.Engine, *embedetcd.Member) {
	t.Helper()
	m := testetcd.Start(t)
	return startEngine(t, m, lock.DefaultConfig()), m
}

func startEngine(t *testing.T, m *embedetcd.Member, cfg lock.Config) *lock.Engine {
	t.Helper()
	e, err := lock.New(context.Background(), m.Client(), cfg)
	if err != nil {
		t.Fatalf("new engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAcquire_SecondAcquireSeesHolder(t *testing.T) {
	e, _ := newEngine(t)
	ctx := ctxT(t)
	l, fresh, err := e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w1"})
	if err != nil || !fresh {
		t.Fatalf("acquire: %v fresh=%v", err, fresh)
	}
	if l.Token <= 0 || l.TTL != 30*time.Second {
		t.Fatalf("bad lock %+v", l)
	}
	_, _, err = e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w2"})
	var he *lock.HeldError
	if !errors.As(err, &he) || he.Holder == nil || he.Holder.Owner != "w1" || he.Holder.Token != l.Token {
		t.Fatalf("second acquire: got %v, want HeldError with holder w1", err)
	}
	if err := e.Release(ctx, "a", l.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	l2, _, err := e.Acquire(ctx, lock.AcquireRequest{Name: "a", Owner: "w2"})
	if err != nil {
		t.Fatalf("reacquire: %v", err)
	}
	if l2.Token <= l.Token {
		t.Fatalf("token did not grow: %d then %d", l.Token, l2.Token)
	}
	evs, _, err := e.History(ctx, lock.HistoryOptions{Lock: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].Type != lock.EventAcquired || evs[1].Type != lock.EventReleased || evs[2].Type != lock.EventAcquired {
		t.Fatalf("history: %+v", evs)
	}
}
