package trail_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/tests/holdtest"
	"github.com/baton-dev/baton/trail"
)

// TestScope_HistoryAndReplayKeepOnlyTheScopesNames: a view with a Scope
// holds the events of every kind whose names are under its prefixes and
// none other, in history pages (whose byte prefilter must pass what the
// decoded check keeps) and in a replayed stream; an empty Scope holds
// nothing, a nil one everything.
func TestScope_HistoryAndReplayKeepOnlyTheScopesNames(t *testing.T) {
	e, _ := holdtest.NewEngine(t)
	ctx := holdtest.Ctx(t)
	for _, n := range []string{"a.lock", "b.lock"} {
		holdtest.MustAcquire(t, e, lock.AcquireRequest{Name: n, Owner: "w", TTL: time.Minute})
	}
	for _, n := range []string{"a.chair", "b.chair"} {
		if _, _, err := e.Campaign(ctx, lock.CampaignRequest{Name: n, Candidate: "c", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"k/in", "z/out"} {
		if _, err := e.KV().Put(ctx, lock.PutKeyRequest{Key: k, Value: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	tr := holdtest.TrailOf(e)
	names := func(evs []lock.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		scope trail.Scope
		want  []string
	}{
		{trail.Scope{"a.", "k/"}, []string{"a.chair", "a.lock", "k/in"}},
		{trail.Scope{}, nil},
		{nil, []string{"a.chair", "a.lock", "b.chair", "b.lock", "k/in", "z/out"}},
	} {
		evs, _, err := tr.History(ctx, trail.HistoryOptions{Limit: 100, Scope: tc.scope})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(evs); !slices.Equal(got, tc.want) {
			t.Errorf("history with scope %q: %q, want %q", tc.scope, got, tc.want)
		}
		sub, err := tr.Subscribe(ctx, trail.SubscribeOptions{Replay: true, Scope: tc.scope})
		if err != nil {
			t.Fatal(err)
		}
		var got []lock.Event
		for len(got) < len(tc.want) {
			select {
			case ev := <-sub.C:
				got = append(got, ev)
			case <-time.After(10 * time.Second):
				t.Fatalf("replay with scope %q: %d events, want %d", tc.scope, len(got), len(tc.want))
			}
		}
		sub.Close()
		if g := names(got); !slices.Equal(g, tc.want) {
			t.Errorf("replay with scope %q: %q, want %q", tc.scope, g, tc.want)
		}
	}
}
