package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testbrowser"
	"github.com/baton-dev/baton/tests/testserver"
)

const (
	paymentsTok = "payments-token-0123456789abcdef"
	searchTok   = "search-token-0123456789abcdef0"
	viewerTok   = "viewer-token-0123456789abcdef0"
)

// Two teams and a viewer who may read the shared names only, as
// docs/SECURITY.md sets them up; payments has quotas.
const accessPolicy = `
credentials:
  - name: payments
    tokens: ["` + paymentsTok + `"]
    rules: {"payments.": write, "payments.audit.": read, "shared.": read}
    quotas: {holds: 5, sessions: 2, waiters: 3, streams: 4, rate: 500, burst: 1000}
  - name: search
    tokens: ["` + searchTok + `"]
    rules: {"search.": admin, "shared.": write}
  - name: viewer
    tokens: ["` + viewerTok + `"]
    rules: {"shared.": read}
`

// openSignedIn opens the dashboard with token already kept in the tab, as
// after a sign-in: the page's first calls carry it, so none is refused.
func openSignedIn(t *testing.T, b *browser, token string) {
	t.Helper()
	keep := fmt.Sprintf(`sessionStorage.setItem("baton.token", %q)`, token)
	var id page.ScriptIdentifier
	b.do("keep the token before the page's scripts run", 10*time.Second, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		r, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: keep})
		id = r.Identifier
		return chromedp.Void{}, err
	})
	b.do("open the dashboard", 30*time.Second, chromedp.Navigate(b.s.TS.URL+"/"))
	b.do("stop keeping it", 10*time.Second, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.RemoveScriptToEvaluateOnNewDocument, page.RemoveScriptToEvaluateOnNewDocumentParams{Identifier: id})
		return chromedp.Void{}, err
	})
	b.waitLive()
}

// accessRules are the rules the access panel lists, "prefix: role" each.
const accessRules = `[...document.querySelectorAll('[data-testid="access-rule"]')].map((r) => r.dataset.prefix + ": " + r.dataset.role).join(", ")`

