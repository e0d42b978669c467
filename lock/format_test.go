package lock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// storageFormat reads meta/format ("" when absent).
func storageFormat(t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), holdtest.Prefix+"meta/format")
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
	ctx := holdtest.Ctx(t)
	before, err := cli.Get(ctx, "none")
	if err != nil {
		t.Fatal(err)
	}
	end()
	w := cli.Watch(ctx, holdtest.Prefix+"audit/"+name+"/", clientv3.WithPrefix(), clientv3.WithRev(before.Header.Revision+1))
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
// keyspace, so no node can misread the newest layout. A hold's acquire
// and release write no pending record there: the trail reads them from
// the lock key's revisions.
func TestFormat_ANewClusterStartsAtTheNewestFormat(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	if got := storageFormat(t, m.Client()); got != "5" {
		t.Fatalf("meta/format = %q on a new cluster, want 5", got)
	}
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "n", Owner: "w"})
	if err := e.Release(holdtest.Ctx(t), "n", l.Token); err != nil {
		t.Fatal(err)
	}
	if evs := holdtest.History(t, e, "n"); len(evs) != 2 || evs[0].Type != lock.EventReleased || evs[1].Type != lock.EventAcquired || evs[1].Token != l.Token {
		t.Fatalf("history %+v, want the acquire and the release", evs)
	}
	if writes := auditWrites(t, m.Client()); len(writes) != 0 {
		t.Fatalf("the acquire and release wrote pending records %v, want none", writes)
	}
}

// auditWrites are the keys written under audit/ so far, as a watch from
// the first revision sees them.
func auditWrites(t *testing.T, cli *clientv3.Client) []string {
	t.Helper()
	end, err := cli.Put(holdtest.Ctx(t), holdtest.Prefix+"audit/~test-end", "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for resp := range cli.Watch(holdtest.Ctx(t), holdtest.Prefix+"audit/", clientv3.WithPrefix(), clientv3.WithRev(1)) {
		if resp.Err() != nil {
			t.Fatal(resp.Err())
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision >= end.Header.Revision {
				return keys
			}
			keys = append(keys, string(ev.Kv.Key))
		}
	}
	t.Fatal("watch ended")
	return nil
}

// TestFormat_AReleaseAtFormat4WritesItsEndOverTheAcquiredRecord: from
// format 2 to 4 a hold's end goes over its acquired record.
func TestFormat_AReleaseAtFormat4WritesItsEndOverTheAcquiredRecord(t *testing.T) {
	e, m := holdtest.NewEngineAtFormat(t, "4")
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "n", Owner: "w"})
	part, version := endWrite(t, m.Client(), "n", func() {
		if err := e.Release(holdtest.Ctx(t), "n", l.Token); err != nil {
			t.Fatal(err)
		}
	})
	if part != "a" || version != 2 {
		t.Fatalf("the release wrote %s at version %d, want the acquired record's second version", part, version)
	}
	if evs := holdtest.History(t, e, "n"); len(evs) != 2 || evs[0].Type != lock.EventReleased || evs[1].Type != lock.EventAcquired || evs[1].Token != l.Token {
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
	ctx := holdtest.Ctx(t)
	if _, err := cli.Put(ctx, holdtest.Prefix+"meta/recorder", "00000000000000000001"); err != nil {
		t.Fatal(err)
	}
	old := holdtest.StartEngine(t, m, lock.DefaultConfig())
	if got := storageFormat(t, cli); got != "" {
		t.Fatalf("meta/format = %q on a cluster an older baton began, want none (format 1)", got)
	}
	release := func(e *lock.Engine, name string) string {
		l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: "w"})
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
	raised := holdtest.StartEngine(t, m, cfg)
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
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: "w", TTL: 30 * time.Second})
		if _, err := cli.Delete(ctx, holdtest.Prefix+"locks/"+name); err != nil {
			t.Fatal(err)
		}
	}

	for _, e := range []*lock.Engine{old, raised} {
		for _, name := range []string{"before", "after", "still-old"} {
			if evs := holdtest.History(t, e, name); len(evs) != 2 || evs[0].Type != lock.EventReleased || evs[1].Type != lock.EventAcquired {
				t.Fatalf("history of %s: %+v, want its acquire and release once", name, evs)
			}
		}
		for _, name := range []string{"expires-old", "expires-new"} {
			poll.Until(t, 10*time.Second, "the expiry of "+name+" in the history", func() bool {
				return len(holdtest.History(t, e, name)) >= 2
			})
			if evs := holdtest.History(t, e, name); len(evs) != 2 || evs[0].Type != lock.EventExpired || evs[1].Type != lock.EventAcquired {
				t.Fatalf("history of %s: %+v, want its acquire and one expiry", name, evs)
			}
		}
	}
	// Every end is indexed and its records deleted: none is left.
	poll.Until(t, 10*time.Second, "the pending records indexed", func() bool {
		return len(holdtest.KeysUnder(t, cli, holdtest.Prefix+"audit/")) == 0
	})
}

