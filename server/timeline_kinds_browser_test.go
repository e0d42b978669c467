package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testbrowser"
	"github.com/baton-dev/baton/tests/testserver"
)

// tkHold is a hold of a semaphore or a read/write lock the test made, as
// the timeline must draw it.
type tkHold struct {
	kind, name, owner, mode string
	token                   int64
}

// tkPath is the API's collection of kind.
func tkPath(kind string) string {
	return map[string]string{"semaphore": "/v1/semaphores/", "rwlock": "/v1/rwlocks/"}[kind]
}

// tkAcquire takes a hold of kind's name for owner, with the JSON fields
// body ("limit" or "mode", …).
func tkAcquire(t *testing.T, s *testserver.Server, kind, name, owner, body string) tkHold {
	t.Helper()
	h := testserver.WantJSON[api.Hold](t, s.Do("POST", tkPath(kind)+name, fmt.Sprintf(`{"owner":%q,"ttl":"60s",%s}`, owner, body)), http.StatusCreated)
	return tkHold{kind: kind, name: name, owner: owner, mode: h.Mode, token: h.Token}
}

func tkRelease(t *testing.T, s *testserver.Server, h tkHold) {
	t.Helper()
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("%s%s?token=%d", tkPath(h.kind), h.name, h.token), ""), http.StatusNoContent)
}

// tkBar is the timeline's bar of h, or null.
func tkBar(h tkHold) string {
	return fmt.Sprintf(`document.querySelector('[data-testid="tl-hold"][data-kind=%q][data-name=%q][data-token="%d"]')`, h.kind, h.name, h.token)
}

// tkRow is the timeline's row of kind's name, or null.
func tkRow(kind, name string) string {
	return fmt.Sprintf(`document.querySelector('[data-testid="tl-row"][data-kind=%q][data-name=%q]')`, kind, name)
}

// tkCell is the text of the busiest table's cell testid for kind's name.
func tkCell(kind, name, testid string) string {
	return fmt.Sprintf(`(document.querySelector('[data-testid="busiest-row"][data-kind=%q][data-name=%q] [data-testid=%q]') || {}).textContent`, kind, name, testid)
}

// tkLabel is the text of the row's label, its tooltip left out.
func tkLabel(kind, name string) string {
	return fmt.Sprintf(`[...%s.querySelector(".tl-label").childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join("")`, tkRow(kind, name))
}

// tkOverlaps lists the pairs of bars of one row that overlap on screen
// (by more than rounding), by their owners and boxes.
const tkOverlaps = `[...document.querySelectorAll('[data-testid="tl-row"]')].flatMap((row) => {
	const bars = [...row.querySelectorAll('[data-testid="tl-hold"]')].map((g) => ({ g, r: g.querySelector(".tl-bar").getBBox() }));
	const apart = (a, b) => a.x + a.width <= b.x + 0.01 || b.x + b.width <= a.x + 0.01 || a.y + a.height <= b.y || b.y + b.height <= a.y;
	const say = (o) => o.g.dataset.owner + " " + [o.r.x, o.r.y, o.r.width, o.r.height].map((v) => v.toFixed(2)).join(",");
	return bars.flatMap((a, i) => bars.slice(i + 1).filter((b) => !apart(a.r, b.r)).map((b) => say(a) + " / " + say(b)));
})`

// TestTimeline_DrawsSemaphoresAndReadWriteLocksInChromium: a semaphore's
// two overlapping permits are two bars in two lanes of its row, labelled
// with its kind and limit; a revoked permit is marked and a permit that
// waited has its wait; a read/write lock's write hold and overlapping
// read holds are drawn with their modes; the busiest table counts each
// thing with its kind; holds taken and ended later appear live.
func TestTimeline_DrawsSemaphoresAndReadWriteLocksInChromium(t *testing.T) {
	s := testserver.Start(t)
	p1 := tkAcquire(t, s, "semaphore", "tk-jobs", "p1", `"limit":2`)
	p2 := tkAcquire(t, s, "semaphore", "tk-jobs", "p2", `"limit":2`)
	w := tkAcquire(t, s, "rwlock", "tk-cat", "w", `"mode":"write"`)
	tkRelease(t, s, w)
	r1 := tkAcquire(t, s, "rwlock", "tk-cat", "r1", `"mode":"read"`)
	r2 := tkAcquire(t, s, "rwlock", "tk-cat", "r2", `"mode":"read"`)
	b := startBrowser(t, s, 1280, 900)
	openDashboard(b, `[data-testid="timeline-svg"] [data-testid="tl-row"]`)
	tkSeeTwoPermitsInTwoLanes(t, b, p1, p2)
	tkSeeTheModes(t, b, w, r1, r2)
	p3 := tkSeeARevokeAndAWait(t, b, p2)
	tkSeeTheBusiest(t, b)
	tkSeeHoldsArriveLive(t, b, r1, p3)
	if o := evalAs[[]string](b, tkOverlaps); len(o) != 0 {
		t.Errorf("bars of one row overlap: %q", o)
	}
	b.screenshot("timeline-kinds.png")
	wantNoReload(t, b, "the timeline must follow the stream")
	b.check(false)
}

