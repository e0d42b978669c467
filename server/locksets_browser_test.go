package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testbrowser"
	"github.com/baton-dev/baton/tests/testserver"
)

// linkedLocks are the held locks whose rows are marked as one set's, by
// name in page order.
const linkedLocks = `[...document.querySelectorAll('[data-testid="holders-table"] tbody.set-linked')].map(tb => tb.dataset.lock).join(",")`

// linkedBars are the timeline's bars marked as one set's, "lock#token",
// sorted.
const linkedBars = `[...document.querySelectorAll('[data-testid="tl-hold"].tl-set-linked')].map(g => g.dataset.lock + "#" + g.dataset.token).sort().join(",")`

// setBar is the selector of the timeline's bar of lock's hold token.
func setBar(lock string, token int64) string {
	return fmt.Sprintf(`[data-testid="tl-hold"][data-lock=%q][data-token="%d"]`, lock, token)
}

// takeSet takes the lock set names for owner, or fails.
func takeSet(t *testing.T, s *testserver.Server, owner string, names ...string) api.LockSet {
	t.Helper()
	return testserver.WantJSON[api.LockSet](t, s.Do("POST", "/v1/locksets", setBody(owner, names, "")), http.StatusCreated)
}

// setBody is the body of POST /v1/locksets for names and owner, with wait
// when it is not "".
func setBody(owner string, names []string, wait string) string {
	body := fmt.Sprintf(`{"names":%s,"owner":%q,"ttl":"60s"`, namesJSON(names), owner)
	if wait != "" {
		body += fmt.Sprintf(`,"wait":%q`, wait)
	}
	return body + "}"
}

// namesJSON is names as a JSON array.
func namesJSON(names []string) string {
	b, _ := json.Marshal(names) // a []string always marshals
	return string(b)
}

// releaseSet gives set back in one call, or fails.
func releaseSet(t *testing.T, s *testserver.Server, set api.LockSet) {
	t.Helper()
	testserver.WantStatus(t, s.Do("POST", "/v1/locksets/release",
		fmt.Sprintf(`{"names":%s,"token":%d}`, namesJSON(set.Names), set.Token)), http.StatusNoContent)
}

// pointAt moves the mouse to the middle of the element sel (a CSS
// selector), scrolled into view, as a user's pointer would.
func pointAt(b *browser, what, sel string) {
	b.t.Helper()
	pt := evalAs[[]float64](b, fmt.Sprintf(`(() => {
		const n = document.querySelector(%q);
		n.scrollIntoView({block: "center"});
		const r = n.getBoundingClientRect();
		return [r.x + r.width / 2, r.y + r.height / 2];
	})()`, sel))
	b.do("point at "+what, 5*time.Second, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pt[0], pt[1]))
}

// pointAtUntil points at sel until cond holds in the page, or within
// has passed, and then waits for cond as waitFor does. The timeline moves
// with the clock until a pointer is over it, so on a slow machine a bar
// can slide from under a pointer aimed at where it was a moment before;
// a user's pointer moves on, and so does this one.
func pointAtUntil(b *browser, what, sel, cond string, within time.Duration) {
	b.t.Helper()
	tick := time.NewTicker(poll.Every)
	defer tick.Stop()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); <-tick.C {
		pointAt(b, what, sel)
		if evalAs[bool](b, cond) {
			return
		}
	}
	b.waitFor("the pointer on "+what+" to mark it", time.Second, cond)
}

// pointAway moves the mouse to the page's top left corner, off every
// table and the timeline.
func pointAway(b *browser) {
	b.t.Helper()
	b.eval(`window.scrollTo(0, 0)`)
	b.do("point away", 5*time.Second, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 2, 2))
}

// focusLock moves the focus to the link of the held lock name, as the
// Tab key would. The page has no focus (document.hasFocus()) until a
// first click or tap, and focusing an element of a page without it fires
// no focus events: a click on the panel's title comes first.
func focusLock(b *browser, name string) {
	b.t.Helper()
	b.do("focus "+name+"'s link", 5*time.Second,
		testbrowser.Click(`#holders-title`),
		chromedp.Focus(chromedp.CSS(fmt.Sprintf(`[data-testid="holder-row"][data-lock=%q] a.lock-link`, name))))
}