// TestFormat_ANodeRefusesAFormatItDoesNotKnow: a node that cannot read the
// cluster's layout must not run over it.
func TestFormat_ANodeRefusesAFormatItDoesNotKnow(t *testing.T) {
	m := testetcd.Start(t)
	if _, err := m.Client().Put(holdtest.Ctx(t), holdtest.Prefix+"meta/format", "6"); err != nil {
		t.Fatal(err)
	}
	e, err := lock.New(holdtest.Ctx(t), m.Client(), lock.DefaultConfig())
	if err == nil {
		e.Close()
		t.Fatal("an engine started over storage format 6")
	}
	if !strings.Contains(err.Error(), "format is 6") {
		t.Fatalf("error %q does not name the format", err)
	}
	cfg := lock.DefaultConfig()
	cfg.StorageFormat = 6
	if err := cfg.Validate(); err == nil {
		t.Fatal("StorageFormat 6 validated")
	}
}

// TestFormat_ACluster4RaisedTo5KeepsEveryEventOnce: holds begun at
// format 4 keep their pending records to their end, whichever node ends
// them, and holds begun at format 5 write none, whichever node ends them:
// while a node started at 4 runs beside one that raised the cluster to 5,
// every acquire, release, handover and expiry is in the history once.
func TestFormat_ACluster4RaisedTo5KeepsEveryEventOnce(t *testing.T) {
	m := testetcd.Start(t)
	cli := m.Client()
	ctx := holdtest.Ctx(t)
	if _, err := cli.Put(ctx, holdtest.Prefix+"meta/format", "4"); err != nil {
		t.Fatal(err)
	}
	old := holdtest.StartEngine(t, m, lock.DefaultConfig())
	expire := func(name string) {
		t.Helper()
		if _, err := cli.Revoke(ctx, lockLease(t, cli, name)); err != nil {
			t.Fatal(err)
		}
	}
	o1 := holdtest.MustAcquire(t, old, lock.AcquireRequest{Name: "old-released-by-new", Owner: "w"})
	holdtest.MustAcquire(t, old, lock.AcquireRequest{Name: "old-expires", Owner: "w"})

	cfg := lock.DefaultConfig()
	cfg.StorageFormat = 5
	raised := holdtest.StartEngine(t, m, cfg)
	if got := storageFormat(t, cli); got != "5" {
		t.Fatalf("meta/format = %q after a node started with StorageFormat 5, want 5", got)
	}
	n1 := holdtest.MustAcquire(t, raised, lock.AcquireRequest{Name: "new-released-by-old", Owner: "w"})
	holdtest.MustAcquire(t, raised, lock.AcquireRequest{Name: "new-expires", Owner: "w"})
	n2 := holdtest.MustAcquire(t, raised, lock.AcquireRequest{Name: "handover", Owner: "w"})
	waited := make(chan *lock.Lock, 1)
	go func() {
		l, _, err := old.Acquire(ctx, lock.AcquireRequest{Name: "handover", Owner: "old-waiter", Wait: 30 * time.Second})
		if err != nil {
			t.Error(err)
		}
		waited <- l
	}()
	poll.Until(t, 10*time.Second, "the old node's waiter queued", func() bool {
		return len(holdtest.KeysUnder(t, cli, holdtest.Prefix+"queue/handover/")) == 1
	})
	for _, end := range []struct {
		e     *lock.Engine
		name  string
		token int64
	}{{raised, "old-released-by-new", o1.Token}, {old, "new-released-by-old", n1.Token}, {raised, "handover", n2.Token}} {
		if err := end.e.Release(ctx, end.name, end.token); err != nil {
			t.Fatal(err)
		}
	}
	w := <-waited
	if w == nil {
		t.FailNow()
	}
	if err := raised.Release(ctx, "handover", w.Token); err != nil {
		t.Fatal(err)
	}
	expire("old-expires")
	expire("new-expires")
	checkOnce(t, cli, []*lock.Engine{old, raised}, map[string][]lock.EventType{
		"old-released-by-new": {lock.EventReleased, lock.EventAcquired},
		"new-released-by-old": {lock.EventReleased, lock.EventAcquired},
		"old-expires":         {lock.EventExpired, lock.EventAcquired},
		"new-expires":         {lock.EventExpired, lock.EventAcquired},
		"handover":            {lock.EventReleased, lock.EventAcquired, lock.EventReleased, lock.EventAcquired},
	})
}

// checkOnce checks that each engine's history of each lock holds the
// events of want, newest first, once, and that no pending record is left.
func checkOnce(t *testing.T, cli *clientv3.Client, engines []*lock.Engine, want map[string][]lock.EventType) {
	t.Helper()
	for _, e := range engines {
		for name, types := range want {
			var got []lock.EventType
			poll.Until(t, 10*time.Second, "the history of "+name, func() bool {
				got = got[:0]
				for _, ev := range holdtest.History(t, e, name) {
					got = append(got, ev.Type)
				}
				return len(got) >= len(types)
			})
			if fmt.Sprint(got) != fmt.Sprint(types) {
				t.Fatalf("history of %s: %v, want %v", name, got, types)
			}
		}
	}
	poll.Until(t, 10*time.Second, "the pending records indexed", func() bool {
		return len(holdtest.KeysUnder(t, cli, holdtest.Prefix+"audit/")) == 0
	})
}