// TestDashboard_ShowsAScopedCredentialWhoItIsAndWhatItMayDoInChromium: a
// credential of a policy file sees its name in the header and the access
// panel, its rules by prefix, and its quotas with their usage, which
// follows its holds live; its lists hold its names only. A viewer who may
// read little gets a page that works, and a 403 shown as a problem, not
// a broken page.
func TestDashboard_ShowsAScopedCredentialWhoItIsAndWhatItMayDoInChromium(t *testing.T) {
	s := testserver.Start(t, testserver.WithPolicy(t, accessPolicy))
	testserver.WantStatus(t, s.DoAs(paymentsTok, "POST", "/v1/locks/payments.ledger", `{"owner":"w1","ttl":"60s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.DoAs(searchTok, "POST", "/v1/locks/search.reindex", `{"owner":"w2","ttl":"60s"}`), http.StatusCreated)
	testserver.WantStatus(t, s.DoAs(searchTok, "POST", "/v1/locks/shared.deploy", `{"owner":"w3","ttl":"60s"}`), http.StatusCreated)
	b := startBrowser(t, s, 1280, 900)
	seePaymentsAccess(t, b)
	readLittleAsAViewer(t, b)
}

// seePaymentsAccess: signed in as payments, the page names it, lists its
// rules and quotas, follows its usage, and shows its names only; nothing
// is refused.
func seePaymentsAccess(t *testing.T, b *browser) {
	t.Helper()
	s := b.s
	openSignedIn(t, b, paymentsTok)
	b.waitFor("the credential's name in the access panel", 10*time.Second,
		`document.querySelector('[data-testid="access-credential"]')?.textContent === "payments"`)
	if got := evalAs[string](b, `document.querySelector('[data-testid="auth-state"]').textContent`); got != "signed in as payments" {
		t.Errorf("the header says %q, want signed in as payments", got)
	}
	if got, want := evalAs[string](b, accessRules), "payments.: write, payments.audit.: read, shared.: read"; got != want {
		t.Errorf("the access panel lists the rules %q, want %q", got, want)
	}
	if evalAs[bool](b, `document.querySelector('[data-testid="access-scoped"]').hidden`) {
		t.Error("the panel does not say how a scoped credential's rules decide")
	}
	b.waitFor("the holds quota with one hold", 10*time.Second, quotaCount("holds", "1 of 5"))
	for q, want := range map[string]string{"sessions": "0 of 2", "waiters": "0 of 3", "streams": "up to 4", "rate": "500 requests a second, 1000 at once, on each node"} {
		if !evalAs[bool](b, quotaCount(q, want)) {
			t.Errorf("the %s quota does not read %q", q, want)
		}
	}
	// The lists hold its names only.
	b.waitFor("its own lock and the shared one", 10*time.Second, holderRow("payments.ledger")+` && `+holderRow("shared.deploy"))
	if evalAs[bool](b, holderRow("search.reindex")+` !== null`) {
		t.Error("the page shows another team's lock")
	}
	if s := evalAs[string](b, `document.body.innerText`); strings.Contains(s, paymentsTok) {
		t.Error("the page shows the token")
	}
	// The empty states' examples name what it may write.
	if got := evalAs[string](b, `document.querySelector('[data-testid="elections-empty-curl"]').textContent`); !strings.Contains(got, "/v1/elections/payments.my-first-election/campaign") {
		t.Errorf("the elections' example reads %q, not a name under payments.", got)
	}

	// Usage follows the credential's holds live.
	l := testserver.WantJSON[api.Lock](t, s.DoAs(paymentsTok, "POST", "/v1/locks/payments.batch", `{"owner":"w1","ttl":"60s"}`), http.StatusCreated)
	b.waitFor("two holds, after an acquire", 10*time.Second, quotaCount("holds", "2 of 5"))
	testserver.WantStatus(t, s.DoAs(paymentsTok, "DELETE", fmt.Sprintf("/v1/locks/payments.batch?token=%d", l.Token), ""), http.StatusNoContent)
	b.waitFor("one hold again, after the release", 10*time.Second, quotaCount("holds", "1 of 5"))
	b.screenshot("access-scoped.png")
	// Nothing was refused, nothing went wrong.
	b.check(false)
}

// readLittleAsAViewer: a viewer who may read the shared names only gets
// a working page; what it may not do is a 403 where it asked.
func readLittleAsAViewer(t *testing.T, b *browser) {
	t.Helper()
	openSignedIn(t, b, viewerTok)
	b.waitFor("the viewer's name and its one rule", 10*time.Second,
		`document.querySelector('[data-testid="access-credential"]')?.textContent === "viewer" && `+accessRules+` === "shared.: read"`)
	if !evalAs[bool](b, `document.querySelector('#access-quotas-wrap').hidden`) {
		t.Error("the viewer, without quotas, is shown quotas")
	}
	b.waitFor("the shared lock", 10*time.Second, holderRow("shared.deploy"))
	if evalAs[bool](b, holderRow("payments.ledger")+` !== null || `+holderRow("search.reindex")+` !== null`) {
		t.Error("the viewer sees a team's lock")
	}
	b.check(false)
	// Asking for what it may not read is a 403, shown where it was asked.
	b.do("filter the history by a team's lock", 10*time.Second,
		chromedp.SendKeys(chromedp.CSS(`[data-testid="history-lock"]`), "payments.ledger"))
	b.waitFor("the 403 in the history panel, and no rows of another filter", 10*time.Second, `(() => {
		const e = document.querySelector('[data-testid="history-error"]');
		return !e.hidden && e.textContent.includes("403") && e.textContent.includes("shared.") &&
			document.querySelector('[data-testid="history-table"]').hidden;
	})()`)
	b.waitFor("the lock's status saying it is outside the viewer's rules", 10*time.Second,
		`document.querySelector('[data-testid="history-lock-status"]').textContent.includes("outside the names your rules let you read")`)
	b.do("try to revoke the shared lock", 10*time.Second,
		testbrowser.Click(`tr[data-lock="shared.deploy"] [data-testid="revoke-button"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="revoke-dialog"][open]`)),
		testbrowser.Click(`[data-testid="revoke-confirm"]`),
	)
	b.waitFor("the 403 in the revoke dialog", 10*time.Second, `(() => {
		const e = document.querySelector('[data-testid="revoke-error"]');
		return !e.hidden && e.textContent.includes("admin role") && e.textContent.includes("403");
	})()`)
	b.screenshot("access-viewer-403.png")
	b.do("cancel the revoke", 10*time.Second, testbrowser.Click(`[data-testid="revoke-cancel"]`))
	if !evalAs[bool](b, `document.querySelector('[data-testid="live-status"]').dataset.state === "live" && `+
		`document.querySelector('[data-testid="access-credential"]')?.textContent === "viewer"`) {
		t.Error("after the refusals the page is no longer live, or forgot who it is")
	}
	// The 403s are logged by Chromium as failed requests; nothing else may
	// go wrong.
	b.check(true)
}

// TestDashboard_SaysAuthenticationIsOffInChromium: on a node without
// --auth-file the access panel says that every request may do everything,
// and the header offers no sign-in.
func TestDashboard_SaysAuthenticationIsOffInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startBrowser(t, s, 1280, 800)
	b.do("open the dashboard", 30*time.Second, chromedp.Navigate(s.TS.URL+"/"))
	b.waitLive()
	b.waitFor("authentication off in the access panel", 10*time.Second,
		`document.querySelector('[data-testid="access"]').dataset.auth === "off" && `+
			`document.querySelector('[data-testid="access-off"]')?.textContent === "Authentication is off"`)
	if got := evalAs[string](b, accessRules); got != ": admin" {
		t.Errorf("the access panel lists the rules %q, want the one rule on every name", got)
	}
	if !evalAs[bool](b, `document.querySelector('[data-testid="access-scoped"]').hidden && document.querySelector('#access-quotas-wrap').hidden`) {
		t.Error("the panel speaks of scopes or quotas with authentication off")
	}
	if !evalAs[bool](b, `getComputedStyle(document.querySelector('[data-testid="auth-box"]')).display === "none"`) {
		t.Error("the header offers a sign-in with authentication off")
	}
	b.screenshot("access-off.png")
	b.check(false)
}

// quotaCount is whether the access panel's quota q reads text.
func quotaCount(q, text string) string {
	return fmt.Sprintf(`document.querySelector('[data-testid="access-quota"][data-quota=%q] [data-testid="access-quota-count"]')?.textContent === %q`, q, text)
}
