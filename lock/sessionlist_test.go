package lock_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/holdtest"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/lock"
)

// listAll pages through ListSessions with limit, and returns owner/ID
// pairs in the order listed and the number of pages.
func listAll(t *testing.T, e *lock.Engine, prefix string, limit int) ([]string, int) {
	t.Helper()
	var got []string
	after, pages := "", 0
	for {
		page, next, err := e.ListSessions(holdtest.Ctx(t), lock.SessionListOptions{Prefix: prefix, After: after, Limit: limit})
		if err != nil {
			t.Fatalf("list sessions (prefix %q, after %q): %v", prefix, after, err)
		}
		pages++
		for _, s := range page {
			if s.Locks != nil {
				t.Errorf("listed session %s has locks %v; a listing reads none", s.ID, s.Locks)
			}
			if s.ExpiresAt.IsZero() || s.TTL == 0 || s.CreatedAt.IsZero() {
				t.Errorf("listed session %+v lacks its expiry, TTL or creation time", s)
			}
			got = append(got, s.Owner+"/"+s.ID)
		}
		if next == "" {
			return got, pages
		}
		if pages > 100 {
			t.Fatalf("more than 100 pages: the cursor does not advance")
		}
		after = next
	}
}

func TestListSessions_PagesSortedByOwnerAndFiltersByOwnerPrefix(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	var want, wantA []string
	// Two sessions of one owner, so a page boundary falls between IDs of
	// the same owner too; "alpha" and "alphabet" share a prefix.
	for _, o := range []string{"beta", "alpha", "alphabet", "alpha", "gamma worker", "alphabet", "beta"} {
		s, err := e.CreateSession(ctx, o, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, o+"/"+s.ID)
	}
	sortByOwnerThenID(want)
	for _, w := range want {
		if len(w) >= 5 && w[:5] == "alpha" {
			wantA = append(wantA, w)
		}
	}
	for _, limit := range []int{1, 2, 3, 7, 100} {
		got, pages := listAll(t, e, "", limit)
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: listed %v, want %v", limit, got, want)
		}
		if wantPages := (len(want) + limit - 1) / limit; pages != wantPages && pages != wantPages+1 {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
		got, _ = listAll(t, e, "alpha", limit)
		if !slices.Equal(got, wantA) {
			t.Errorf("limit %d, prefix alpha: listed %v, want %v", limit, got, wantA)
		}
	}
	if got, _ := listAll(t, e, "alphabet", 2); len(got) != 2 {
		t.Errorf("prefix alphabet: listed %v, want its 2 sessions", got)
	}
	if got, _ := listAll(t, e, "delta", 10); len(got) != 0 {
		t.Errorf("prefix delta: listed %v, want none", got)
	}
}

// sortByOwnerThenID sorts "owner/id" pairs as the index orders them: by
// owner, then by ID as a string.
func sortByOwnerThenID(pairs []string) {
	slices.SortFunc(pairs, func(a, b string) int {
		ao, ai := splitPair(a)
		bo, bi := splitPair(b)
		if ao != bo {
			if ao < bo {
				return -1
			}
			return 1
		}
		switch {
		case ai < bi:
			return -1
		case ai > bi:
			return 1
		}
		return 0
	})
}

func splitPair(p string) (string, string) {
	i := len(p) - 1
	for p[i] != '/' {
		i--
	}
	return p[:i], p[i+1:]
}

func TestListSessions_DeletedAndExpiredSessionsDisappear(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out TTLs: not in the fast tier")
	}
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	keep, err := e.CreateSession(ctx, "w-keep", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	del, err := e.CreateSession(ctx, "w-del", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lapse, err := e.CreateSession(ctx, "w-lapse", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: "held-by-del", Owner: "w-del", Session: del.ID})
	if got, _ := listAll(t, e, "w-", 10); len(got) != 3 {
		t.Fatalf("listed %v, want 3 sessions", got)
	}
	if err := e.DeleteSession(ctx, del.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := listAll(t, e, "w-", 10)
	if slices.Contains(got, "w-del/"+del.ID) {
		t.Errorf("deleted session still listed: %v", got)
	}
	poll.Until(t, 10*time.Second, "the 2s session to expire and leave the list", func() bool {
		got, _ := listAll(t, e, "w-", 10)
		return !slices.Contains(got, "w-lapse/"+lapse.ID)
	})
	if got, _ := listAll(t, e, "w-", 10); !slices.Equal(got, []string{"w-keep/" + keep.ID}) {
		t.Errorf("listed %v, want only w-keep's session", got)
	}
	// The index entries went with their leases: nothing to clean up.
	if keys := holdtest.KeysUnder(t, m.Client(), holdtest.Prefix+"sessionowners/"); len(keys) != 1 {
		t.Errorf("owner index holds %q, want w-keep's entry only", keys)
	}
}

func TestListSessions_BadOptionsNameTheField(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	for _, c := range []struct {
		o     lock.SessionListOptions
		field string
	}{
		{lock.SessionListOptions{Limit: -1}, "limit"},
		{lock.SessionListOptions{Limit: lock.MaxListLimit + 1}, "limit"},
		{lock.SessionListOptions{After: "no-nul-here"}, "cursor"},
		{lock.SessionListOptions{After: "w1\x00not-hex"}, "cursor"},
		{lock.SessionListOptions{After: "\x00694d2279b4919071"}, "cursor"},
		{lock.SessionListOptions{Prefix: "bad\x01owner"}, "prefix"},
		{lock.SessionListOptions{Prefix: string([]byte{0xff})}, "prefix"},
	} {
		_, _, err := e.ListSessions(ctx, c.o)
		var ie *lock.InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%#v: err = %v, want an InvalidError for %s", c.o, err, c.field)
		}
	}
}

// A session written by a node that kept no owner index (before an
// upgrade) is listed once it is renewed through RenewSession, and not
// before.
func TestListSessions_LegacySessionIsListedFromItsFirstRenew(t *testing.T) {
	e, m := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	cli := m.Client()
	g, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(int64(g.ID), 16)
	rec := fmt.Sprintf(`{"owner":"old-node","ttl":30,"created_at":%q}`, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := cli.Put(ctx, holdtest.Prefix+"sessions/"+id, rec, clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	if got, _ := listAll(t, e, "", 10); len(got) != 0 {
		t.Fatalf("listed %v before the renew, want nothing", got)
	}
	if _, err := e.RenewSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, _ := listAll(t, e, "", 10); !slices.Equal(got, []string{"old-node/" + id}) {
		t.Fatalf("listed %v after the renew, want the legacy session", got)
	}
	if _, err := e.RenewSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if keys := holdtest.KeysUnder(t, cli, holdtest.Prefix+"sessionowners/"); len(keys) != 0 {
		t.Errorf("owner index holds %q after the delete, want nothing", keys)
	}
}
