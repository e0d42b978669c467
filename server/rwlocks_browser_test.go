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

var rwlockPath = regexp.MustCompile(`^/v1/rwlocks/[^/]+$`)

// rwRow is the row of the read/write lock name, or null.
func rwRow(name string) string { return thingRow("rwlock", name) }

// rwCell is the text of the element testid in the tbody of name ("" for
// none).
func rwCell(name, testid string) string { return thingCell("rwlock", name, testid) }

// rwHoldRow is the row of the hold token of name, or null.
func rwHoldRow(name string, token int64) string {
	return holdRowOf("rw-hold-row", "rwlock", name, token)
}

// rwHoldCell is the text of the element testid in the row of the hold
// ("" for no row).
func rwHoldCell(name string, token int64, testid string) string {
	return rowCell(rwHoldRow(name, token), testid)
}

// rwHolds are the holds of name as the page shows them, "owner:mode" in
// page order.
func rwHolds(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('[data-testid="rw-hold-row"][data-rwlock=%q]')].map(r => r.dataset.owner + ":" + r.dataset.mode).join(",")`, name)
}

// rwWaiters are the waiters of name listed when opened, "#position
// owner:mode" in page order.
func rwWaiters(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('tbody[data-rwlock=%q] [data-testid="rw-waiter"]')].map(li => "#" + li.dataset.position + " " + li.dataset.owner + ":" + li.dataset.mode).join(",")`, name)
}

// takeRW takes a hold of name in mode for owner, or fails.
func takeRW(t *testing.T, s *testserver.Server, name, mode, owner string) api.Hold {
	t.Helper()
	return testserver.WantJSON[api.Hold](t, s.Do("POST", "/v1/rwlocks/"+name,
		fmt.Sprintf(`{"mode":%q,"owner":%q,"ttl":"60s"}`, mode, owner)), http.StatusCreated)
}

// queueRW sends a waiting acquire of name in mode for owner and returns
// once the lock lists it among its waiters; its hold comes on the
// channel once granted (or the test ends).
func queueRW(t *testing.T, s *testserver.Server, name, mode, owner string) <-chan waiting {
	t.Helper()
	return queueHold(t, s, "/v1/rwlocks/"+name, fmt.Sprintf(`{"mode":%q,"owner":%q,"ttl":"60s","wait":"2m"}`, mode, owner), owner)
}

// TestRWLocks_ShowsHoldsAndWaitersLiveAndRevokesInChromium: with nothing
// held the panel says how to take a hold; readers taken over HTTP show
// with the lock's mode ("2 readers") and each hold's; a writer waiting,
// and a reader behind it, are listed in order with their modes, the
// writer saying that the reader waits for it; the readers' releases hand
// the lock to the writer live, and a revoke from the page's dialog hands
// it on to the reader; odd names and owners show as text. None of it
// reloads the page.
func TestRWLocks_ShowsHoldsAndWaitersLiveAndRevokesInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startPanelBrowser(t, s, 1280, 900, rwlockPath)
	openDashboard(b, `[data-testid="rwlocks-empty"]`)
	curl := evalAs[string](b, `document.querySelector('[data-testid="rwlocks-empty-curl"]').textContent`)
	if !strings.Contains(curl, "curl -s -X POST "+s.TS.URL+"/v1/rwlocks/my-first-rwlock") || !strings.Contains(curl, `"mode":"read"`) {
		t.Errorf("the empty state's command %q does not take a read hold on this server (%s)", curl, s.TS.URL)
	}

	r1, r2 := rwSeeReadersArrive(t, b)
	writer, reader := rwSeeAWriterBlockTheReaderBehind(t, b)
	w := rwSeeReleasesHandOverToTheWriter(t, b, r1, r2, writer)
	r3 := rwRevokeTheWriterFromThePage(t, b, w, reader)
	rwSeeOddNamesAsText(t, b)
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/rwlocks/catalog?token=%d", r3.Token), ""), http.StatusNoContent)
	waitEmptyAgain(b, "rwlocks", rwRow("catalog"))
	wantNoReload(t, b, "every change of a read/write lock must show live")
	b.check(false)
}

