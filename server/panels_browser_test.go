package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testbrowser"
	"github.com/baton-dev/baton/tests/testserver"
)

// What the tests of the dashboard's panels of elections, semaphores and
// read/write locks share: starting the browser, opening the page, finding
// rows and cells, waiting acquires, the revoke dialog.

// startPanelBrowser is startBrowser for a page whose things of one kind
// come and go: one whose last hold just ended answers a GET of its path
// with 404, which Chromium logs as an error, as it does for a lock.
func startPanelBrowser(t *testing.T, s *testserver.Server, width, height int, path *regexp.Regexp) *browser {
	t.Helper()
	tab := testbrowser.Start(t, testbrowser.WindowSize(width, height), testbrowser.Expected(func(e *log.Entry) bool {
		if raceNotFound(e) {
			return true
		}
		u, err := url.Parse(e.URL)
		return err == nil && e.Source == log.EntrySourceNetwork && strings.Contains(e.Text, "404") && path.MatchString(u.Path)
	}))
	return &browser{Tab: tab, t: t, s: s}
}

// openDashboard opens the page, waits for the element visible and for the
// page to follow the stream, and marks the page so that wantNoReload can
// tell a reload.
func openDashboard(b *browser, visible string) {
	b.t.Helper()
	b.do("open the dashboard", 30*time.Second,
		chromedp.Navigate(b.s.TS.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(visible)),
	)
	b.eval(`window.batonTestLoaded = true`)
	b.waitLive()
}

// noSidewaysScroll holds while nothing makes the page scroll sideways.
const noSidewaysScroll = `document.documentElement.scrollWidth <= window.innerWidth`

// openOnAPhone opens the page at a phone's 390×844, waits for the element
// visible and for the page to follow the stream, and checks that the page
// does not scroll sideways.
func openOnAPhone(b *browser, visible string) {
	b.t.Helper()
	b.do("open the dashboard at 390×844", 30*time.Second,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait),
		chromedp.Navigate(b.s.TS.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(visible)),
	)
	b.waitLive()
	b.waitFor("no sideways scroll with the empty state", 5*time.Second, noSidewaysScroll)
}

// thingRow is the row of kind's name ("semaphore": its testid is
// semaphore-row, its name in data-semaphore), or null.
func thingRow(kind, name string) string {
	return fmt.Sprintf(`document.querySelector('[data-testid="%s-row"][data-%s=%q]')`, kind, kind, name)
}

// thingCell is the text of the element testid in the tbody of kind's
// name ("" for none).
func thingCell(kind, name, testid string) string {
	return fmt.Sprintf(`((document.querySelector('tbody[data-%s=%q] [data-testid=%q]') || {}).textContent || "")`, kind, name, testid)
}

// holdRowOf is the row testid of the hold token of kind's name, or null.
func holdRowOf(testid, kind, name string, token int64) string {
	return fmt.Sprintf(`document.querySelector('[data-testid=%q][data-%s=%q][data-token="%d"]')`, testid, kind, name, token)
}

// rowCell is the text of the element testid in row, a row or null ("" for
// no row).
func rowCell(row, testid string) string {
	return fmt.Sprintf(`(((%s || document.createElement("tr")).querySelector('[data-testid=%q]') || {}).textContent || "")`, row, testid)
}

// waitEmptyAgain waits for row to go and the panel id's empty state to
// show in place of its table.
func waitEmptyAgain(b *browser, id, row string) {
	b.t.Helper()
	b.waitFor("the empty state again", 10*time.Second, fmt.Sprintf(`!%s &&
		!document.querySelector('[data-testid="%s-empty"]').hidden &&
		document.querySelector('[data-testid="%s-table"]').hidden`, row, id, id))
}

// waiting is the answer to a waiting acquire, once it has one.
type waiting struct {
	r   *testserver.Response
	err error
}

// sendWaiting sends POST path with body, an acquire that waits; its
// answer comes on the channel once it has one (or the test ends).
func sendWaiting(t *testing.T, s *testserver.Server, path, body string) <-chan waiting {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan waiting, 1)
	go func() {
		r, err := s.Send(ctx, "POST", path, body)
		done <- waiting{r, err}
	}()
	t.Cleanup(cancel)
	return done
}

// queueHold sends a waiting acquire of path with body for owner and
// returns once GET path lists owner among its waiters; its answer comes
// on the channel once granted (or the test ends).
func queueHold(t *testing.T, s *testserver.Server, path, body, owner string) <-chan waiting {
	t.Helper()
	done := sendWaiting(t, s, path, body)
	poll.Until(t, 10*time.Second, owner+" in the line of "+path, func() bool {
		got := testserver.WantJSON[struct {
			Waiters []api.Waiter `json:"waiters"`
		}](t, s.Do("GET", path, ""), http.StatusOK)
		return slices.ContainsFunc(got.Waiters, func(w api.Waiter) bool { return w.Owner == owner })
	})
	return done
}

