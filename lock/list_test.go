package lock_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/tests/testetcd"
	"github.com/baton-dev/baton/trail"
)

func lockNames(ls []*lock.Lock) []string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return names
}

func TestList_PrefixAndPagingSortedByName(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	// Acquired out of order, and with names that sort around the prefix.
	all := []string{"app:c", "db:x", "app:a", "app-z", "app:b", "app:d", "app", "apq"}
	tokens := map[string]int64{}
	for i, n := range all {
		tokens[n] = holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: owner(i)}).Token
	}
	sorted := slices.Clone(all)
	slices.Sort(sorted)

	ls, next, err := e.List(ctx, lock.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lockNames(ls), sorted) || next != "" {
		t.Fatalf("list all = %v next %q, want %v", lockNames(ls), next, sorted)
	}
	for _, l := range ls {
		if l.Token != tokens[l.Name] || l.ExpiresAt.IsZero() || l.TTL != 30*time.Second {
			t.Fatalf("listed %+v, want token %d, TTL and expiry", l, tokens[l.Name])
		}
	}

	cases := []struct {
		name   string
		prefix string
		limit  int
		pages  [][]string
	}{
		{"prefix in one page", "app:", 0, [][]string{{"app:a", "app:b", "app:c", "app:d"}}},
		{"prefix in pages of 3", "app:", 3, [][]string{{"app:a", "app:b", "app:c"}, {"app:d"}}},
		{"prefix in pages of 2, last page full", "app:", 2, [][]string{{"app:a", "app:b"}, {"app:c", "app:d"}}},
		{"prefix that is itself a lock", "app", 4, [][]string{{"app", "app-z", "app:a", "app:b"}, {"app:c", "app:d"}}},
		{"prefix matching nothing", "zzz", 2, [][]string{{}}},
		{"everything in pages of 1", "", 1, func() [][]string {
			var p [][]string
			for _, n := range sorted {
				p = append(p, []string{n})
			}
			return p
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkListPages(t, e, tc.prefix, tc.limit, tc.pages) })
	}
	// A cursor from another prefix does not widen the listing.
	ls, _, err = e.List(ctx, lock.ListOptions{Prefix: "app:", After: "db:x"})
	if err != nil || len(ls) != 0 {
		t.Fatalf("list app: after db:x = %v, %v; want nothing", lockNames(ls), err)
	}
	ls, _, err = e.List(ctx, lock.ListOptions{Prefix: "app:", After: "a"})
	if err != nil || !slices.Equal(lockNames(ls), []string{"app:a", "app:b", "app:c", "app:d"}) {
		t.Fatalf("list app: after a = %v, %v", lockNames(ls), err)
	}
	// A released lock drops out.
	if err := e.Release(ctx, "app:b", tokens["app:b"]); err != nil {
		t.Fatal(err)
	}
	ls, _, err = e.List(ctx, lock.ListOptions{Prefix: "app:"})
	if err != nil || !slices.Equal(lockNames(ls), []string{"app:a", "app:c", "app:d"}) {
		t.Fatalf("list after release = %v, %v", lockNames(ls), err)
	}
}

func TestList_SessionLocksShowTheirSession(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w1", 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"s1", "s2"} {
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: "w1", Session: s.ID})
	}
	ls, _, err := e.List(ctx, lock.ListOptions{Prefix: "s"})
	if err != nil || len(ls) != 2 {
		t.Fatalf("list = %v, %v", ls, err)
	}
	for _, l := range ls {
		if l.Session != s.ID || l.TTL != s.TTL || l.ExpiresAt.After(s.ExpiresAt.Add(time.Second)) || l.ExpiresAt.Before(time.Now().Add(10*time.Second)) {
			t.Fatalf("listed %+v, want session %s, TTL %s, expiry near %v", l, s.ID, s.TTL, s.ExpiresAt)
		}
	}
}