// rwSeeReadersArrive: r1 and r2 take read holds of catalog; its row says
// 2 readers, and each hold has a row with its owner, mode, token, since
// when and time left.
func rwSeeReadersArrive(t *testing.T, b *browser) (r1, r2 api.Hold) {
	t.Helper()
	r1 = takeRW(t, b.s, "catalog", "read", "r1")
	r2 = takeRW(t, b.s, "catalog", "read", "r2")
	b.waitFor("catalog shared by r1 and r2", 10*time.Second, fmt.Sprintf(`%s === "2 readers" && %s === "r1:read,r2:read" && %s === "read" && %s === %q && %s === %q`,
		rwCell("catalog", "rw-mode"), rwHolds("catalog"), rwHoldCell("catalog", r1.Token, "rw-hold-mode"),
		rwHoldCell("catalog", r1.Token, "token"), fmt.Sprint(r1.Token), rwHoldCell("catalog", r2.Token, "token"), fmt.Sprint(r2.Token)))
	b.waitFor("r1's since when, relative", 5*time.Second, `/^held \d+ s$/.test(`+rwHoldRow("catalog", r1.Token)+`.querySelector('[data-testid="since"]').textContent)`)
	left := rwHoldRow("catalog", r1.Token) + `.querySelector('time[data-testid="time-left"]')`
	b.waitFor("r1's time left", 10*time.Second, left+` && /^\d+ s left$/.test(`+left+`.textContent)`)
	if n := evalAs[string](b, `document.querySelector('[data-testid="rwlocks-count"]').textContent`); n != "1" {
		t.Errorf("the panel counts %q read/write locks, want 1", n)
	}
	b.screenshot("rwlocks-1-readers.png")
	return r1, r2
}

// rwSeeAWriterBlockTheReaderBehind: w asks for the write hold and waits
// for the readers; r3, a reader coming after it, waits behind it. The
// row names the line in order with modes, and opened, the list says
// that r3 waits for w.
func rwSeeAWriterBlockTheReaderBehind(t *testing.T, b *browser) (writer, reader <-chan waiting) {
	t.Helper()
	writer = queueRW(t, b.s, "catalog", "write", "w")
	reader = queueRW(t, b.s, "catalog", "read", "r3")
	// A waiter joining the line makes no event: the page reads the lock
	// again every 5 s.
	b.waitFor("w then r3 in the line", 15*time.Second, fmt.Sprintf(`%s === "2 waiting" && %s === "w (write) · r3 (read)"`,
		rwCell("catalog", "rw-waiters-count"), rwCell("catalog", "rw-waiters-line")))
	b.do("open catalog's waiters", 10*time.Second,
		testbrowser.Click(`tr[data-rwlock="catalog"] [data-testid="rw-waiters-toggle"]`))
	b.waitFor("the waiters listed with their modes", 10*time.Second, fmt.Sprintf(`%s === "#1 w:write,#2 r3:read"`, rwWaiters("catalog")))
	if says := evalAs[string](b, rwCell("catalog", "rw-blocks")); says != "the reader behind waits for it" {
		t.Errorf("the waiting writer says %q, want that the reader behind waits for it", says)
	}
	if mode := evalAs[string](b, rwCell("catalog", "rw-mode")); mode != "2 readers" {
		t.Errorf("with a writer waiting catalog reads %q, want still 2 readers", mode)
	}
	b.screenshot("rwlocks-2-writer-waiting.png")
	return writer, reader
}