// tkSeeTwoPermitsInTwoLanes: p1 and p2, held at once, are bars of the
// semaphore's one row, in lanes 0 and 1, one above the other.
func tkSeeTwoPermitsInTwoLanes(t *testing.T, b *browser, p1, p2 tkHold) {
	t.Helper()
	b.waitFor("the bars of both permits", 10*time.Second, tkBar(p1)+` && `+tkBar(p2))
	if n := evalAs[int](b, `document.querySelectorAll('[data-testid="tl-row"][data-name="tk-jobs"]').length`); n != 1 {
		t.Errorf("tk-jobs has %d rows, want 1", n)
	}
	label := evalAs[string](b, tkLabel("semaphore", "tk-jobs"))
	if label != "semaphore tk-jobs (2)" {
		t.Errorf("the semaphore's row is labelled %q, want %q", label, "semaphore tk-jobs (2)")
	}
	lanes := evalAs[[]string](b, fmt.Sprintf(`[%s, %s].map((g) => g.closest('[data-testid="tl-row"]') === %s ? g.dataset.lane : "elsewhere")`,
		tkBar(p1), tkBar(p2), tkRow("semaphore", "tk-jobs")))
	if strings.Join(lanes, " ") != "0 1" {
		t.Errorf("the permits' lanes are %q, want 0 1 in the semaphore's row", lanes)
	}
	dy := evalAs[float64](b, fmt.Sprintf(`%s.querySelector(".tl-bar").getBBox().y - %s.querySelector(".tl-bar").getBBox().y`, tkBar(p2), tkBar(p1)))
	if dy < 16 {
		t.Errorf("the second permit's bar is %v px below the first, want a lane below", dy)
	}
	if n := evalAs[string](b, tkRow("semaphore", "tk-jobs")+`.dataset.lanes`); n != "2" {
		t.Errorf("the semaphore's row has %s lanes, want 2", n)
	}
}

// tkSeeTheModes: the write hold and the read holds carry their modes in
// their class, label and tooltip; the two readers, held at once, take two
// lanes; the row is labelled with its kind.
func tkSeeTheModes(t *testing.T, b *browser, w, r1, r2 tkHold) {
	t.Helper()
	b.waitFor("the bars of the read/write lock", 10*time.Second, tkBar(w)+` && `+tkBar(r1)+` && `+tkBar(r2))
	if l := evalAs[string](b, tkLabel("rwlock", "tk-cat")); l != "rwlock tk-cat" {
		t.Errorf("the read/write lock's row is labelled %q, want %q", l, "rwlock tk-cat")
	}
	for _, h := range []tkHold{w, r1, r2} {
		const probe = `(() => { const g = %s; return [g.dataset.mode, g.classList.contains("tl-" + g.dataset.mode), g.querySelector("title").textContent]; })()`
		got := evalAs[[]any](b, fmt.Sprintf(probe, tkBar(h)))
		title, _ := got[2].(string)
		if got[0] != h.mode || got[1] != true || !strings.Contains(title, fmt.Sprintf("rwlock tk-cat: %s, token %d, %s", h.owner, h.token, h.mode)) {
			t.Errorf("%s's bar: mode %v, styled %v, tooltip %q; want mode %s styled so, in the tooltip", h.owner, got[0], got[1], title, h.mode)
		}
	}
	// The readers' bars grow with time; in a window of a minute one is
	// soon wide enough for its mode's label.
	b.do("zoom to a minute", 10*time.Second, testbrowser.Click(`[data-testid="timeline-zoom"] button[data-span="1m"]`))
	b.waitFor("r1's bar labelled with its mode", 20*time.Second,
		fmt.Sprintf(`((%s.querySelector(".tl-bar-label") || {}).textContent || "").startsWith("read r1")`, tkBar(r1)))
	lanes := evalAs[[]string](b, fmt.Sprintf(`[%s, %s].map((g) => g.dataset.lane).sort()`, tkBar(r1), tkBar(r2)))
	if strings.Join(lanes, " ") != "0 1" {
		t.Errorf("the readers' lanes are %q, want 0 and 1", lanes)
	}
}

