package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/poll"
)

// testdata/datadir-v4.tar.gz is the data dir (data/) of a node of the
// baton of storage format 4, the last whose holds wrote a pending audit
// record for their acquire and their end, made by scripts/make-datadir-v4
// (which runs that baton on loopback). It holds acquire/release cycles on
// three locks, a release that handed a lock to its waiter, a session
// deleted and one expired while each held a lock, a lock expired on its
// own lease, a revoke with a reason and its lock-delay lifted, a fenced
// value reset, an election's campaign, proclaim and resignation, two
// permits of a semaphore, two read holds and a write hold of a read/write
// lock, a lock set; and, left held on a day's lease when the node
// stopped, a lock, a lock in a session, a read/write lock's write hold, a
// semaphore's permit, an election's leadership and a lock set. Its etcd
// had compacted past every revision by then, as an idle member has.
// testdata/datadir-v4-history.json is what that node answered before it
// stopped: its whole GET /v1/history (events, newest first), the holds
// left held (holds) and the requests that end them (releases).

// v4Event is what an event of the format 4 trail must keep across the
// upgrade: eventJSON's fields, and those it leaves out.
type v4Event struct {
	eventJSON
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Time    string `json:"time"`
	Session string `json:"session"`
	Detail  string `json:"detail"`
}

// v4Hold is a hold left held in the data dir, which ends with an End
// event once its release is sent.
type v4Hold struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Token int64  `json:"token"`
	End   string `json:"end"`
}

type v4Release struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body"`
}

type v4Saved struct {
	Events   []v4Event   `json:"events"`
	Holds    []v4Hold    `json:"holds"`
	Releases []v4Release `json:"releases"`
}

// v4Key is what tells an event after the upgrade from another: its
// revision is not known before it happens.
type v4Key struct {
	Type, Kind, Name, Owner string
	Token                   int64
}

func (ev v4Event) key() v4Key {
	return v4Key{ev.Type, ev.Kind, ev.Name, ev.Owner, ev.Token}
}

// TestNode_UpgradeFromAFormat4DataDirKeepsEveryEventOnce starts the node
// on the data dir of a baton of storage format 4, at that format and with
// the format raised to 5 as it starts, where holds write no pending
// record and the trail derives them from etcd's revisions: the trail
// keeps every event of format 4, the holds taken before the upgrade end
// once each, and a cycle after it is recorded once.
func TestNode_UpgradeFromAFormat4DataDirKeepsEveryEventOnce(t *testing.T) {
	var saved v4Saved
	b, err := os.ReadFile("testdata/datadir-v4-history.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &saved); err != nil || len(saved.Events) != 64 || len(saved.Holds) != 7 {
		t.Fatalf("datadir-v4-history.json: %d events, %d holds, %v; want 64 and 7", len(saved.Events), len(saved.Holds), err)
	}
	t.Run("keep format 4", func(t *testing.T) { upgradeV4(t, saved, 0, "4") })
	t.Run("raise to format 5", func(t *testing.T) { upgradeV4(t, saved, 5, "5") })
}

func upgradeV4(t *testing.T, saved v4Saved, format int, wantFormat string) {
	dir := t.TempDir()
	untar(t, "testdata/datadir-v4.tar.gz", dir)
	cfg := testConfig(t)
	cfg.DataDir, cfg.Name = filepath.Join(dir, "data"), "default"
	cfg.StorageFormat = format
	n := start(t, cfg)
	base := "http://" + n.Addr()
	cli := n.Engine().Client()
	if got := storageFormat(t, cli); got != wantFormat {
		t.Fatalf("meta/format %q with StorageFormat %d; want %q", got, format, wantFormat)
	}

	// (a) Every event of the old trail, once, as it was, and nothing else.
	if diff := eventsDiff(v4History(t, base, ""), saved.Events); diff != "" {
		t.Errorf("history after the upgrade, against the old trail:\n%s", diff)
	}
	thingsKeepTheirEvents(t, base, saved.Events)
	// The acquired record of each hold left held, kept until it ends.
	pendingLeft(t, cli, int64(len(saved.Holds)))

	// (b) The holds taken before the upgrade end, and (c) cycles after it,
	// on a lock of the old trail and on a new one.
	for _, r := range saved.Releases {
		var body any
		if len(r.Body) > 0 && string(r.Body) != "null" {
			body = r.Body
		}
		if code := call(t, r.Method, base+r.Path, body, nil); code != 204 {
			t.Fatalf("%s %s: %d; want 204", r.Method, r.Path, code)
		}
	}
	want := make(map[v4Key]int)
	for _, h := range saved.Holds {
		want[v4Key{h.End, h.Kind, h.Name, h.Owner, h.Token}]++
	}
	// While the new hold is held, format 4 keeps its acquired record;
	// format 5 writes none, the trail derives it.
	pending := map[string]int64{"4": 1, "5": 0}[wantFormat]
	for _, name := range []string{"cycle-a", "after-upgrade"} {
		token := cycleV4(t, base, name, "upgraded", func() { pendingLeft(t, cli, pending) })
		want[v4Key{"acquired", "lock", name, "upgraded", token}]++
		want[v4Key{"released", "lock", name, "upgraded", token}]++
	}
	// The index goes in revision order: once the last release is in the
	// trail, so is every event before it.
	poll.Until(t, 10*time.Second, "after-upgrade's release in the trail", func() bool {
		evs := v4History(t, base, "kind=lock&name=after-upgrade")
		return len(evs) > 0 && evs[0].Type == "released"
	})
	got := v4History(t, base, "")
	endedOnce(t, got, saved.Events, want)
	noGaps(t, base)
	poll.Consistently(t, time.Second, "no event added after the last one", func() bool {
		return len(v4History(t, base, "")) == len(got)
	})
	pendingLeft(t, cli, 0)
}

