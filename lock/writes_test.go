package lock_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCycle_WhatASessionHoldWrites pins what one acquire and release in a
// session writes to etcd, the history index's copy included: every key
// is etcd's work on the hot path (docs/PERFORMANCE.md, "What a lock
// cycle writes"), so a new one should be a choice,
// made here on purpose.
//
// From storage format 5 a hold writes no pending record; from format 2
// to 4 one, which its end writes over; in format 1 (a cluster begun before format 2, not raised
// since) two. Each txn of the index (a put of its cursor) writes a lock's
// events in it as one key from format 3, a key an event before, and the
// trail's as one key from format 4, a key a revision before.
func TestCycle_WhatASessionHoldWrites(t *testing.T) {
	for _, format := range []int{1, 3, 4, 5} {
		t.Run(fmt.Sprint("format ", format), func(t *testing.T) {
			e, m := holdtest.NewEngineAtFormat(t, fmt.Sprint(format))
			cycleWrites(t, e, m.Client(), format)
		})
	}
}

// cycleWrites checks the writes of one session cycle of e, at storage
// format format.
func cycleWrites(t *testing.T, e *lock.Engine, cli *clientv3.Client, format int) {
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w", 0)
	if err != nil {
		t.Fatal(err)
	}
	cycle := func(name string) {
		l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: name, Owner: "w", Session: s.ID})
		if err := e.Release(ctx, name, l.Token); err != nil {
			t.Fatal(err)
		}
		if evs := holdtest.History(t, e, name); len(evs) != 2 {
			t.Fatalf("history of %s: %+v, want acquired and released", name, evs)
		}
	}
	cycle("warm") // the index's first bucket and backfill are not a cycle's
	before, err := cli.Get(ctx, "none")
	if err != nil {
		t.Fatal(err)
	}
	cycle("counted") // history waits for the index to take both events in
	after, err := cli.Get(ctx, "none")
	if err != nil {
		t.Fatal(err)
	}

	got, indexTxns := map[string]int{}, 0
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(before.Header.Revision+1))
	for seen := before.Header.Revision; seen < after.Header.Revision; {
		resp, ok := <-w
		if !ok || resp.Err() != nil {
			t.Fatalf("watch: %v", resp.Err())
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision > after.Header.Revision {
				continue
			}
			parts := strings.SplitN(strings.TrimPrefix(string(ev.Kv.Key), prefix), "/", 3)
			what := parts[0]
			if what == "meta" {
				// The index's and recorder's cursors: per batch of
				// events, not per cycle.
				if parts[1] == "history" {
					indexTxns++
				}
				continue
			}
			got[ev.Type.String()+" "+what]++
		}
		seen = resp.Header.Revision
	}
	// The acquire's revision and the release's, or the index's txns
	// that took them: one, or two.
	pendingDeletes, trail, trailname := 1, 2, 2
	if format == 1 {
		pendingDeletes = 2
	}
	if format >= 3 {
		trailname = indexTxns
	}
	if format >= 4 {
		trail = indexTxns
	}
	want := map[string]int{
		"PUT locks": 1, "DELETE locks": 1, // the hold itself
		"PUT audit": 2, "DELETE audit": pendingDeletes, // its two events, pending until indexed
		"PUT trail": trail, "PUT trailname": trailname, // indexed: in revision order, and in the lock's own index
	}
	if format >= 5 { // derived from the lock key's revisions: no pending record
		delete(want, "PUT audit")
		delete(want, "DELETE audit")
	}
	if !maps.Equal(got, want) || indexTxns < 1 || indexTxns > 2 {
		t.Fatalf("one session cycle wrote %v in %d index txns, want %v", got, indexTxns, want)
	}
	t.Logf("the index took the cycle's events in %d txns", indexTxns)
}
