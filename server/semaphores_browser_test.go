package server_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testbrowser"
	"github.com/baton-dev/baton/tests/testserver"
)

var semaphorePath = regexp.MustCompile(`^/v1/semaphores/[^/]+$`)

// semRow is the row of the semaphore name, or null.
func semRow(name string) string { return thingRow("semaphore", name) }

// semCell is the text of the element testid in the tbody of name ("" for
// none).
func semCell(name, testid string) string { return thingCell("semaphore", name, testid) }

// permitRow is the row of the permit token of name, or null.
func permitRow(name string, token int64) string {
	return holdRowOf("permit-row", "semaphore", name, token)
}

// permitCell is the text of the element testid in the row of the permit
// ("" for no row).
func permitCell(name string, token int64, testid string) string {
	return rowCell(permitRow(name, token), testid)
}

// permitOwners are the owners of the permit rows of name, in page order.
func permitOwners(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('[data-testid="permit-row"][data-semaphore=%q]')].map(r => r.dataset.owner).join(",")`, name)
}

// takePermit takes a permit of name (of limit permits) for owner, or
// fails.
func takePermit(t *testing.T, s *testserver.Server, name, owner string, limit int) api.Hold {
	t.Helper()
	return testserver.WantJSON[api.Hold](t, s.Do("POST", "/v1/semaphores/"+name,
		fmt.Sprintf(`{"limit":%d,"owner":%q,"ttl":"60s"}`, limit, owner)), http.StatusCreated)
}

// queuePermit sends a waiting acquire of name for owner and returns once
// the semaphore lists it among its waiters; its answer comes on the
// channel once it has a permit (or the test ends).
func queuePermit(t *testing.T, s *testserver.Server, name, owner string, limit int) <-chan waiting {
	t.Helper()
	return queueHold(t, s, "/v1/semaphores/"+name, fmt.Sprintf(`{"limit":%d,"owner":%q,"ttl":"60s","wait":"2m"}`, limit, owner), owner)
}

// TestSemaphores_ShowsPermitsLiveAndRevokesInChromium: with no permit
// held the panel says how to take one; permits taken over HTTP show under
// their semaphore with held/limit, owner, token, since and time left; a
// waiter is counted and listed; a release elsewhere hands its permit to
// the waiter, and a revoke elsewhere ends a permit, both live; a revoke
// from the page ends the permit it names, and the history says so; odd
// names and owners show as text. None of it reloads the page.
func TestSemaphores_ShowsPermitsLiveAndRevokesInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startPanelBrowser(t, s, 1280, 900, semaphorePath)
	openDashboard(b, `[data-testid="semaphores-empty"]`)
	curl := evalAs[string](b, `document.querySelector('[data-testid="semaphores-empty-curl"]').textContent`)
	if !strings.Contains(curl, "curl -s -X POST "+s.TS.URL+"/v1/semaphores/my-first-semaphore") || !strings.Contains(curl, `"limit":3`) {
		t.Errorf("the empty state's command %q does not take a permit on this server (%s)", curl, s.TS.URL)
	}
	b.screenshot("semaphores-1-empty.png")

	w1, w2 := semSeePermitsArrive(t, b)
	w3, handed := semSeeAWaiter(t, b)
	w4 := semSeeAReleaseHandOver(t, b, w1, handed)
	semSeeARevokeElsewhere(t, b, w2)
	semRevokeFromThePage(t, b, w3)
	semSeeOddNamesAsText(t, b)
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/semaphores/heavy-jobs?token=%d", w4.Token), ""), http.StatusNoContent)
	waitEmptyAgain(b, "semaphores", semRow("heavy-jobs"))
	wantNoReload(t, b, "every change of a semaphore must show live")
	b.check(false)
}

// semSeePermitsArrive: w1 and w2 take permits of heavy-jobs (limit 3);
// the semaphore's row says 2/3 and each permit has a row with its owner,
// token, since when and time left.
func semSeePermitsArrive(t *testing.T, b *browser) (w1, w2 api.Hold) {
	t.Helper()
	w1 = takePermit(t, b.s, "heavy-jobs", "w1", 3)
	w2 = takePermit(t, b.s, "heavy-jobs", "w2", 3)
	b.waitFor("heavy-jobs at 2/3 with w1's and w2's permits", 10*time.Second, fmt.Sprintf(`%s === "2/3" && %s === "w1,w2" && %s === %q && %s === %q`,
		semCell("heavy-jobs", "held"), permitOwners("heavy-jobs"),
		permitCell("heavy-jobs", w1.Token, "token"), fmt.Sprint(w1.Token), permitCell("heavy-jobs", w2.Token, "token"), fmt.Sprint(w2.Token)))
	since := permitRow("heavy-jobs", w1.Token) + `.querySelector('[data-testid="since"]')`
	b.waitFor("w1's since when, relative", 5*time.Second, `/^held \d+ s$/.test(`+since+`.textContent)`)
	title := evalAs[string](b, since+`.title`)
	if m := regexp.MustCompile(`\((\S+Z)\)$`).FindStringSubmatch(title); m == nil {
		t.Errorf("since's title %q does not give the absolute time", title)
	} else if at, err := time.Parse(time.RFC3339Nano, m[1]); err != nil || at.Sub(time.Time(w1.AcquiredAt)).Abs() > time.Second {
		t.Errorf("since's title %q, want acquired_at %v", title, time.Time(w1.AcquiredAt))
	}
	left := permitRow("heavy-jobs", w1.Token) + `.querySelector('time[data-testid="time-left"]')`
	b.waitFor("w1's time left", 10*time.Second, left+` && /^\d+ s left$/.test(`+left+`.textContent)`)
	first := evalAs[string](b, left+`.textContent`)
	b.waitFor("w1's time left to count down", 5*time.Second, fmt.Sprintf(`%s.textContent !== %q`, left, first))
	if n := evalAs[string](b, `document.querySelector('[data-testid="semaphores-count"]').textContent`); n != "1" {
		t.Errorf("the panel counts %q semaphores, want 1", n)
	}
	return w1, w2
}

// semSeeAWaiter: w3 takes the last permit (3/3, marked full) and w4
// waits; the row counts w4 and, opened, lists it first in line.
func semSeeAWaiter(t *testing.T, b *browser) (api.Hold, <-chan waiting) {
	t.Helper()
	w3 := takePermit(t, b.s, "heavy-jobs", "w3", 3)
	b.waitFor("heavy-jobs full", 10*time.Second, semCell("heavy-jobs", "held")+` === "3/3" && `+
		`document.querySelector('tbody[data-semaphore="heavy-jobs"] [data-testid="held"]').classList.contains("full")`)
	handed := queuePermit(t, b.s, "heavy-jobs", "w4", 3)
	// A waiter joining the line makes no event: the page reads the
	// semaphore again every 5 s.
	b.waitFor("w4 counted", 15*time.Second, semCell("heavy-jobs", "sem-waiters-count")+` === "1 waiting"`)
	count := `document.querySelector('tbody[data-semaphore="heavy-jobs"] [data-testid="sem-waiters-count"]')`
	if title := evalAs[string](b, count+`.title`); title != "#1 w4" {
		t.Errorf("the count's title is %q, want the waiter, #1 w4", title)
	}
	b.do("open heavy-jobs' waiters", 10*time.Second,
		testbrowser.Click(`tr[data-semaphore="heavy-jobs"] [data-testid="sem-waiters-toggle"]`))
	b.waitFor("w4 first in line", 10*time.Second,
		`document.querySelector('tbody[data-semaphore="heavy-jobs"] [data-testid="sem-waiter"][data-owner="w4"][data-position="1"]')`)
	toggle := `document.querySelector('tr[data-semaphore="heavy-jobs"] [data-testid="sem-waiters-toggle"]')`
	if got := evalAs[string](b, toggle+`.getAttribute("aria-expanded")`); got != "true" {
		t.Errorf("the opened waiters' toggle has aria-expanded %q, want true", got)
	}
	b.screenshot("semaphores-2-full-with-a-waiter.png")
	return w3, handed
}

// semSeeAReleaseHandOver: w1 gives its permit back over HTTP; w4, first
// in line, gets one, and the page shows w1's row go and w4's come, still
// 3/3, with nobody left in line.
func semSeeAReleaseHandOver(t *testing.T, b *browser, w1 api.Hold, handed <-chan waiting) api.Hold {
	t.Helper()
	testserver.WantStatus(t, b.s.Do("DELETE", fmt.Sprintf("/v1/semaphores/heavy-jobs?token=%d", w1.Token), ""), http.StatusNoContent)
	w4 := granted(t, "w4", handed)
	b.waitFor("w4's permit in w1's place, nobody waiting", 10*time.Second, fmt.Sprintf(`!%s && %s === "w4" && %s === "3/3" && %s === "none" &&
		/Nobody is waiting/.test(document.querySelector('tbody[data-semaphore="heavy-jobs"] [data-testid="sem-waiters-detail"]').textContent)`,
		permitRow("heavy-jobs", w1.Token), permitCell("heavy-jobs", w4.Token, "permit-owner"), semCell("heavy-jobs", "held"),
		semCell("heavy-jobs", "sem-waiters-count")))
	return w4
}

// semSeeARevokeElsewhere: an operator revokes w2's permit over HTTP; its
// row goes, and heavy-jobs is at 2/3.
func semSeeARevokeElsewhere(t *testing.T, b *browser, w2 api.Hold) {
	t.Helper()
	testserver.WantStatus(t, b.s.Do("POST", "/v1/semaphores/heavy-jobs/revoke", fmt.Sprintf(`{"token":%d,"reason":"drill"}`, w2.Token)), http.StatusNoContent)
	b.waitFor("w2's row gone, 2/3", 10*time.Second, fmt.Sprintf(`!%s && %s === "2/3" && %s === "w3,w4"`,
		permitRow("heavy-jobs", w2.Token), semCell("heavy-jobs", "held"), permitOwners("heavy-jobs")))
	b.screenshot("semaphores-3-after-release-and-revoke.png")
}

// semRevokeFromThePage revokes w3's permit through the dialog, with a
// reason; its row goes, w4's stays, and the history has the revoke.
func semRevokeFromThePage(t *testing.T, b *browser, w3 api.Hold) {
	t.Helper()
	says := openRevokeDialog(t, b, "w3's permit", fmt.Sprintf(`tr[data-semaphore="heavy-jobs"][data-token="%d"] [data-testid="permit-revoke"]`, w3.Token),
		"stuck render job", "heavy-jobs")
	if !strings.Contains(says, "w3") || !strings.Contains(says, fmt.Sprint(w3.Token)) || !strings.Contains(says, "one of 3 permits") {
		t.Errorf("the dialog says %q, want the holder w3, its token %d and the limit", says, w3.Token)
	}
	b.screenshot("semaphores-4-revoke-dialog.png")
	confirmRevoke(b, "w3", permitRow("heavy-jobs", w3.Token))
	sem := testserver.WantJSON[api.Semaphore](t, b.s.Do("GET", "/v1/semaphores/heavy-jobs", ""), http.StatusOK)
	if len(sem.Holders) != 1 || sem.Holders[0].Owner != "w4" {
		t.Errorf("after the revoke heavy-jobs is held by %+v, want w4's permit only", sem.Holders)
	}
	b.waitFor("1/3, w4 left, and the revoke in the history with its reason", 10*time.Second, fmt.Sprintf(`%s === "1/3" && %s === "w4" && (() => {
		const r = document.querySelector('[data-testid="history-row"][data-type="revoked"][data-kind="semaphore"][data-name="heavy-jobs"] [data-testid="history-name"]');
		return r && r.textContent === "heavy-jobs semaphore" && r.closest("tr").textContent.includes("stuck render job");
	})()`, semCell("heavy-jobs", "held"), permitOwners("heavy-jobs")))
	notice := evalAs[string](b, `document.querySelector('[data-testid="notice"]').textContent`)
	if !strings.Contains(notice, fmt.Sprintf("token %d", w3.Token)) {
		t.Errorf("the notice says %q, want the revoked permit's token %d", notice, w3.Token)
	}
	b.screenshot("semaphores-5-revoked.png")
}

// semSeeOddNamesAsText: a semaphore whose name has every kind of
// character a name may have, held by an owner that is markup, shows both
// as the text they are, and its permit's Revoke button names them.
func semSeeOddNamesAsText(t *testing.T, b *browser) {
	t.Helper()
	const odd = "Jobs:eu.west_1-A"
	p := takePermit(t, b.s, odd, oddOwner, 2)
	// Its waiters, none, are read from GET /v1/semaphores/{name}: the
	// page's path for the name is one the API decodes back to it.
	b.waitFor("the odd semaphore's rows", 10*time.Second, fmt.Sprintf(`%s === %q && %s === "1/2" && %s === "none"`,
		permitCell(odd, p.Token, "permit-owner"), oddOwner, semCell(odd, "held"), semCell(odd, "sem-waiters-count")))
	wantAsText(t, b, "semaphore", semRow(odd), odd, "semaphores-table")
	wantLabel(t, b, permitRow(odd, p.Token)+`.querySelector('[data-testid="permit-revoke"]')`,
		fmt.Sprintf("Revoke the permit of %s on %s (token %d)", oddOwner, odd, p.Token))
	b.screenshot("semaphores-6-odd-names.png")
	testserver.WantStatus(t, b.s.Do("DELETE", fmt.Sprintf("/v1/semaphores/%s?token=%d", odd, p.Token), ""), http.StatusNoContent)
	b.waitFor("the odd semaphore gone", 10*time.Second, `!`+semRow(odd))
}

// TestSemaphores_FitsAPhoneScreenInChromium: at a phone's width, a
// semaphore with a long name, a permit with a long owner and a session,
// and a waiter, show as cards, and nothing makes the page scroll
// sideways. The revoke dialog fits too, and when the permit it is about
// is given back meanwhile, it says so and revokes nothing.
func TestSemaphores_FitsAPhoneScreenInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startPanelBrowser(t, s, 390, 844, semaphorePath)
	openOnAPhone(b, `[data-testid="semaphores-empty"]`)

	long := strings.Repeat("very-long-semaphore-name.", 5) + "end"
	sess := testserver.WantJSON[api.Session](t, s.Do("POST", "/v1/sessions", `{"owner":"w2","ttl":"30s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.Do("POST", "/v1/semaphores/"+long,
		`{"limit":2,"owner":"a-worker-with-a-long-name@build-host-17.example","ttl":"5m"}`), http.StatusCreated)
	w2 := testserver.WantJSON[api.Hold](t, s.Do("POST", "/v1/semaphores/"+long, `{"limit":2,"owner":"w2","session":"`+sess.ID+`"}`), http.StatusCreated)
	handed := queuePermit(t, s, long, "w3", 2)
	b.waitFor("both permits", 10*time.Second, `document.querySelectorAll('[data-testid="permit-row"]').length === 2`)
	b.do("open the waiters", 10*time.Second,
		testbrowser.Click(`[data-testid="semaphore-row"] [data-testid="sem-waiters-toggle"]`))
	b.waitFor("the waiter listed", 10*time.Second, `document.querySelector('[data-testid="sem-waiter"][data-owner="w3"]')`)
	b.waitFor("no sideways scroll with permits and a waiter", 5*time.Second, noSidewaysScroll)
	b.eval(`document.getElementById("semaphores").scrollIntoView()`)
	b.screenshot("semaphores-phone.png")

	seeTheDialogFitAndItsHoldEnd(t, b, `[data-testid="permit-row"][data-owner="w2"] [data-testid="permit-revoke"]`, "semaphores-phone-revoke-dialog.png",
		fmt.Sprintf("/v1/semaphores/%s?token=%d", long, w2.Token), "permit")
	granted(t, "w3", handed)
	b.waitFor("w3's permit in w2's place", 10*time.Second, `document.querySelector('[data-testid="permit-row"][data-owner="w3"]') &&
		!document.querySelector('[data-testid="permit-row"][data-owner="w2"]')`)
	b.check(false)
}
