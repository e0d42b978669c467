package server_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/internal/poll"
	"github.com/baton-dev/baton/tests/testbrowser"
	"github.com/baton-dev/baton/tests/testserver"
)

var electionPath = regexp.MustCompile(`^/v1/elections/[^/]+$`)

// electionRow is the row of the election name, or null.
func electionRow(name string) string { return thingRow("election", name) }

// electionCell is the text of the cell testid of the row of name ("" for
// no row).
func electionCell(name, testid string) string { return rowCell(electionRow(name), testid) }

// campaign makes candidate the leader of name with value (JSON), or fails.
func campaign(t *testing.T, s *testserver.Server, name, candidate, value string) api.Leader {
	t.Helper()
	return testserver.WantJSON[api.Leader](t, s.Do("POST", "/v1/elections/"+name+"/campaign",
		fmt.Sprintf(`{"candidate":%q,"value":%s,"ttl":"60s"}`, candidate, value)), http.StatusCreated)
}

// TestElections_ShowsLeadersLiveAndRevokesInChromium: with no leader the
// panel says how to campaign; a leader campaigned over HTTP shows with its
// term and value, a proclaim changes the value in place, a queued
// candidate is counted and listed, a resignation hands over to it (term 2)
// live, and a revoke from the page ends the leadership; with the last
// leader gone, the empty state is back. None of it reloads the page.
func TestElections_ShowsLeadersLiveAndRevokesInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startPanelBrowser(t, s, 1280, 900, electionPath)
	openDashboard(b, `[data-testid="elections-empty"]`)
	curl := evalAs[string](b, `document.querySelector('[data-testid="elections-empty-curl"]').textContent`)
	if !strings.Contains(curl, "curl -s -X POST "+s.TS.URL+"/v1/elections/my-first-election/campaign") {
		t.Errorf("the empty state's command %q does not campaign on this server (%s)", curl, s.TS.URL)
	}
	b.screenshot("elections-1-empty.png")

	lead := elSeeALeaderArrive(t, b)
	elSeeAProclaim(t, b, lead)
	handed := elQueueACandidate(t, b)
	elSeeAHandover(t, b, lead, handed)
	elRevokeFromThePage(t, b)
	wantNoReload(t, b, "every change of an election must show live")
	b.check(false)
}

// elSeeALeaderArrive: node-a campaigns for billing, and its row shows
// without a reload, with its term, token, value and since when; a long
// value of another election is cut short, in full on hover.
func elSeeALeaderArrive(t *testing.T, b *browser) api.Leader {
	t.Helper()
	lead := campaign(t, b.s, "billing", "node-a", `{"addr":"10.0.0.5:8080"}`)
	b.waitFor("billing's row, node-a in term 1", 10*time.Second, fmt.Sprintf(`%s === "node-a" && %s === "1" && %s === %q && %s === '{"addr":"10.0.0.5:8080"}'`,
		electionCell("billing", "leader"), electionCell("billing", "term"), electionCell("billing", "token"), fmt.Sprint(lead.Token),
		electionCell("billing", "value")))
	since := electionRow("billing") + `.querySelector('[data-testid="elected-at"]')`
	b.waitFor("billing's since when, relative", 5*time.Second, since+` && /^leading \d+ s$/.test(`+since+`.textContent)`)
	title := evalAs[string](b, since+`.title`)
	if m := regexp.MustCompile(`\((\S+Z)\)$`).FindStringSubmatch(title); m == nil {
		t.Errorf("since's title %q does not give the absolute time", title)
	} else if at, err := time.Parse(time.RFC3339Nano, m[1]); err != nil || !at.Equal(time.Time(*lead.ElectedAt)) {
		t.Errorf("since's title %q, want elected_at %v", title, time.Time(*lead.ElectedAt))
	}

	long := `{"addr":"10.0.0.7:8080","zone":"eu-west-1c","build":"0123456789abcdef0123456789abcdef"}`
	campaign(t, b.s, "reports", "node-r", long)
	b.waitFor("reports' value cut short", 10*time.Second, electionCell("reports", "value")+`.endsWith("…")`)
	value := electionRow("reports") + `.querySelector('[data-testid="value"]')`
	if got := evalAs[string](b, value+`.title`); got != long {
		t.Errorf("the long value's title is %q, want it in full, %q", got, long)
	}
	if n := evalAs[int](b, `[...`+value+`.textContent].length`); n > 48 {
		t.Errorf("the long value shows %d characters, want at most 48", n)
	}
	b.waitFor("the count of elections", 5*time.Second, `document.querySelector('[data-testid="elections-count"]').textContent === "2"`)
	return lead
}