// tkSeeARevokeAndAWait: p3 waits for a permit of the full semaphore; p2
// is revoked, marked so, and p3 is granted, drawn with its wait.
func tkSeeARevokeAndAWait(t *testing.T, b *browser, p2 tkHold) tkHold {
	t.Helper()
	s := b.s
	// A test failing before the grant ends the waiting acquire.
	waited := sendWaiting(t, s, "/v1/semaphores/tk-jobs", `{"limit":2,"owner":"p3","ttl":"60s","wait":"30s"}`)
	poll.Until(t, 10*time.Second, "p3 in the queue of tk-jobs", func() bool {
		return len(testserver.WantJSON[api.Semaphore](t, s.Do("GET", "/v1/semaphores/tk-jobs", ""), http.StatusOK).Waiters) == 1
	})
	testserver.WantStatus(t, s.Do("POST", "/v1/semaphores/tk-jobs/revoke", fmt.Sprintf(`{"token":%d,"reason":"stuck in a test"}`, p2.token)), http.StatusNoContent)
	h := testserver.WantJSON[api.Hold](t, answered(t, "p3's waiting acquire of tk-jobs", waited), http.StatusCreated)
	p3 := tkHold{kind: "semaphore", name: "tk-jobs", owner: "p3", token: h.Token}
	b.waitFor("p2's bar ended by the revoke, marked", 10*time.Second,
		fmt.Sprintf(`(() => { const g = %s; return g && g.dataset.end === "revoked" && g.querySelector('.tl-revoked[data-testid="tl-mark"]'); })()`, tkBar(p2)))
	b.waitFor("p3's bar with its wait", 10*time.Second,
		fmt.Sprintf(`(() => { const g = %s; return g && g.querySelector('[data-testid="tl-wait"]') && g.querySelector("title").textContent.includes("waited"); })()`, tkBar(p3)))
	return p3
}

// tkSeeTheBusiest: the table has a row per thing, its kind shown, with
// the semaphore's grants, wait and revoke counted.
func tkSeeTheBusiest(t *testing.T, b *browser) {
	t.Helper()
	b.waitFor("the semaphore's three grants", 10*time.Second, tkCell("semaphore", "tk-jobs", "busiest-grants")+` === "3"`)
	if v := evalAs[string](b, tkCell("semaphore", "tk-jobs", "busiest-revokes")); v != "1" {
		t.Errorf("tk-jobs counts %s revokes, want 1", v)
	}
	if v := evalAs[string](b, tkCell("semaphore", "tk-jobs", "busiest-wait")); v == "—" || v == "" {
		t.Errorf("tk-jobs's wait reads %q, want p3's", v)
	}
	if v := evalAs[string](b, tkCell("rwlock", "tk-cat", "busiest-grants")); v != "3" {
		t.Errorf("tk-cat counts %s grants, want 3 (a write, two reads)", v)
	}
	names := evalAs[[]string](b, `[...document.querySelectorAll('[data-testid="busiest-row"]')].map((r) => r.querySelector("td").textContent)`)
	if strings.Join(names, "|") != "semaphore tk-jobs (2)|rwlock tk-cat" {
		t.Errorf("busiest rows %q, want the semaphore (3 grants, a revoke) then the read/write lock, each with its kind", names)
	}
}

// tkSeeHoldsArriveLive: a read hold taken after the page loaded gets its
// bar, a release ends r1's, and releasing p3 ends its bar: the stream
// keeps the timeline of every kind.
func tkSeeHoldsArriveLive(t *testing.T, b *browser, r1, p3 tkHold) {
	t.Helper()
	r3 := tkAcquire(t, b.s, "rwlock", "tk-cat", "r3", `"mode":"read"`)
	b.waitFor("r3's bar, open", 10*time.Second, fmt.Sprintf(`(%s || {dataset: {}}).dataset.end === "open"`, tkBar(r3)))
	tkRelease(t, b.s, r1)
	tkRelease(t, b.s, p3)
	for _, h := range []tkHold{r1, p3} {
		b.waitFor(h.owner+"'s bar released", 10*time.Second, fmt.Sprintf(`(%s || {dataset: {}}).dataset.end === "released"`, tkBar(h)))
	}
	if lane := evalAs[string](b, tkBar(r3)+`.dataset.mode`); lane != "read" {
		t.Errorf("r3's bar has mode %q, want read", lane)
	}
}