// TestLockSets_ShowsMembersLinkedLiveInChromium: a lock set taken before
// the page opened shows on each member's row as a set with the other
// members, and pointing at or focusing one member marks every member (and
// not a lock on its own), in the held locks and on the timeline; a set
// waiting shows as one in a member's queue. When the first set is given
// back, its rows go and the waiting set, granted meanwhile, shows linked
// live, without a reload.
func TestLockSets_ShowsMembersLinkedLiveInChromium(t *testing.T) {
	s := testserver.Start(t)
	first := takeSet(t, s, "mover", "acct-1", "acct-2", "acct-3")
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/solo", `{"owner":"mover","ttl":"60s"}`), http.StatusCreated)
	b := startBrowser(t, s, 1280, 900)
	openDashboard(b, `[data-testid="holder-row"][data-lock="acct-3"]`)

	setSeeTheMembersSayTheirSet(t, b, first)
	setSeePointingAndFocusLinkTheRows(t, b)
	setSeeTheTimelineLinkTheBars(t, b, first)
	waiting := setSeeASetWaitInAQueue(t, b)
	second := setSeeTheReleaseHandTheSetOnLive(t, b, first, waiting)
	releaseSet(t, s, second)
	b.waitFor("the second set's rows gone", 10*time.Second, `!`+holderRow("acct-2")+` && !`+holderRow("ledger")+` && `+holderRow("solo"))
	wantNoReload(t, b, "every change of a lock set must show live")
	b.check(false)
}

// setSeeTheMembersSayTheirSet: each member's row says "set" with the
// other members, in the set's order; solo says nothing of a set, and the
// history's acquisitions say the same of each member.
func setSeeTheMembersSayTheirSet(t *testing.T, b *browser, set api.LockSet) {
	t.Helper()
	for _, l := range set.Locks {
		if l.Token != set.Token || !slices.Equal(l.Set, set.Names) {
			t.Fatalf("the set's lock %s has token %d and set %q, want %d and %q", l.Name, l.Token, l.Set, set.Token, set.Names)
		}
	}
	want := map[string]string{"acct-1": "set with acct-2, acct-3", "acct-2": "set with acct-1, acct-3", "acct-3": "set with acct-1, acct-2"}
	for name, says := range want {
		b.waitFor(name+"'s row saying its set", 10*time.Second, fmt.Sprintf(`%s === %q && %s.closest("tbody").dataset.token === "%d"`,
			rowCell(holderRow(name), "lock-set"), says, holderRow(name), set.Token))
		b.waitFor(name+"'s acquisition in the history saying its set", 10*time.Second,
			fmt.Sprintf(`%s === %q`, rowCell(historyRow("acquired", name), "history-set"), says))
	}
	if got := evalAs[bool](b, holderRow("solo")+`.querySelector('[data-testid="lock-set"]') === null`); !got {
		t.Errorf("solo, a lock on its own, says it is in a set")
	}
	title := evalAs[string](b, holderRow("acct-1")+`.querySelector('[data-testid="lock-set"]').title`)
	if !strings.Contains(title, "lock set of 3 (acct-1, acct-2, acct-3)") || !strings.Contains(title, fmt.Sprint(set.Token)) {
		t.Errorf("acct-1's set note's tooltip %q does not name the set and its token %d", title, set.Token)
	}
	if got := evalAs[string](b, linkedLocks); got != "" {
		t.Errorf("rows %q marked before anything is pointed at", got)
	}
	b.screenshot("locksets-1-members.png")
}

// setSeePointingAndFocusLinkTheRows: the pointer over acct-1 marks the
// three members, and only them; moving it away unmarks them; focusing
// acct-3's link from the keyboard marks them again, and leaving it
// unmarks them.
func setSeePointingAndFocusLinkTheRows(t *testing.T, b *browser) {
	t.Helper()
	pointAt(b, "acct-1's row", `[data-testid="holder-row"][data-lock="acct-1"] [data-testid="token"]`)
	b.waitFor("the pointer on acct-1 marking its set", 5*time.Second, `(`+linkedLocks+`) === "acct-1,acct-2,acct-3"`)
	b.screenshot("locksets-2-pointed.png")
	pointAway(b)
	b.waitFor("the pointer gone, nothing marked", 5*time.Second, `(`+linkedLocks+`) === ""`)

	focusLock(b, "acct-3")
	b.waitFor("the focus on acct-3 marking its set", 5*time.Second, `(`+linkedLocks+`) === "acct-1,acct-2,acct-3"`)
	focusLock(b, "solo")
	b.waitFor("the focus on solo, nothing marked", 5*time.Second, `(`+linkedLocks+`) === ""`)
	b.eval(`document.activeElement.blur()`)
}