func TestHistory_PagesNewestFirstWithBeforeAndLockFilter(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	// Names chosen so a prefix-based filter would confuse them.
	for round := range 3 {
		for _, n := range []string{"h", "h2", "h.x"} {
			l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: fmt.Sprintf("%s-%d", n, round)})
			if round == 2 && n == "h2" {
				continue // leave one hold open
			}
			if err := e.Release(ctx, n, l.Token); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := holdtest.History(t, e, "")
	if len(all) != 17 {
		t.Fatalf("%d events, want 17", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Revision >= all[i-1].Revision {
			t.Fatalf("history not newest first at %d: %d then %d", i, all[i-1].Revision, all[i].Revision)
		}
	}
	if all[0].Lock != "h.x" || all[0].Type != lock.EventReleased || all[0].Owner != "h.x-2" {
		t.Fatalf("newest event = %+v, want h.x released by h.x-2", all[0])
	}

	for _, limit := range []int{1, 2, 5, 17, 100} {
		checkHistoryPages(t, e, limit, all)
	}

	// Before is exclusive: events strictly older than the revision.
	evs, _, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Before: all[3].Revision, Limit: 2})
	if err != nil || len(evs) != 2 || evs[0].Revision != all[4].Revision || evs[1].Revision != all[5].Revision {
		t.Fatalf("before %d = %+v, %v", all[3].Revision, evs, err)
	}

	// Nothing is older than revision 1, etcd's first, filtered or not
	// (etcd reads a maximum mod revision of 0 as no bound at all).
	for _, o := range []trail.HistoryOptions{{Before: 1}, {Before: 1, Lock: "h"}, {Before: 1, Owner: "h-0"}} {
		if evs, next, err := holdtest.TrailOf(e).History(ctx, o); err != nil || len(evs) != 0 || next != 0 {
			t.Fatalf("%+v: %d events, next %d, %v; want none", o, len(evs), next, err)
		}
	}

	// The lock filter keeps exactly that lock's events.
	for name, want := range map[string]int{"h": 6, "h2": 5, "h.x": 6} {
		checkHistoryOfLock(t, e, name, want)
	}
	// Acquired events carry the hold's token, as do the end events.
	h := holdtest.History(t, e, "h")
	for i := 0; i+1 < len(h); i += 2 {
		end, acq := h[i], h[i+1]
		if end.Type != lock.EventReleased || acq.Type != lock.EventAcquired || end.Token != acq.Token || acq.Token != acq.Revision {
			t.Fatalf("hold %d: acquired %+v, released %+v", i/2, acq, end)
		}
	}
	if evs := holdtest.History(t, e, "nothing-here"); len(evs) != 0 {
		t.Fatalf("history of an unknown lock: %+v", evs)
	}
}

// Deleting a session releases its locks in one transaction, so their
// released events share one revision. Paging by revision must not skip
// the ones that did not fit on a page.
func TestHistory_PagingKeepsEventsThatShareARevision(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	s, err := e.CreateSession(ctx, "w1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: fmt.Sprintf("batch-%d", i), Owner: "w1", Session: s.ID})
	}
	if err := e.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "after", Owner: "w2"})
	all := holdtest.History(t, e, "")
	if len(all) != 11 {
		t.Fatalf("%d events, want 11", len(all))
	}
	released := holdtest.EventsOf(all, lock.EventReleased)
	if len(released) != 5 || released[0].Revision != released[4].Revision {
		t.Fatalf("released events %+v: this test assumes they share a revision", released)
	}
	for _, limit := range []int{1, 2, 3, 4, 5, 6, 7} {
		seen := map[string]int{}
		before, n := int64(0), 0
		for pages := 0; ; pages++ {
			if pages > len(all) {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			evs, next, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Limit: limit, Before: before})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 && next != 0 {
				t.Fatalf("limit %d: empty page with a next cursor", limit)
			}
			for _, ev := range evs {
				seen[fmt.Sprintf("%s/%s/%d", ev.Lock, ev.Type, ev.Revision)]++
				n++
			}
			if next == 0 {
				break
			}
			before = next
		}
		if n != len(all) || len(seen) != len(all) {
			t.Fatalf("limit %d: paging returned %d events (%d distinct), want each of %d once: %v", limit, n, len(seen), len(all), seen)
		}
	}
}

func TestHistory_RetentionDropsOldEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	t.Parallel()
	m := testetcd.Start(t)
	tc := trail.DefaultConfig()
	tc.HistoryRetention = 2 * time.Second
	e := holdtest.StartWithTrail(t, m.Client(), lock.DefaultConfig(), tc)
	ctx := holdtest.Ctx(t)
	l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "old", Owner: "w1"})
	if err := e.Release(ctx, "old", l.Token); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	if n := len(holdtest.History(t, e, "")); n != 2 {
		t.Fatalf("%d events right after writing, want 2", n)
	}
	poll.Until(t, 15*time.Second, "old events expire", func() bool {
		return len(holdtest.History(t, e, "")) == 0 && len(holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"audit/")) == 0
	})
	if kept := time.Since(written); kept < 1500*time.Millisecond {
		t.Fatalf("events with a 2s retention vanished after %s", kept)
	}
	// The engine keeps recording once its first history bucket is gone.
	l2 := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "new", Owner: "w2"})
	evs := holdtest.History(t, e, "")
	if len(evs) != 1 || evs[0].Lock != "new" || evs[0].Token != l2.Token {
		t.Fatalf("history after retention = %+v, want only the new acquire", evs)
	}
}