// rwSeeReleasesHandOverToTheWriter: r1 and r2 give their holds back over
// HTTP; w gets the write hold, and the page shows catalog write-held by
// w, with r3 alone in line.
func rwSeeReleasesHandOverToTheWriter(t *testing.T, b *browser, r1, r2 api.Hold, writer <-chan waiting) api.Hold {
	t.Helper()
	testserver.WantStatus(t, b.s.Do("DELETE", fmt.Sprintf("/v1/rwlocks/catalog?token=%d", r1.Token), ""), http.StatusNoContent)
	b.waitFor("r1's row gone, 1 reader", 10*time.Second, fmt.Sprintf(`!%s && %s === "1 reader"`, rwHoldRow("catalog", r1.Token), rwCell("catalog", "rw-mode")))
	testserver.WantStatus(t, b.s.Do("DELETE", fmt.Sprintf("/v1/rwlocks/catalog?token=%d", r2.Token), ""), http.StatusNoContent)
	w := granted(t, "w", writer)
	if w.Mode != "write" {
		t.Fatalf("w was granted a %q hold, want write", w.Mode)
	}
	b.waitFor("catalog write-held by w, r3 alone in line", 10*time.Second, fmt.Sprintf(`%s === "write" && %s === "w:write" && %s === %q && %s === "1 waiting" && %s === "r3 (read)" && %s === "#1 r3:read"`,
		rwCell("catalog", "rw-mode"), rwHolds("catalog"), rwHoldCell("catalog", w.Token, "token"), fmt.Sprint(w.Token),
		rwCell("catalog", "rw-waiters-count"), rwCell("catalog", "rw-waiters-line"), rwWaiters("catalog")))
	b.screenshot("rwlocks-3-write-held.png")
	return w
}

// rwRevokeTheWriterFromThePage revokes w's write hold through the
// dialog, with a reason; r3 is granted its read hold, the page shows it,
// and the history has the revoke.
func rwRevokeTheWriterFromThePage(t *testing.T, b *browser, w api.Hold, reader <-chan waiting) api.Hold {
	t.Helper()
	says := openRevokeDialog(t, b, "w's hold", fmt.Sprintf(`tr[data-rwlock="catalog"][data-token="%d"] [data-testid="rw-revoke"]`, w.Token),
		"writer wedged", "catalog")
	if want := fmt.Sprintf("Write-held by w with token %d.", w.Token); says != want {
		t.Errorf("the dialog says %q, want %q", says, want)
	}
	b.screenshot("rwlocks-4-revoke-dialog.png")
	confirmRevoke(b, "w", rwHoldRow("catalog", w.Token))
	r3 := granted(t, "r3", reader)
	b.waitFor("r3 reading, nobody waiting, and the revoke in the history with its reason", 10*time.Second, fmt.Sprintf(`%s === "1 reader" && %s === "r3:read" && %s === "none" && (() => {
		const r = document.querySelector('[data-testid="history-row"][data-type="revoked"][data-kind="rwlock"][data-name="catalog"] [data-testid="history-name"]');
		return r && r.textContent === "catalog rwlock" && r.closest("tr").textContent.includes("writer wedged");
	})()`, rwCell("catalog", "rw-mode"), rwHolds("catalog"), rwCell("catalog", "rw-waiters-count")))
	notice := evalAs[string](b, `document.querySelector('[data-testid="notice"]').textContent`)
	if want := fmt.Sprintf("Revoked the write hold of catalog (token %d, held by w).", w.Token); notice != want {
		t.Errorf("the notice says %q, want %q", notice, want)
	}
	b.screenshot("rwlocks-5-revoked.png")
	return r3
}

// rwSeeOddNamesAsText: a read/write lock whose name has every kind of
// character a name may have, write-held by an owner that is markup,
// shows both as the text they are, and its Revoke button names them.
func rwSeeOddNamesAsText(t *testing.T, b *browser) {
	t.Helper()
	const odd = "Cat:eu.west_1-A"
	h := takeRW(t, b.s, odd, "write", oddOwner)
	// Its waiters, none, are read from GET /v1/rwlocks/{name}: the page's
	// path for the name is one the API decodes back to it.
	b.waitFor("the odd lock's rows", 10*time.Second, fmt.Sprintf(`%s === %q && %s === "write" && %s === "none"`,
		rwHoldCell(odd, h.Token, "rw-owner"), oddOwner, rwCell(odd, "rw-mode"), rwCell(odd, "rw-waiters-count")))
	wantAsText(t, b, "lock", rwRow(odd), odd, "rwlocks-table")
	wantLabel(t, b, rwHoldRow(odd, h.Token)+`.querySelector('[data-testid="rw-revoke"]')`,
		fmt.Sprintf("Revoke the write hold of %s on %s (token %d)", oddOwner, odd, h.Token))
	b.screenshot("rwlocks-6-odd-names.png")
	testserver.WantStatus(t, b.s.Do("DELETE", fmt.Sprintf("/v1/rwlocks/%s?token=%d", odd, h.Token), ""), http.StatusNoContent)
	b.waitFor("the odd lock gone", 10*time.Second, `!`+rwRow(odd))
}