// setSeeTheTimelineLinkTheBars: on the timeline each member's bar is
// marked as a set's, labelled "set" and named in its tooltip; pointing at
// one marks the three.
func setSeeTheTimelineLinkTheBars(t *testing.T, b *browser, set api.LockSet) {
	t.Helper()
	// A minute's window makes the bars wide enough for their labels.
	b.do("zoom the timeline to a minute", 5*time.Second, testbrowser.Click(`[data-testid="timeline-zoom"] [data-span="1m"]`))
	for _, name := range set.Names {
		bar := setBar(name, set.Token)
		b.waitFor(name+"'s bar marked as the set's", 15*time.Second, fmt.Sprintf(`(() => {
			const g = document.querySelector(%q);
			const label = g && g.querySelector(".tl-bar-label");
			return g && g.dataset.set === "acct-1 acct-2 acct-3" && g.querySelector('[data-testid="tl-set-mark"]') &&
				label && /^set mover/.test(label.textContent);
		})()`, bar))
		title := evalAs[string](b, fmt.Sprintf(`document.querySelector(%q).querySelector("title").textContent`, bar))
		if !strings.Contains(title, "one of a lock set of 3 (acct-1, acct-2, acct-3)") {
			t.Errorf("the tooltip of %s's bar reads %q, want it to name the set", name, title)
		}
	}
	if n := evalAs[int](b, `document.querySelectorAll('[data-testid="tl-hold"][data-lock="solo"] [data-testid="tl-set-mark"]').length`); n != 0 {
		t.Errorf("solo's bar has %d set marks, want none", n)
	}
	want := fmt.Sprintf("acct-1#%d,acct-2#%d,acct-3#%d", set.Token, set.Token, set.Token)
	pointAtUntil(b, "acct-2's bar", setBar("acct-2", set.Token)+` .tl-bar`, fmt.Sprintf(`(%s) === %q`, linkedBars, want), 5*time.Second)
	b.screenshot("locksets-3-timeline.png")
	pointAway(b)
	b.waitFor("the pointer gone, no bar marked", 5*time.Second, `(`+linkedBars+`) === ""`)
}

// setSeeASetWaitInAQueue: another set, of acct-2 and the free ledger,
// waits (for acct-2); acct-2's queue, opened, lists it as a set with
// ledger.
func setSeeASetWaitInAQueue(t *testing.T, b *browser) <-chan waiting {
	t.Helper()
	done := sendWaiting(t, b.s, "/v1/locksets", setBody("other", []string{"acct-2", "ledger"}, "1m"))
	poll.Until(t, 10*time.Second, "the second set in the line of acct-2", func() bool {
		got := testserver.WantJSON[api.Lock](t, b.s.Do("GET", "/v1/locks/acct-2", ""), http.StatusOK)
		return slices.ContainsFunc(got.Waiters, func(w api.Waiter) bool {
			return w.Owner == "other" && slices.Equal(w.Set, []string{"acct-2", "ledger"})
		})
	})
	b.do("open acct-2's queue", 10*time.Second, testbrowser.Click(`tr[data-lock="acct-2"] [data-testid="waiters-toggle"]`))
	b.waitFor("the waiting set in acct-2's queue", 10*time.Second, fmt.Sprintf(`%s === "set with ledger"`,
		rowCell(`document.querySelector('tbody[data-lock="acct-2"] [data-testid="waiter"][data-owner="other"]')`, "waiter-set")))
	b.screenshot("locksets-4-waiting-set.png")
	pointAway(b) // the click left the pointer on acct-2, which would mark its next set
	return done
}