// checkListPages lists the locks under prefix in pages of limit, and
// checks that the pages and their cursors are pages.
func checkListPages(t *testing.T, e *lock.Engine, prefix string, limit int, pages [][]string) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	after := ""
	for i, want := range pages {
		ls, next, err := e.List(ctx, lock.ListOptions{Prefix: prefix, Limit: limit, After: after})
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		if got := lockNames(ls); !slices.Equal(got, want) {
			t.Fatalf("page %d = %v, want %v", i, got, want)
		}
		last := i == len(pages)-1
		if last && next != "" {
			t.Fatalf("last page has cursor %q", next)
		}
		if !last && next != want[len(want)-1] {
			t.Fatalf("page %d cursor %q, want %q", i, next, want[len(want)-1])
		}
		after = next
	}
}

// Revisions of several events (a session's locks, released together by
// its deletion) do not make pages short: each page holds its limit of
// events, or more to end its last revision, whatever the limit.
func TestHistory_PagesAreFullWhenRevisionsHoldManyEvents(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	for k := 1; k <= 6; k++ {
		s, err := e.CreateSession(ctx, fmt.Sprintf("s%d", k), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for i := range k {
			holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: fmt.Sprintf("full-%d-%d", k, i), Owner: "o", Session: s.ID})
		}
		if err := e.DeleteSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		l := holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "single", Owner: "o"})
		if err := e.Release(ctx, "single", l.Token); err != nil {
			t.Fatal(err)
		}
	}
	all := holdtest.History(t, e, "")
	if len(all) != 2*21+12 {
		t.Fatalf("%d events, want %d", len(all), 2*21+12)
	}
	if n := all[2:8]; n[0].Revision != n[5].Revision { // after single's cycle
		t.Fatalf("the newest session's six releases are at revisions %v, want one", eventRevisions(n))
	}
	for limit := 1; limit <= 13; limit++ {
		checkHistoryPages(t, e, limit, all)
	}
}

// checkHistoryPages pages through the whole history in pages of limit,
// and checks that it gets all, newest first.
func checkHistoryPages(t *testing.T, e *lock.Engine, limit int, all []lock.Event) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	var paged []lock.Event
	before := int64(0)
	for pages := 0; ; pages++ {
		if pages > len(all) {
			t.Fatalf("limit %d: paging does not end", limit)
		}
		evs, next, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Limit: limit, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		// Full unless the trail ends, and over the limit only to end
		// the limit-th event's revision.
		if len(evs) > limit && evs[limit-1].Revision != evs[len(evs)-1].Revision {
			t.Fatalf("limit %d: page of %d events at revisions %v", limit, len(evs), eventRevisions(evs))
		}
		paged = append(paged, evs...)
		if next == 0 {
			break
		}
		if len(evs) < limit {
			t.Fatalf("limit %d: a page of %d events before the trail's end", limit, len(evs))
		}
		if next != evs[len(evs)-1].Revision {
			t.Fatalf("limit %d: next_before %d, want the page's oldest revision %d", limit, next, evs[len(evs)-1].Revision)
		}
		before = next
	}
	if len(paged) != len(all) {
		t.Fatalf("limit %d: paging returned %d events, want %d", limit, len(paged), len(all))
	}
	for i := range all {
		if paged[i].Revision != all[i].Revision || paged[i].Type != all[i].Type {
			t.Fatalf("limit %d: event %d = %+v, want %+v", limit, i, paged[i], all[i])
		}
	}
}

func eventRevisions(evs []lock.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Revision
	}
	return out
}

// checkHistoryOfLock checks that the history of name has its want events
// and no other lock's, and pages with the filter.
func checkHistoryOfLock(t *testing.T, e *lock.Engine, name string, want int) {
	t.Helper()
	ctx := holdtest.Ctx(t)
	evs := holdtest.History(t, e, name)
	if len(evs) != want {
		t.Fatalf("%s: %d events, want %d", name, len(evs), want)
	}
	for _, ev := range evs {
		if ev.Lock != name {
			t.Fatalf("filter %s returned %+v", name, ev)
		}
	}
	// Paging works with the filter too.
	page, next, err := holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: name, Limit: 2})
	if err != nil || len(page) != 2 || next != page[1].Revision || page[0].Revision != evs[0].Revision {
		t.Fatalf("%s first page: %+v next %d, %v", name, page, next, err)
	}
	page, _, err = holdtest.TrailOf(e).History(ctx, trail.HistoryOptions{Lock: name, Limit: 2, Before: next})
	if err != nil || len(page) != 2 || page[0].Revision != evs[2].Revision {
		t.Fatalf("%s second page: %+v, %v", name, page, err)
	}
}