// endedOnce checks the trail got after the holds ended and the cycles
// ran: the old trail as it was, then the events of want, each once.
func endedOnce(t *testing.T, got, old []v4Event, want map[v4Key]int) {
	t.Helper()
	newest := old[0].Revision
	split := slices.IndexFunc(got, func(ev v4Event) bool { return ev.Revision <= newest })
	if split < 0 {
		split = len(got)
	}
	if diff := eventsDiff(got[split:], old); diff != "" {
		t.Errorf("the old trail after the holds ended:\n%s", diff)
	}
	added := make(map[v4Key]int)
	for _, ev := range got[:split] {
		added[ev.key()]++
	}
	for k, n := range want {
		if added[k] != n {
			t.Errorf("%+v is in the trail %d times; want %d", k, added[k], n)
		}
	}
	for k, n := range added {
		if want[k] == 0 {
			t.Errorf("%+v is in the trail %d times; want none", k, n)
		}
	}
	if t.Failed() {
		t.Logf("events after the upgrade:\n%s", eventsText(got[:split]))
	}
}

// thingsKeepTheirEvents checks each thing's history (kind= and name=, a
// read of its own index) against the old trail's events about it.
func thingsKeepTheirEvents(t *testing.T, base string, events []v4Event) {
	t.Helper()
	type thing struct{ kind, name string }
	var things []thing
	for _, ev := range events {
		if th := (thing{ev.Kind, ev.Name}); !slices.Contains(things, th) {
			things = append(things, th)
		}
	}
	for _, th := range things {
		var want []v4Event
		for _, ev := range events {
			if ev.Kind == th.kind && ev.Name == th.name {
				want = append(want, ev)
			}
		}
		q := "kind=" + url.QueryEscape(th.kind) + "&name=" + url.QueryEscape(th.name)
		if diff := eventsDiff(v4History(t, base, q), want); diff != "" {
			t.Errorf("history of %s %s, against the old trail's:\n%s", th.kind, th.name, diff)
		}
	}
}

// v4History reads the whole trail, or what query (without limit and
// before) selects, newest first, following next_before.
func v4History(t *testing.T, base, query string) []v4Event {
	t.Helper()
	var all []v4Event
	before := ""
	for {
		var page struct {
			Events     []v4Event `json:"events"`
			NextBefore int64     `json:"next_before"`
		}
		u := base + "/v1/history?limit=1000&" + query + before
		if code := call(t, "GET", u, nil, &page); code != 200 {
			t.Fatalf("GET %s: %d", u, code)
		}
		all = append(all, page.Events...)
		if page.NextBefore == 0 {
			return all
		}
		before = fmt.Sprintf("&before=%d", page.NextBefore)
	}
}

// cycleV4 acquires the lock name, runs held, releases the lock, and
// returns the token.
func cycleV4(t *testing.T, base, name, owner string, held func()) int64 {
	t.Helper()
	var l lockJSON
	if code := call(t, "POST", base+"/v1/locks/"+name, map[string]string{"owner": owner}, &l); code != 201 {
		t.Fatalf("acquire %s: %d", name, code)
	}
	held()
	if code := call(t, "DELETE", fmt.Sprintf("%s/v1/locks/%s?token=%d", base, name, l.Token), nil, nil); code != 204 {
		t.Fatalf("release %s: %d", name, code)
	}
	return l.Token
}

func storageFormat(t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/baton/meta/format")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// noGaps fails on each gap in the trail: the old trail lost nothing
// (format 4 keeps every event in a pending record until the index holds
// it, and its data dir's etcd compacted only revisions the trail had
// read, bar the index's own writes), so the upgrade must not say it did.
func noGaps(t *testing.T, base string) {
	t.Helper()
	var page struct {
		Events []json.RawMessage `json:"events"`
	}
	if code := call(t, "GET", base+"/v1/history?type=gap", nil, &page); code != 200 {
		t.Fatalf("history of gaps: %d", code)
	}
	for _, gap := range page.Events {
		t.Errorf("a gap in the trail after the upgrade, where no event was lost: %s", gap)
	}
}

// eventsDiff lists the events of want that got lacks, and those got holds
// beyond want (an event twice, one too many); "" when got is want.
func eventsDiff(got, want []v4Event) string {
	if slices.Equal(got, want) {
		return ""
	}
	n := make(map[v4Event]int)
	for _, ev := range want {
		n[ev]++
	}
	for _, ev := range got {
		n[ev]--
	}
	var b strings.Builder
	for _, ev := range want {
		if n[ev] > 0 {
			fmt.Fprintf(&b, "\tlost:  %+v\n", ev)
			n[ev]--
		}
	}
	for _, ev := range got {
		if n[ev] < 0 {
			fmt.Fprintf(&b, "\textra: %+v\n", ev)
			n[ev]++
		}
	}
	if b.Len() == 0 {
		return "\tthe same events in another order:\n" + eventsText(got)
	}
	return b.String()
}

func eventsText(evs []v4Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\t%+v\n", ev)
	}
	return b.String()
}