// answered is the answer of the waiting request what (e.g. "w4's
// acquire"), or fails the test when it fails or takes over 15 s.
func answered(t *testing.T, what string, c <-chan waiting) *testserver.Response {
	t.Helper()
	select {
	case w := <-c:
		if w.err != nil {
			t.Fatalf("%s: %v", what, w.err)
		}
		return w.r
	case <-time.After(15 * time.Second):
		t.Fatalf("%s was not answered", what)
	}
	return nil
}

// granted is the hold a queued acquire of who was given, or fails the
// test.
func granted(t *testing.T, who string, c <-chan waiting) api.Hold {
	t.Helper()
	return testserver.WantJSON[api.Hold](t, answered(t, who+"'s acquire", c), http.StatusCreated)
}

// openRevokeDialog clicks the Revoke button (a CSS selector), types the
// reason, checks that the dialog names name and returns what it says of
// the holder.
func openRevokeDialog(t *testing.T, b *browser, what, button, reason, name string) string {
	t.Helper()
	b.do("open the revoke dialog of "+what, 10*time.Second,
		testbrowser.Click(button),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="revoke-dialog"][open]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="revoke-reason"]`), reason),
	)
	if got := evalAs[string](b, `document.querySelector('[data-testid="revoke-name"]').textContent`); got != name {
		t.Errorf("the dialog names %q, want %q", got, name)
	}
	return evalAs[string](b, `document.querySelector('[data-testid="revoke-holder"]').textContent`)
}

// confirmRevoke confirms the open revoke dialog and waits for it to close
// and row to go.
func confirmRevoke(b *browser, what, row string) {
	b.t.Helper()
	// Clicked from script, as the locks' revoke test does.
	b.do("confirm the revoke", 10*time.Second,
		chromedp.WaitEnabled(chromedp.CSS(`[data-testid="revoke-confirm"]`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="revoke-confirm"]').click()`))
	if err := b.Poll(15*time.Second, `!`+row+` && !document.querySelector('[data-testid="revoke-dialog"]').open`); err != nil {
		b.Fail(fmt.Sprintf("%s's row to go (dialog open %v, saying %q)", what,
			evalAs[bool](b, `document.querySelector('[data-testid="revoke-dialog"]').open`),
			evalAs[string](b, `document.querySelector('[data-testid="revoke-dialog"]').textContent.replace(/\s+/g, " ")`)), err)
	}
}

// dialogInsideScreen holds while the revoke dialog is within the screen's
// width.
const dialogInsideScreen = `(() => {
	const r = document.querySelector('[data-testid="revoke-dialog"]').getBoundingClientRect();
	return r.left >= 0 && r.right <= window.innerWidth;
})()`

// oddOwner would run script if the page parsed it as HTML.
const oddOwner = `<img src=x onerror="window.batonPwned=1">&amp; "w"`

// wantAsText checks that row (of what) shows the name odd as text and that
// no markup of oddOwner made an element in table or ran.
func wantAsText(t *testing.T, b *browser, what, row, odd, table string) {
	t.Helper()
	if name := evalAs[string](b, row+`.querySelector(".name").textContent`); name != odd {
		t.Errorf("the odd %s's name reads %q, want %q", what, name, odd)
	}
	if n := evalAs[int](b, fmt.Sprintf(`document.querySelectorAll('[data-testid=%q] img').length`, table)); n != 0 {
		t.Errorf("the owner's markup made %d img elements in the table, want none", n)
	}
	if evalAs[bool](b, `window.batonPwned === 1`) {
		t.Errorf("the owner's markup ran as script")
	}
}

// wantLabel checks the aria-label of the element button (an expression).
func wantLabel(t *testing.T, b *browser, button, want string) {
	t.Helper()
	if label := evalAs[string](b, button+`.getAttribute("aria-label")`); label != want {
		t.Errorf("the Revoke button's label is %q, want %q", label, want)
	}
}

// seeTheDialogFitAndItsHoldEnd opens the revoke dialog with button (a CSS
// selector) on a phone, checks that it fits the screen and saves it as
// shot, then ends the hold with DELETE release and waits for the dialog
// to say that the hold, a noun, ended and to refuse to revoke.
func seeTheDialogFitAndItsHoldEnd(t *testing.T, b *browser, button, shot, release, noun string) {
	t.Helper()
	b.do("open the revoke dialog", 10*time.Second,
		testbrowser.Click(button),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="revoke-dialog"][open]`)),
	)
	b.waitFor("the dialog inside the screen", 5*time.Second, dialogInsideScreen)
	b.screenshot(shot)
	testserver.WantStatus(t, b.s.Do("DELETE", release, ""), http.StatusNoContent)
	b.waitFor("the dialog to say the "+noun+" ended", 10*time.Second, fmt.Sprintf(`
		/This %s has just ended \(released\)/.test(document.querySelector('[data-testid="revoke-error"]').textContent) &&
		document.querySelector('[data-testid="revoke-confirm"]').disabled`, noun))
}
