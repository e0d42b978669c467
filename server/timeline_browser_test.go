package server_test

import (
	"context"
	"encoding/json"
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

// tlHold is a hold the test made through the API, as the timeline must
// draw it: its lock, owner and token, and how it ended ("open" while
// held).
type tlHold struct {
	lock, owner string
	token       int64
	end         string
}

// tlAcquire takes lock for owner with the JSON fields extra (",…" or "").
func tlAcquire(t *testing.T, s *testserver.Server, lock, owner, extra string) tlHold {
	t.Helper()
	l := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/"+lock, fmt.Sprintf(`{"owner":%q,"ttl":"60s"%s}`, owner, extra)), http.StatusCreated)
	return tlHold{lock: lock, owner: owner, token: l.Token, end: "open"}
}

func tlRelease(t *testing.T, s *testserver.Server, h *tlHold) {
	t.Helper()
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/locks/%s?token=%d", h.lock, h.token), ""), http.StatusNoContent)
	h.end = "released"
}

// tlMakeHolds: tl-alpha taken and released by a, then by b; tl-beta
// taken by c and revoked; tl-gamma held by d.
func tlMakeHolds(t *testing.T, s *testserver.Server) []tlHold {
	t.Helper()
	a := tlAcquire(t, s, "tl-alpha", "a", "")
	tlRelease(t, s, &a)
	b := tlAcquire(t, s, "tl-alpha", "b", "")
	tlRelease(t, s, &b)
	c := tlAcquire(t, s, "tl-beta", "c", "")
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/tl-beta/revoke", `{"reason":"stuck in a test"}`), http.StatusNoContent)
	c.end = "revoked"
	d := tlAcquire(t, s, "tl-gamma", "d", "")
	return []tlHold{a, b, c, d}
}

// tlBar is the timeline's bar of the hold h, or null.
func tlBar(h tlHold) string {
	return fmt.Sprintf(`document.querySelector('[data-testid="tl-hold"][data-lock=%q][data-owner=%q][data-token="%d"]')`, h.lock, h.owner, h.token)
}

// tlLabel is the text drawn in the bar of the hold h ("" for none, or no
// bar).
func tlLabel(h tlHold) string {
	return fmt.Sprintf(`(((%s || document.createElement("g")).querySelector(".tl-bar-label") || {}).textContent || "")`, tlBar(h))
}

// tlCell is the text of the busiest-locks table's cell testid for lock.
func tlCell(lock, testid string) string {
	return fmt.Sprintf(`(document.querySelector('[data-testid="busiest-row"][data-lock=%q] [data-testid=%q]') || {}).textContent`, lock, testid)
}

// TestTimeline_DrawsHoldsWaitsAndTheBusiestLocksInChromium: holds made
// before the page opened are drawn as bars with their owners and tokens,
// the revoke marked and the grants counted; zooming changes the window,
// a hold taken later and an expiry appear live, and the history's lock
// filter narrows the timeline to one lock.
func TestTimeline_DrawsHoldsWaitsAndTheBusiestLocksInChromium(t *testing.T) {
	s := testserver.Start(t)
	holds := tlMakeHolds(t, s)
	b := startBrowser(t, s, 1280, 900)
	openDashboard(b, `[data-testid="timeline-svg"] [data-testid="tl-row"]`)
	tlSeeTheHolds(t, b, holds)
	tlSeeTheBusiestLocks(t, b)
	b.screenshot("timeline-0-fit.png")
	tlZoomIn(t, b)
	tlSeeHoldsArriveLive(t, b, holds[3])
	tlSeeAWait(t, b)
	b.screenshot("timeline-1-holds.png")
	tlFilterByLock(t, b)
	wantNoReload(t, b, "the timeline must follow the stream")
	b.check(false)
	tlSeeTheStreamResume(t, b)
	// Requests cut by the drop are logged as network errors; nothing else
	// may go wrong.
	b.check(true)
}

// tlSeeTheStreamResume: the stream drops, a hold is taken meanwhile, and
// once the page is live again the timeline shows it, without a reload.
func tlSeeTheStreamResume(t *testing.T, b *browser) {
	t.Helper()
	b.s.TS.CloseClientConnections()
	b.waitFor("the page to say it is disconnected", 5*time.Second,
		`document.querySelector('[data-testid="live-status"]').dataset.state === "disconnected"`)
	h := tlAcquire(t, b.s, "tl-alpha", "f", "")
	b.waitLive()
	b.waitFor("the hold taken during the drop", 10*time.Second, tlBar(h))
	wantNoReload(t, b, "the page reloaded to reconnect")
}

// tlSeeTheHolds: each hold is a bar with its owner and token, its end
// and, in its tooltip, the same; the revoked one carries a revoke mark.
func tlSeeTheHolds(t *testing.T, b *browser, holds []tlHold) {
	t.Helper()
	for _, h := range holds {
		b.waitFor(fmt.Sprintf("the bar of %s's hold of %s, %s", h.owner, h.lock, h.end), 10*time.Second,
			fmt.Sprintf(`(%s || {dataset: {}}).dataset.end === %q`, tlBar(h), h.end))
		title := evalAs[string](b, tlBar(h)+`.querySelector("title").textContent`)
		if !strings.Contains(title, fmt.Sprintf("%s: %s, token %d", h.lock, h.owner, h.token)) {
			t.Errorf("the tooltip of %s's hold of %s reads %q, want its owner and token %d", h.owner, h.lock, title, h.token)
		}
	}
	if !evalAs[bool](b, tlBar(holds[2])+`.querySelector('.tl-revoked[data-testid="tl-mark"]') !== null`) {
		t.Errorf("the revoked hold of tl-beta has no revoke mark")
	}
	if n := evalAs[int](b, `document.querySelectorAll('[data-testid="tl-mark"]').length`); n != 1 {
		t.Errorf("%d end marks, want 1 (the revoke): releases and open holds are not marked", n)
	}
	if n := evalAs[int](b, `document.querySelectorAll('[data-testid="tl-wait"]').length`); n != 0 {
		t.Errorf("%d wait bars, want none: nobody waited", n)
	}
	rows := evalAs[[]string](b, `[...document.querySelectorAll('[data-testid="tl-row"]')].map(r => r.dataset.lock)`)
	if strings.Join(rows, " ") != "tl-alpha tl-beta tl-gamma" {
		t.Errorf("timeline rows %q, want tl-alpha tl-beta tl-gamma", rows)
	}
}

// tlSeeTheBusiestLocks: the table counts each lock's grants, revokes and
// expiries, most grants first, and says no one waited.
func tlSeeTheBusiestLocks(t *testing.T, b *browser) {
	t.Helper()
	b.waitFor("the busiest locks", 10*time.Second, tlCell("tl-alpha", "busiest-grants")+` === "2"`)
	type row struct{ lock, grants, wait, p99, expiries, revokes string }
	want := []row{{"tl-alpha", "2", "—", "—", "0", "0"}, {"tl-beta", "1", "—", "—", "0", "1"}, {"tl-gamma", "1", "—", "—", "0", "0"}}
	for _, w := range want {
		got := row{w.lock, "", "", "", "", ""}
		for _, f := range []struct {
			to     *string
			testid string
		}{{&got.grants, "busiest-grants"}, {&got.wait, "busiest-wait"}, {&got.p99, "busiest-p99"}, {&got.expiries, "busiest-expiries"}, {&got.revokes, "busiest-revokes"}} {
			*f.to = evalAs[string](b, tlCell(w.lock, f.testid))
		}
		if got != w {
			t.Errorf("busiest row %+v, want %+v", got, w)
		}
	}
	order := evalAs[[]string](b, `[...document.querySelectorAll('[data-testid="busiest-row"]')].map(r => r.dataset.lock)`)
	if len(order) != 3 || order[0] != "tl-alpha" {
		t.Errorf("busiest rows %q, want tl-alpha (2 grants) first of 3", order)
	}
}

// tlZoomIn: the window opens fitted to the trail (the "fit" button), here
// the holds of the last seconds (tlSeeTheHolds saw every one drawn), not a
// mostly blank quarter of an hour; the 1m button narrows it to a minute
// ending now, and the axis counts in seconds.
func tlZoomIn(t *testing.T, b *browser) {
	t.Helper()
	const window = `(() => { const d = document.querySelector('[data-testid="timeline-svg"]').dataset; return Number(d.to) - Number(d.from); })()`
	const ticks = `[...document.querySelectorAll('[data-testid="tl-tick"]')].map(t => t.textContent)`
	if p := evalAs[string](b, `document.querySelector('[data-testid="timeline-zoom"] button[data-span="fit"]').getAttribute("aria-pressed")`); p != "true" {
		t.Errorf("the fit button is aria-pressed=%q as the page opens, want true", p)
	}
	if w := evalAs[int](b, window); w < 10_000 || w > 45_000 {
		t.Errorf("the window opens %d ms long, want it fitted to the holds of the last seconds: 10 to 45 s", w)
	}
	before := evalAs[[]string](b, ticks)
	b.do("zoom to a minute", 10*time.Second, testbrowser.Click(`[data-testid="timeline-zoom"] button[data-span="1m"]`))
	b.waitFor("a window of a minute", 10*time.Second, window+` === 60000`)
	after := evalAs[[]string](b, ticks)
	if len(after) < 3 || strings.Join(after, " ") == strings.Join(before, " ") || strings.Count(after[0], ":") != 2 {
		t.Errorf("axis labels %q after zooming to 1m (before %q): want several, changed, with seconds", after, before)
	}
	if p := evalAs[string](b, `document.querySelector('[data-testid="timeline-zoom"] button[data-span="1m"]').getAttribute("aria-pressed")`); p != "true" {
		t.Errorf("the 1m button is aria-pressed=%q after the click", p)
	}
}

// tlSeeHoldsArriveLive: a hold taken and one that expires after the page
// loaded show up without a reload, the expiry marked and counted; the
// table's row of a lock they do not touch keeps the focus; the open hold
// of gamma grows until its bar is wide enough for its label.
func tlSeeHoldsArriveLive(t *testing.T, b *browser, gamma tlHold) {
	t.Helper()
	const gammaLink = `document.querySelector('[data-testid="busiest-row"][data-lock="tl-gamma"] a')`
	b.eval(gammaLink + `.focus()`)
	e := tlAcquire(t, b.s, "tl-live", "e", "")
	b.waitFor("the hold taken after the page loaded", 10*time.Second, tlBar(e)+` && `+tlBar(e)+`.dataset.end === "open"`)
	b.waitFor("the hold counted in the table", 5*time.Second, tlCell("tl-live", "busiest-grants")+` === "1"`)
	if !evalAs[bool](b, `document.activeElement === `+gammaLink) {
		t.Errorf("the focus left tl-gamma's link when the table was redrawn for tl-live: it is on %q", evalAs[string](b, `((e) => e.tagName + " " + e.textContent.trim().slice(0, 40))(document.activeElement)`))
	}
	short := testserver.WantJSON[api.Lock](t, b.s.Do("POST", "/v1/locks/tl-short", `{"owner":"cron","ttl":"2s"}`), http.StatusCreated)
	exp := tlHold{lock: "tl-short", owner: "cron", token: short.Token, end: "expired"}
	b.waitFor("the 2 s hold to expire, marked", 20*time.Second,
		fmt.Sprintf(`(() => { const g = %s; return g && g.dataset.end === "expired" && g.querySelector('.tl-expired[data-testid="tl-mark"]'); })()`, tlBar(exp)))
	b.waitFor("the expiry counted", 5*time.Second, tlCell("tl-short", "busiest-expiries")+` === "1"`)
	label := fmt.Sprintf("d #%d", gamma.token)
	b.waitFor("gamma's open bar labelled "+label, 20*time.Second,
		fmt.Sprintf(`%s === %q`, tlLabel(gamma), label))
}

// tlOnly is true when the timeline and the table show lock alone, with
// holds bars on its row.
func tlOnly(lock string, holds int) string {
	return fmt.Sprintf(`(() => {
		const rows = [...document.querySelectorAll('[data-testid="tl-row"]')];
		const table = [...document.querySelectorAll('[data-testid="busiest-row"]')];
		return rows.length === 1 && rows[0].dataset.lock === %[1]q && rows[0].querySelectorAll('[data-testid="tl-hold"]').length === %[2]d &&
			table.length === 1 && table[0].dataset.lock === %[1]q;
	})()`, lock, holds)
}

// tlFilterByLock: a lock link in the table, then the history's lock
// filter typed, narrow the timeline and the table to that lock.
func tlFilterByLock(t *testing.T, b *browser) {
	t.Helper()
	b.do("follow the table's link to tl-beta", 10*time.Second, testbrowser.Click(`[data-testid="busiest-row"][data-lock="tl-beta"] a`))
	b.waitFor("the timeline of tl-beta only", 10*time.Second, tlOnly("tl-beta", 1))
	b.do("show every lock again", 10*time.Second, testbrowser.Click(`[data-testid="history-lock-clear"]`))
	b.waitFor("every lock again", 10*time.Second, `document.querySelectorAll('[data-testid="tl-row"]').length > 3`)
	b.do("filter the history by tl-alpha", 10*time.Second, chromedp.SendKeys(chromedp.CSS(`[data-testid="history-lock"]`), "tl-alpha"))
	b.waitFor("the timeline of tl-alpha only", 10*time.Second, tlOnly("tl-alpha", 2))
	b.screenshot("timeline-2-one-lock.png")
}

// tlSeeAWait: b asks for tl-queue while a holds it and waits; once a has
// held it a few seconds (its bar is labelled) a releases, and b's hold is
// drawn with a wait bar before it, counted in the table.
func tlSeeAWait(t *testing.T, b *browser) {
	t.Helper()
	s := b.s
	a := tlAcquire(t, s, "tl-queue", "a", "")
	type answer struct {
		lock api.Lock
		err  error
	}
	granted := make(chan answer, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // a test failing before the grant ends the waiting acquire
	go func() {
		r, err := s.Send(ctx, "POST", "/v1/locks/tl-queue", `{"owner":"b","ttl":"60s","wait":"30s"}`)
		var l api.Lock
		if err == nil && r.Status != http.StatusCreated {
			err = fmt.Errorf("status %d: %s", r.Status, r.Body)
		} else if err == nil {
			err = json.Unmarshal(r.Body, &l)
		}
		granted <- answer{l, err}
	}()
	poll.Until(t, 10*time.Second, "b in the queue of tl-queue", func() bool {
		return len(testserver.WantJSON[api.Lock](t, s.Do("GET", "/v1/locks/tl-queue", ""), http.StatusOK).Waiters) == 1
	})
	b.waitFor("a's hold of tl-queue labelled", 20*time.Second,
		fmt.Sprintf(`%s === "a #%d"`, tlLabel(a), a.token))
	// b waits now: a bar from when it joined the line to now, under a's
	// hold (the page reads queues every few seconds).
	b.waitFor("b's wait drawn while it waits", 20*time.Second, `(() => {
		const g = document.querySelector('[data-testid="tl-row"][data-lock="tl-queue"] [data-testid="tl-waiting"][data-owner="b"]');
		const r = g && g.querySelector("rect");
		return r && Number(r.getAttribute("width")) >= 1 && g.querySelector("title").textContent.includes("1st in line");
	})()`)
	b.screenshot("timeline-3-waiting.png")
	tlRelease(t, s, &a)
	got := <-granted
	if got.err != nil {
		t.Fatalf("b's waiting acquire of tl-queue: %v", got.err)
	}
	bh := tlHold{lock: "tl-queue", owner: "b", token: got.lock.Token, end: "open"}
	b.waitFor("b's wait no longer drawn as waiting once granted", 20*time.Second,
		`!document.querySelector('[data-testid="tl-row"][data-lock="tl-queue"] [data-testid="tl-waiting"]')`)
	b.waitFor("b's hold of tl-queue with a wait bar before it", 10*time.Second, fmt.Sprintf(`(() => {
		const g = %s, w = g && g.querySelector('[data-testid="tl-wait"]');
		return w && Number(w.getAttribute("width")) > 10 && g.querySelector("title").textContent.includes("waited");
	})()`, tlBar(bh)))
	for _, id := range []string{"busiest-wait", "busiest-p99"} {
		if v := evalAs[string](b, tlCell("tl-queue", id)); !strings.HasSuffix(v, " s") {
			t.Errorf("tl-queue's %s reads %q, want the seconds b waited", id, v)
		}
	}
}

// tlModel is what the timeline's pure functions (web/timelineholds.js) make of a
// few events, as the page's own module computes it.
type tlModel struct {
	Holds []struct {
		Lock, Owner, Ended string
		Token              int64
		Start              float64
		End                *float64
		Queued             *float64
		Clipped            bool
	}
	Stats []struct {
		Name              string
		Grants, Waited    int
		TotalWait         float64
		P99Wait           *float64
		Expiries, Revokes int
	}
}

// TestTimeline_ReadsHoldsAndWaitsFromEventsInChromium: a hold granted
// before the window starts there, clipped; one not ended is open; a held
// lock no event shows is added once; p99 is by nearest rank; expiries
// count session expiries, and events before the window count for nothing.
func TestTimeline_ReadsHoldsAndWaitsFromEventsInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startBrowser(t, s, 800, 600)
	b.do("open the dashboard", 30*time.Second, chromedp.Navigate(s.TS.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="timeline-zoom"]`)))
	const script = `(async () => {
		const { readHolds, heldHolds, thingStats } = await import("/ui/timelineholds.js");
		const ev = (revision, at, type, lock, owner, token, queued) =>
			({ revision, at, time: new Date(at).toISOString(), type, lock, owner, token, queued_at: queued === undefined ? undefined : new Date(queued).toISOString() });
		const events = [
			ev(1, 500, "acquired", "old", "o", 1),
			ev(2, 1500, "expired", "old", "o", 1),
			ev(3, 2000, "acquired", "q", "w", 2, 1900),
			ev(4, 3000, "session_expired", "q", "w", 2),
			ev(5, 4000, "acquired", "open", "x", 3),
		];
		for (let i = 1; i <= 100; i++) events.push(ev(5 + 2 * i, 10000 + i * 1000, "acquired", "busy", "b", 100 + i, 10000 + i * 1000 - i), ev(6 + 2 * i, 10000 + i * 1000 + 1, "released", "busy", "b", 100 + i));
		const within = events.filter((e) => e.at >= 1000); // the window starts at 1000: the grant of old is not read
		const byLock = readHolds(within, 1000);
		heldHolds(byLock, [{ kind: "lock", name: "open", owner: "x", token: 3, acquired_at: new Date(4000).toISOString() }, { kind: "lock", name: "stuck", owner: "s", token: 9, acquired_at: new Date(10).toISOString() }], 1000);
		const holds = [...byLock.values()].flatMap((l) => l.holds).filter((h) => h.lock !== "busy");
		return { holds, stats: thingStats(events, 1000) };
	})()`
	m := testbrowser.EvalAs[tlModel](b.Tab, script, chromedp.EvalAwaitPromise)
	got := map[string]string{}
	for _, h := range m.Holds {
		end := "nil"
		if h.End != nil {
			end = fmt.Sprint(*h.End)
		}
		queued := "nil"
		if h.Queued != nil {
			queued = fmt.Sprint(*h.Queued)
		}
		got[h.Lock] = fmt.Sprintf("%s #%d %v-%s %s queued %s clipped %v", h.Owner, h.Token, h.Start, end, h.Ended, queued, h.Clipped)
	}
	want := map[string]string{
		"old":   "o #1 1000-1500 expired queued nil clipped true",
		"q":     "w #2 2000-3000 session_expired queued 1900 clipped false",
		"open":  "x #3 4000-nil open queued nil clipped false",
		"stuck": "s #9 1000-nil open queued nil clipped true",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(m.Holds) != len(want) {
		t.Errorf("holds\n%v\nwant\n%v (%d holds)", got, want, len(m.Holds))
	}
	var order []string
	for _, st := range m.Stats {
		order = append(order, st.Name)
	}
	// Most grants first; of as many, the one with more lost holds.
	if strings.Join(order, " ") != "busy q open old" {
		t.Fatalf("stats of %q, want busy q open old", order)
	}
	busy, q := m.Stats[0], m.Stats[1]
	if busy.Grants != 100 || busy.Waited != 100 || busy.TotalWait != 5050 || busy.P99Wait == nil || *busy.P99Wait != 99 {
		t.Errorf("busy: %+v, want 100 grants that waited 1…100 ms: 5050 in all, p99 99", busy)
	}
	if q.Name != "q" || q.Grants != 1 || q.Expiries != 1 || q.P99Wait == nil || *q.P99Wait != 100 {
		t.Errorf("q: %+v, want 1 grant that waited 100 ms and a session expiry", q)
	}
	for _, st := range m.Stats {
		if st.Name == "old" && (st.Grants != 0 || st.Expiries != 1) {
			t.Errorf("old: %+v, want its expiry only: its grant came before the window", st)
		}
	}
	b.check(false)
}

// TestTimeline_FitsAPhoneScreenInChromium: at a phone's width the
// timeline and its table fit the screen, the chart no wider than its
// panel.
func TestTimeline_FitsAPhoneScreenInChromium(t *testing.T) {
	s := testserver.Start(t)
	holds := tlMakeHolds(t, s)
	b := startBrowser(t, s, 390, 844)
	b.do("open the dashboard at 390×844", 30*time.Second,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait),
		chromedp.Navigate(s.TS.URL+"/"),
	)
	b.waitLive()
	b.waitFor("the bars and the table", 10*time.Second, tlBar(holds[3])+` && `+tlCell("tl-alpha", "busiest-grants")+` === "2"`)
	b.waitFor("no sideways scroll", 5*time.Second, `document.documentElement.scrollWidth <= window.innerWidth`)
	if over := evalAs[bool](b, `(() => {
		const svg = document.querySelector('[data-testid="timeline-svg"]');
		return svg.getBoundingClientRect().right > svg.parentElement.getBoundingClientRect().right + 1;
	})()`); over {
		t.Errorf("the timeline is wider than its panel on a phone")
	}
	b.do("scroll to the timeline", 5*time.Second, chromedp.ScrollIntoView(chromedp.CSS(`#timeline`)))
	b.screenshot("timeline-phone.png")
	b.check(false)
}

// TestTimeline_SaysWhenItsBudgetStopsTheRead: a window with more events
// than the page reads at once shows the newest it read, says so and
// shades the part not read; with the budget back, the whole window shows.
func TestTimeline_SaysWhenItsBudgetStopsTheRead(t *testing.T) {
	s := testserver.Start(t)
	for range 12 {
		h := tlAcquire(t, s, "tl-many", "m", "")
		tlRelease(t, s, &h)
	}
	b := startBrowser(t, s, 1280, 800)
	b.do("open the dashboard", 30*time.Second, chromedp.Navigate(s.TS.URL+"/"))
	b.waitLive()
	b.waitFor("the whole window", 10*time.Second, tlCell("tl-many", "busiest-grants")+` === "12"`)
	const budget = `(() => { const d = document.getElementById("timeline-chart").dataset; d.pages = %q; d.pageSize = %q; })()`
	b.eval(fmt.Sprintf(budget, "2", "5"))
	b.do("read the window again", 10*time.Second, testbrowser.Click(`[data-testid="timeline-zoom"] button[data-span="5m"]`))
	b.waitFor("the newest 10 events only, said and shaded", 10*time.Second, `(() => {
		const note = document.querySelector('[data-testid="timeline-truncated"]');
		return !note.hidden && note.textContent.includes("newest 10 events") && document.querySelector(".tl-unread") &&
			document.querySelectorAll('[data-testid="tl-hold"][data-lock="tl-many"]').length === 5;
	})()`)
	if g := evalAs[string](b, tlCell("tl-many", "busiest-grants")); g != "5" {
		t.Errorf("tl-many counts %s grants in the 10 events read, want 5", g)
	}
	// Each read of the window under the budget makes its 2 requests of 5
	// events: a first, and one that follows next_before. The page may read
	// the window more than once (a stream that reconnects reads it again),
	// and its requests reach the test as browser events, which may trail
	// the page's own state on a slow machine.
	small := func() (reads, follow int) {
		for _, u := range b.Requests() {
			if !strings.Contains(u, "/v1/history?") || !strings.Contains(u, "limit=5&") {
				continue
			}
			if strings.Contains(u, "before=") {
				follow++
			} else {
				reads++
			}
		}
		return reads, follow
	}
	poll.Until(t, 5*time.Second, "the window's requests seen", func() bool {
		reads, follow := small()
		return reads > 0 && follow >= reads
	})
	if reads, follow := small(); follow != reads {
		t.Errorf("%d reads of the window in pages of 5 made %d requests after their first, want %d (a budget of 2 pages)", reads, follow, reads)
	}
	b.screenshot("timeline-truncated.png")
	b.eval(fmt.Sprintf(budget, "20", "500"))
	b.do("read the window again", 10*time.Second, testbrowser.Click(`[data-testid="timeline-zoom"] button[data-span="15m"]`))
	b.waitFor("the whole window again, no note", 10*time.Second, tlCell("tl-many", "busiest-grants")+` === "12" && `+
		`document.querySelector('[data-testid="timeline-truncated"]').hidden && !document.querySelector(".tl-unread")`)
	b.check(false)
}
