package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/tests/testbrowser"
)

// TestDocs_AuthorizeSendsTheBearerTokenInChromium: on a baton with
// authentication on, "Try it out" answers 401 until the token is given
// through Swagger UI's Authorize dialog, then 200.
func TestDocs_AuthorizeSendsTheBearerTokenInChromium(t *testing.T) {
	s := startWithAuth(t)
	b := startBrowser(t, s, 1280, 1600)
	const op = "#operations-operations-getCluster "
	status := func() string {
		t.Helper()
		return strings.Join(strings.Fields(evalAs[string](b, `document.querySelector('`+op+`.live-responses-table tbody .response-col_status').textContent`)), " ")
	}

	b.do("open the docs", 30*time.Second,
		chromedp.Navigate(s.TS.URL+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(".opblock")),
		chromedp.WaitVisible(chromedp.CSS(".btn.authorize")),
	)
	b.do("try GET /v1/cluster without a token", 20*time.Second,
		testbrowser.Click(op+".opblock-summary-control"),
		execute(op),
		chromedp.WaitVisible(chromedp.CSS(op+".live-responses-table .response-col_status")),
	)
	if got := status(); !strings.HasPrefix(got, "401") {
		t.Errorf("without a token: %q, want 401", got)
	}

	b.do("authorize with the read token", 20*time.Second,
		testbrowser.Click(".scheme-container .btn.authorize"),
		chromedp.WaitVisible(chromedp.CSS(".modal-ux .auth-container input")),
		chromedp.SendKeys(chromedp.CSS(".modal-ux .auth-container input"), readTok),
		testbrowser.Click(".modal-ux .auth-btn-wrapper .btn.modal-btn.authorize"),
		chromedp.WaitVisible(chromedp.CSS(".modal-ux .auth-btn-wrapper .btn-done")),
	)
	b.screenshot("docs-authorized.png")
	b.do("close the dialog and try again", 20*time.Second,
		testbrowser.Click(".modal-ux .auth-btn-wrapper .btn-done"),
		chromedp.WaitNotPresent(chromedp.CSS(".modal-ux")),
		execute(op),
	)
	b.waitFor("a 200 with the token", 20*time.Second,
		`(document.querySelector('`+op+`.live-responses-table tbody .response-col_status')?.textContent || "").trim().startsWith("200")`)
	if strings.Contains(evalAs[string](b, `JSON.stringify(localStorage)`), readTok) {
		t.Error("Swagger UI kept the token in localStorage")
	}
	for _, u := range b.Requests() {
		if strings.Contains(u, readTok) {
			t.Errorf("the token went into a URL: %s", u)
		}
	}
	b.check(true) // the 401 is logged as a failed request
}