// setSeeTheReleaseHandTheSetOnLive: the first set is given back in one
// call; acct-1's and acct-3's rows go, their bars end released, and the
// waiting set, granted, shows on acct-2's and ledger's rows as a set that
// focusing links, on the timeline too, without a reload.
func setSeeTheReleaseHandTheSetOnLive(t *testing.T, b *browser, first api.LockSet, waiting <-chan waiting) api.LockSet {
	t.Helper()
	releaseSet(t, b.s, first)
	second := testserver.WantJSON[api.LockSet](t, answered(t, "the second set's acquire", waiting), http.StatusCreated)
	b.waitFor("the first set's rows gone, the second's linked", 10*time.Second, fmt.Sprintf(`!%s && !%s &&
		(%s || {dataset: {}}).dataset.token === "%d" && %s === "set with ledger" && %s === "set with acct-2"`,
		holderRow("acct-1"), holderRow("acct-3"), holderRow("ledger"), second.Token,
		rowCell(holderRow("acct-2"), "lock-set"), rowCell(holderRow("ledger"), "lock-set")))
	for _, name := range first.Names {
		b.waitFor(name+"'s bar ended released", 10*time.Second, fmt.Sprintf(`(document.querySelector(%q) || {dataset: {}}).dataset.end === "released"`,
			setBar(name, first.Token)))
	}
	focusLock(b, "ledger")
	b.waitFor("the focus on ledger marking the second set", 5*time.Second, `(`+linkedLocks+`) === "acct-2,ledger"`)
	b.eval(`document.activeElement.blur()`)
	b.waitFor("nothing marked once the focus left", 5*time.Second, `(`+linkedLocks+`) === ""`)

	b.waitFor("the second set's bars", 10*time.Second, fmt.Sprintf(`document.querySelector(%q) && document.querySelector(%q)`,
		setBar("acct-2", second.Token)+`[data-set="acct-2 ledger"]`, setBar("ledger", second.Token)+`[data-set="acct-2 ledger"]`))
	want := fmt.Sprintf("acct-2#%d,ledger#%d", second.Token, second.Token)
	pointAtUntil(b, "ledger's bar", setBar("ledger", second.Token)+` .tl-bar`, fmt.Sprintf(`(%s) === %q`, linkedBars, want), 5*time.Second)
	b.screenshot("locksets-5-handed-on.png")
	pointAway(b)
	return second
}

// TestLockSets_FitsAPhoneScreenInChromium: at a phone's width, a set of
// seven locks with long names, taken while the page is open, shows as
// cards, each naming four of the others and counting the rest, with
// nothing that makes the page scroll sideways; focusing one member marks
// all seven, and the set's release empties the table.
func TestLockSets_FitsAPhoneScreenInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startBrowser(t, s, 390, 844)
	openOnAPhone(b, `[data-testid="holders-empty"]`)

	names := make([]string, 7)
	for i := range names {
		names[i] = fmt.Sprintf("ledger-account-with-a-rather-long-name.eu-west-1:%02d", i)
	}
	set := takeSet(t, s, "a-mover-with-a-long-name@build-host-17.example", names...)
	want := fmt.Sprintf("set with %s and 2 more", strings.Join(names[1:5], ", "))
	b.waitFor("the seven members, the first naming four others", 10*time.Second, fmt.Sprintf(
		`document.querySelectorAll('[data-testid="holders-table"] tbody[data-set]').length === 7 && %s === %q`,
		rowCell(holderRow(names[0]), "lock-set"), want))
	title := evalAs[string](b, holderRow(names[0])+`.querySelector('[data-testid="lock-set"]').title`)
	if !strings.Contains(title, strings.Join(names, ", ")) {
		t.Errorf("the first member's set note's tooltip %q does not name every member", title)
	}
	b.waitFor("no sideways scroll with the set", 5*time.Second, noSidewaysScroll)
	focusLock(b, names[6])
	b.waitFor("the focus marking all seven", 5*time.Second, fmt.Sprintf(`(%s) === %q`, linkedLocks, strings.Join(names, ",")))
	b.screenshot("locksets-phone.png")
	releaseSet(t, s, set)
	b.waitFor("the empty state again", 10*time.Second, `document.querySelector('[data-testid="holders-table"] tbody') === null &&
		!document.querySelector('[data-testid="holders-empty"]').hidden`)
	b.check(false)
}