// elSeeAProclaim: node-a proclaims a new address; the same row (same
// token) shows it.
func elSeeAProclaim(t *testing.T, b *browser, lead api.Leader) {
	t.Helper()
	b.eval(electionRow("billing") + `.dataset.seen = "1"`)
	testserver.WantJSON[api.Leader](t, b.s.Do("POST", "/v1/elections/billing/proclaim",
		fmt.Sprintf(`{"token":%d,"value":{"addr":"10.0.0.6:8080"}}`, lead.Token)), http.StatusOK)
	b.waitFor("billing's new value", 10*time.Second, electionCell("billing", "value")+` === '{"addr":"10.0.0.6:8080"}'`)
	if !evalAs[bool](b, electionRow("billing")+`.dataset.seen === "1"`) {
		t.Errorf("the proclaim replaced billing's row; the leadership did not change")
	}
	if term := evalAs[string](b, electionCell("billing", "term")); term != "1" {
		t.Errorf("after the proclaim billing's term reads %q, want 1", term)
	}
}

// elQueueACandidate: node-b campaigns for billing with a wait; the row
// counts it, and opened, lists it first in line. The campaign's answer
// comes on the channel once node-b leads (or the test ends).
func elQueueACandidate(t *testing.T, b *browser) <-chan waiting {
	t.Helper()
	done := sendWaiting(t, b.s, "/v1/elections/billing/campaign", `{"candidate":"node-b","value":"b","ttl":"60s","wait":"2m"}`)
	poll.Until(t, 10*time.Second, "node-b in billing's line", func() bool {
		return len(testserver.WantJSON[api.Leader](t, b.s.Do("GET", "/v1/elections/billing", ""), http.StatusOK).Candidates) == 1
	})
	// A candidate joining the line makes no event: the page reads the
	// candidates again every 5 s.
	b.waitFor("billing's candidate counted", 15*time.Second, electionCell("billing", "candidates-count")+` === "1 waiting"`)
	if title := evalAs[string](b, electionRow("billing")+`.querySelector('[data-testid="candidates-count"]').title`); title != "#1 node-b" {
		t.Errorf("the count's title is %q, want the candidate, #1 node-b", title)
	}
	b.do("open billing's candidates", 10*time.Second,
		testbrowser.Click(`tr[data-election="billing"] [data-testid="candidates-toggle"]`))
	b.waitFor("node-b first in billing's line", 10*time.Second,
		`document.querySelector('tbody[data-election="billing"] [data-testid="candidate"][data-candidate="node-b"][data-position="1"]')`)
	b.screenshot("elections-2-leaders-and-a-candidate.png")
	return done
}

