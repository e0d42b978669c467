package lock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/internal/testetcd"
	"github.com/baton-dev/baton/lock"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// storageFormat reads meta/format ("" when absent).
func storageFormat(t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"meta/format")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// endWrite ends a hold through end, and returns the pending record its end
// wrote, as a watch of audit/ saw it: its key's last part ("a": over the
// acquired record, storage format 2; "e": beside it, format 1) and the
// key's version.
func endWrite(t *testing.T, cli *clientv3.Client, name string, end func()) (part string, version int64) {
	t.Helper()
	ctx := ctxT(t)
	before, err := cli.Get(ctx, "none")
	if err != nil {
		t.Fatal(err)
	}
	end()
	w := cli.Watch(ctx, prefix+"audit/"+name+"/", clientv3.WithPrefix(), clientv3.WithRev(before.Header.Revision+1))
	for resp := range w {
		if resp.Err() != nil {
			t.Fatal(resp.Err())
		}
		for _, ev := range resp.Events {
			if ev.Type == mvccpb.PUT {
				key := string(ev.Kv.Key)
				return key[strings.LastIndex(key, "/")+1:], ev.Kv.Version
			}
		}
	}
	t.Fatal("watch ended")
	return "", 0
}

// TestFormat_ANewClusterStartsAtTheNewestFormat: no baton wrote the
// keyspace, so no node can misread the newest layout.
func TestFormat_ANewClusterStartsAtTheNewestFormat(t *testing.T) {
	e, m := newEngine(t)
	if got := storageFormat(t, m.Client()); got != "4" {
		t.Fatalf("meta/format = %q on a new cluster, want 4", got)
	}
	l := mustAcquire(t, e, lock.AcquireRequest{Name: "n", Owner: "w"})
	part, version := endWrite(t, m.Client(), "n", func() {
		if err := e.Release(ctxT(t), "n", l.Token); err != nil {
			t.Fatal(err)
		}
	})
	if part != "a" || version != 2 {
		t.Fatalf("the release wrote %s at version %d, want the acquired record's second version", part, version)
	}
	if evs := history(t, e, "n"); len(evs) != 2 || evs[0].Type != lock.EventReleased || evs[1].Type != lock.EventAcquired || evs[1].Token != l.Token {
		t.Fatalf("history %+v, want the acquire and the release", evs)
	}
}

// TestFormat_AClusterBegunBeforeMovesOnlyWhenANodeIsToldTo: a keyspace an
// older baton wrote (here, its recorder's cursor) stays at format 1 until
// a node starts with StorageFormat 2; a node already running goes on
// writing format 1, and every end, written either way and released or
// expired, is in the history once.
func TestFormat_AClusterBegunBeforeMovesOnlyWhenANodeIsToldTo(t *testing.T) {
	m := testetcd.Start(t)
	cli := m.Client()
	ctx := ctxT(t)
	if _, err := cli.Put(ctx, prefix+"meta/recorder", "00000000000000000001"); err != nil {
		t.Fatal(err)
	}
	old := startEngine(t, m, lock.DefaultConfig())
	if got := storageFormat(t, cli); got != "" {
		t.Fatalf("meta/format = %q on a cluster an older baton began, want none (format 1)", got)
	}
	release := func(e *lock.Engine, name string) string {
		l := mustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: "w"})
		part, _ := endWrite(t, cli, name, func() {
			if err := e.Release(ctx, name, l.Token); err != nil {
				t.Fatal(err)
			}
		})
		return part
	}
	if part := release(old, "before"); part != "e" {
		t.Fatalf("a release at format 1 wrote %q, want its end record beside the acquired one", part)
	}

	cfg := lock.DefaultConfig()
	cfg.StorageFormat = 2
	raised := startEngine(t, m, cfg)
	if got := storageFormat(t, cli); got != "2" {
		t.Fatalf("meta/format = %q after a node started with StorageFormat 2, want 2", got)
	}
	if part := release(raised, "after"); part != "a" {
		t.Fatalf("a release at format 2 wrote %q, want it over the acquired record", part)
	}
	if part := release(old, "still-old"); part != "e" {
		t.Fatalf("a node started at format 1 wrote %q after another raised it, want format 1 until it restarts", part)
	}
	// An expiry in each format, as etcd makes one: the lock key deleted
	// in a revision of its own. Either node's recorder may record it.
	for name, e := range map[string]*lock.Engine{"expires-old": old, "expires-new": raised} {
		mustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: "w", TTL: 30 * time.Second})
		if _, err := cli.Delete(ctx, prefix+"locks/"+name); err != nil {
			t.Fatal(err)
		}
	}

	for _, e := range []*lock.Engine{old, raised} {
		for _, name := range []string{"before", "after", "still-old"} {
			if evs := history(t, e, name); len(evs) != 2 || evs[0].Type != lock.EventReleased || evs[1].Type != lock.EventAcquired {
				t.Fatalf("history of %s: %+v, want its acquire and release once", name, evs)
			}
		}
		for _, name := range []string{"expires-old", "expires-new"} {
			poll.Until(t, 10*time.Second, "the expiry of "+name+" in the history", func() bool {
				return len(history(t, e, name)) >= 2
			})
			if evs := history(t, e, name); len(evs) != 2 || evs[0].Type != lock.EventExpired || evs[1].Type != lock.EventAcquired {
				t.Fatalf("history of %s: %+v, want its acquire and one expiry", name, evs)
			}
		}
	}
	// Every end is indexed and its records deleted: none is left.
	poll.Until(t, 10*time.Second, "the pending records indexed", func() bool {
		return len(keysUnder(t, cli, prefix+"audit/")) == 0
	})
}

// TestFormat_ANodeRefusesAFormatItDoesNotKnow: a node that cannot read the
// cluster's layout must not run over it.
func TestFormat_ANodeRefusesAFormatItDoesNotKnow(t *testing.T) {
	m := testetcd.Start(t)
	if _, err := m.Client().Put(ctxT(t), prefix+"meta/format", "5"); err != nil {
		t.Fatal(err)
	}
	e, err := lock.New(ctxT(t), m.Client(), lock.DefaultConfig())
	if err == nil {
		e.Close()
		t.Fatal("an engine started over storage format 5")
	}
	if !strings.Contains(err.Error(), "format is 5") {
		t.Fatalf("error %q does not name the format", err)
	}
	cfg := lock.DefaultConfig()
	cfg.StorageFormat = 5
	if err := cfg.Validate(); err == nil {
		t.Fatal("StorageFormat 5 validated")
	}
}
