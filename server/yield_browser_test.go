package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testserver"
)

// yieldBadge is the text of the yield badge in row, a row or null ("" for
// none).
func yieldBadge(row string) string { return rowCell(row, "yield-badge") }

// TestYield_ARequestShowsOnTheHoldersRowLiveInChromium: a request to
// yield a lock, made over HTTP while the page is open, shows on the
// holder's row as a badge naming who asked and why, and in the history
// as yield requested; a permit asked by token gets the badge and the other
// permit does not; a leader's row gets its own; the badge goes with the
// hold. None of it reloads the page.
func TestYield_ARequestShowsOnTheHoldersRowLiveInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startPanelBrowser(t, s, 1280, 900, semaphorePath)
	l := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/nightly-recon", `{"owner":"w1","ttl":"60s"}`), http.StatusCreated)
	p1, p2 := takePermit(t, s, "heavy-jobs", "j1", 2), takePermit(t, s, "heavy-jobs", "j2", 2)
	ld := testserver.WantJSON[api.Leader](t, s.Do("POST", "/v1/elections/billing/campaign", `{"candidate":"node-a","ttl":"60s"}`), http.StatusCreated)
	openDashboard(b, `[data-testid="holder-row"][data-lock="nightly-recon"]`)
	lockRow := fmt.Sprintf(`document.querySelector('[data-testid="holder-row"][data-lock="nightly-recon"][data-token="%d"]')`, l.Token)

	testserver.WantStatus(t, s.Do("POST", "/v1/locks/nightly-recon/yield", `{"owner":"backup-job","reason":"backup window <b>now</b>"}`), http.StatusAccepted)
	b.waitFor("the badge on w1's row", 5*time.Second, fmt.Sprintf(`%s === "yield requested by backup-job: backup window <b>now</b>"`, yieldBadge(lockRow)))
	b.waitFor("the request in the history", 10*time.Second, `[...document.querySelectorAll('[data-testid="history-row"][data-type="yield_requested"]')].some(r =>
		r.querySelector('[data-testid="history-type"]').textContent === "yield requested" && r.querySelector(".detail").textContent === "backup window <b>now</b>")`)
	b.screenshot("yield-1-lock.png")

	testserver.WantStatus(t, s.Do("POST", "/v1/semaphores/heavy-jobs/yield", fmt.Sprintf(`{"owner":"urgent","token":%d}`, p2.Token)), http.StatusAccepted)
	testserver.WantStatus(t, s.Do("POST", "/v1/elections/billing/yield", `{"owner":"node-b","reason":"drain"}`), http.StatusAccepted)
	b.waitFor("the badges on j2's permit and on the leader", 5*time.Second, fmt.Sprintf(`%s === "yield requested by urgent" && %s === "yield requested by node-b: drain"`,
		yieldBadge(permitRow("heavy-jobs", p2.Token)), yieldBadge(holdRowOf("election-row", "election", "billing", ld.Token))))
	if got := evalAs[string](b, yieldBadge(permitRow("heavy-jobs", p1.Token))); got != "" {
		t.Errorf("j1's permit shows %q, but the request named j2's token", got)
	}

	// The holder heeds it: its release takes the row, and the badge, away;
	// the next holder is not asked.
	testserver.WantStatus(t, s.Do("DELETE", fmt.Sprintf("/v1/locks/nightly-recon?token=%d", l.Token), ""), http.StatusNoContent)
	next := testserver.WantJSON[api.Lock](t, s.Do("POST", "/v1/locks/nightly-recon", `{"owner":"backup-job","ttl":"60s"}`), http.StatusCreated)
	nextRow := fmt.Sprintf(`document.querySelector('[data-testid="holder-row"][data-lock="nightly-recon"][data-token="%d"]')`, next.Token)
	b.waitFor("the next holder's row, with no badge", 10*time.Second, fmt.Sprintf(`%s && %s === "" && !document.querySelector('[data-testid="yield-badge"][data-owner="backup-job"]')`, nextRow, yieldBadge(nextRow)))
	wantNoReload(t, b, "a request to yield must show live")
	b.check(false)
}