// TestRWLocks_FitsAPhoneScreenInChromium: at a phone's width, a read/write
// lock with a long name, read holds with a long owner and a session, and
// a writer waiting, show as cards, and nothing makes the page scroll
// sideways. The revoke dialog fits too, and when the hold it is about is
// given back meanwhile, it says so and revokes nothing.
func TestRWLocks_FitsAPhoneScreenInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startPanelBrowser(t, s, 390, 844, rwlockPath)
	openOnAPhone(b, `[data-testid="rwlocks-empty"]`)

	long := strings.Repeat("very-long-rwlock-name.", 5) + "end"
	sess := testserver.WantJSON[api.Session](t, s.Do("POST", "/v1/sessions", `{"owner":"r2","ttl":"30s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.Do("POST", "/v1/rwlocks/"+long,
		`{"mode":"read","owner":"a-reader-with-a-long-name@build-host-17.example","ttl":"5m"}`), http.StatusCreated)
	r2 := testserver.WantJSON[api.Hold](t, s.Do("POST", "/v1/rwlocks/"+long, `{"mode":"read","owner":"r2","session":"`+sess.ID+`"}`), http.StatusCreated)
	writer := queueRW(t, s, long, "write", "a-writer-with-a-long-name@build-host-18.example")
	b.waitFor("both holds", 10*time.Second, `document.querySelectorAll('[data-testid="rw-hold-row"]').length === 2`)
	b.do("open the waiters", 10*time.Second,
		testbrowser.Click(`[data-testid="rwlock-row"] [data-testid="rw-waiters-toggle"]`))
	b.waitFor("the writer listed", 10*time.Second, `document.querySelector('[data-testid="rw-waiter"][data-mode="write"]')`)
	b.waitFor("no sideways scroll with holds and a waiter", 5*time.Second, noSidewaysScroll)
	b.eval(`document.getElementById("rwlocks").scrollIntoView()`)
	b.screenshot("rwlocks-phone.png")

	seeTheDialogFitAndItsHoldEnd(t, b, `[data-testid="rw-hold-row"][data-owner="r2"] [data-testid="rw-revoke"]`, "rwlocks-phone-revoke-dialog.png",
		fmt.Sprintf("/v1/rwlocks/%s?token=%d", long, r2.Token), "hold")
	b.do("close the dialog", 5*time.Second, testbrowser.Click(`[data-testid="revoke-cancel"]`))
	rw := testserver.WantJSON[api.RWLock](t, s.Do("GET", "/v1/rwlocks/"+long, ""), http.StatusOK)
	if rw.Mode != "read" || len(rw.Holders) != 1 || len(rw.Waiters) != 1 {
		t.Errorf("after r2 gave its hold back %s is %s with %d holds and %d waiting, want the long reader's hold and the writer waiting",
			long, rw.Mode, len(rw.Holders), len(rw.Waiters))
	}
	b.waitFor("r2's row gone", 10*time.Second, `!document.querySelector('[data-testid="rw-hold-row"][data-owner="r2"]') &&
		document.querySelector('[data-testid="rw-mode"]').textContent === "1 reader"`)
	select {
	case c := <-writer:
		t.Errorf("the writer was answered while a reader holds the lock: %+v", c)
	default:
	}
	b.check(false)
}