// elSeeAHandover: node-a resigns and node-b, first in line, leads in term
// 2 with its own value; the page shows the new leadership as a new row,
// with nobody left in line.
func elSeeAHandover(t *testing.T, b *browser, lead api.Leader, handed <-chan waiting) {
	t.Helper()
	testserver.WantStatus(t, b.s.Do("DELETE", fmt.Sprintf("/v1/elections/billing/leader?token=%d", lead.Token), ""), http.StatusNoContent)
	next := testserver.WantJSON[api.Leader](t, answered(t, "node-b's campaign", handed), http.StatusCreated)
	if next.Term != 2 || next.Candidate != "node-b" {
		t.Fatalf("after the resignation %s leads in term %d, want node-b in term 2", next.Candidate, next.Term)
	}
	b.waitFor("node-b leading billing in term 2", 10*time.Second, fmt.Sprintf(`%s === "node-b" && %s === "2" && %s === %q && %s === '"b"' && %s === "none"`,
		electionCell("billing", "leader"), electionCell("billing", "term"), electionCell("billing", "token"), fmt.Sprint(next.Token),
		electionCell("billing", "value"), electionCell("billing", "candidates-count")))
	b.screenshot("elections-3-handed-over.png")
}

// elRevokeFromThePage revokes billing's leadership through the dialog,
// with a reason, and sees the row go; reports resigns, and the empty
// state is back.
func elRevokeFromThePage(t *testing.T, b *browser) {
	t.Helper()
	says := openRevokeDialog(t, b, "billing", `tr[data-election="billing"] [data-testid="election-revoke"]`, "split brain drill", "billing")
	if !strings.Contains(says, "node-b") || !strings.Contains(says, "term 2") {
		t.Errorf("the dialog says %q, want the leader node-b and its term 2", says)
	}
	b.screenshot("elections-4-revoke-dialog.png")
	confirmRevoke(b, "billing", electionRow("billing"))
	testserver.WantProblem(t, b.s.Do("GET", "/v1/elections/billing", ""), http.StatusNotFound, "no_leader")
	b.waitFor("the revoke in the history, named and with its reason", 10*time.Second, `(() => {
		const r = document.querySelector('[data-testid="history-row"][data-type="revoked"][data-kind="election"][data-name="billing"]');
		return r && r.querySelector('[data-testid="history-name"]').textContent === "billing election" && r.textContent.includes("split brain drill");
	})()`)
	b.screenshot("elections-5-revoked.png")

	reports := testserver.WantJSON[api.Leader](t, b.s.Do("GET", "/v1/elections/reports", ""), http.StatusOK)
	testserver.WantStatus(t, b.s.Do("DELETE", fmt.Sprintf("/v1/elections/reports/leader?token=%d", reports.Token), ""), http.StatusNoContent)
	waitEmptyAgain(b, "elections", electionRow("reports"))
	b.screenshot("elections-6-empty-again.png")
}

// TestElections_FitsAPhoneScreenInChromium: at a phone's width, elections
// with a long name, a long value and a candidate show as cards, and
// nothing makes the page scroll sideways.
func TestElections_FitsAPhoneScreenInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startPanelBrowser(t, s, 390, 844, electionPath)
	openOnAPhone(b, `[data-testid="elections-empty"]`)

	long := strings.Repeat("very-long-election-name.", 5) + "end"
	campaign(t, s, long, "a-candidate-with-a-long-name@build-host-17.example", `{"addr":"10.0.0.7:8080","zone":"eu-west-1c","build":"0123456789abcdef"}`)
	campaign(t, s, "billing", "node-a", `{"addr":"10.0.0.5:8080"}`)
	b.waitFor("both rows", 10*time.Second, `document.querySelectorAll('[data-testid="election-row"]').length === 2`)
	b.do("open billing's candidates", 10*time.Second,
		testbrowser.Click(`tr[data-election="billing"] [data-testid="candidates-toggle"]`))
	b.waitFor("billing's empty line", 10*time.Second, `/No candidate/.test(document.querySelector('tbody[data-election="billing"] [data-testid="candidates-detail"]').textContent)`)
	b.waitFor("no sideways scroll with leaders", 5*time.Second, noSidewaysScroll)
	b.eval(`document.getElementById("elections").scrollIntoView()`)
	b.screenshot("elections-phone.png")
	b.check(false)
}