// TestTimeline_LaysOverlappingHoldsInLanesInChromium: the page's own
// module (web/timelineholds.js) keeps a lock and a semaphore of one name
// apart, gives overlapping permits lanes of their own (as many as
// overlap at most) and lets a permit take the lane of one that ended
// when it started; a read/write lock's holds keep their modes, a clipped
// one its end's; the stats count each thing with its kind and limit.
func TestTimeline_LaysOverlappingHoldsInLanesInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startBrowser(t, s, 800, 600)
	b.do("open the dashboard", 30*time.Second, chromedp.Navigate(s.TS.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="timeline-zoom"]`)))
	const script = `(async () => {
		const { readHolds, laneHolds, thingStats, thingKey } = await import("/ui/timelineholds.js");
		const ev = (revision, at, type, kind, name, owner, token, more) =>
			Object.assign({ revision, at, time: new Date(at).toISOString(), type, kind, name, lock: kind === "lock" ? name : "", owner, token }, more);
		const events = [
			ev(1, 1000, "acquired", "semaphore", "x", "A", 1, { limit: 3 }),
			ev(2, 1500, "acquired", "lock", "x", "L", 2),
			ev(3, 2000, "acquired", "semaphore", "x", "B", 3, { limit: 3 }),
			ev(4, 3000, "released", "semaphore", "x", "B", 3),
			ev(5, 3000, "acquired", "semaphore", "x", "C", 4, { limit: 3, queued_at: new Date(2500).toISOString() }),
			ev(6, 4000, "acquired", "semaphore", "x", "D", 5, { limit: 3 }),
			ev(7, 5000, "revoked", "semaphore", "x", "A", 1),
			ev(8, 6000, "expired", "semaphore", "x", "D", 5),
			ev(9, 1200, "released", "rwlock", "y", "R0", 6, { mode: "read" }),
			ev(10, 2000, "acquired", "rwlock", "y", "W", 7, { mode: "write" }),
			ev(11, 2500, "released", "rwlock", "y", "W", 7, { mode: "write" }),
			ev(12, 2600, "acquired", "rwlock", "y", "R1", 8, { mode: "read" }),
			ev(13, 2700, "acquired", "rwlock", "y", "R2", 9, { mode: "read" }),
			ev(14, 0, "elected", "election", "x", "E", 10),
		];
		const by = readHolds(events, 1000);
		const lanes = {};
		for (const [k, t] of by) lanes[k] = laneHolds(t.holds);
		const sem = by.get(thingKey("semaphore", "x")), rw = by.get(thingKey("rwlock", "y"));
		return {
			things: [...by.keys()].sort(),
			lanes,
			permits: sem.holds.map((h) => h.owner + ":" + h.lane + ":" + h.ended + (h.queued === null ? "" : ":waited")).join(" "),
			limit: sem.limit,
			rw: rw.holds.map((h) => h.owner + ":" + h.mode + ":" + h.lane + (h.clipped ? ":clipped" : "")).join(" "),
			stats: thingStats(events, 1000).map((s) => [s.kind, s.name, s.limit, s.grants, s.waited, s.expiries, s.revokes].join(" ")),
		};
	})()`
	type model struct {
		Things      []string
		Lanes       map[string]int
		Permits, RW string
		Limit       int
		Stats       []string
	}
	m := testbrowser.EvalAs[model](b.Tab, script, chromedp.EvalAwaitPromise)
	if strings.Join(m.Things, " ") != "lock/x rwlock/y semaphore/x" {
		t.Errorf("things %q, want lock/x rwlock/y semaphore/x: an election draws nothing", m.Things)
	}
	if m.Lanes["semaphore/x"] != 3 || m.Lanes["lock/x"] != 1 || m.Lanes["rwlock/y"] != 2 {
		t.Errorf("lanes %v, want the semaphore 3, the lock 1, the read/write lock 2", m.Lanes)
	}
	if want := "A:0:revoked B:1:released C:1:open:waited D:2:expired"; m.Permits != want || m.Limit != 3 {
		t.Errorf("permits %q (limit %d), want %q (limit 3)", m.Permits, m.Limit, want)
	}
	// R0, clipped, ends before W starts, and W before R1: one lane; R2
	// reads beside R1.
	if want := "R0:read:0:clipped W:write:0 R1:read:0 R2:read:1"; m.RW != want {
		t.Errorf("read/write holds %q, want %q", m.RW, want)
	}
	want := []string{"semaphore x 3 4 1 1 1", "rwlock y 0 3 0 0 0", "lock x 0 1 0 0 0"}
	if strings.Join(m.Stats, "|") != strings.Join(want, "|") {
		t.Errorf("stats %q, want %q", m.Stats, want)
	}
	b.check(false)
}
