package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/tests/testbrowser"
	"github.com/baton-dev/baton/tests/testserver"
)

// TestDashboard_AsksForATokenAndFollowsLiveWithItInChromium drives the
// dashboard of a baton with authentication on, in headless Chromium: the
// page asks for a token in a form, refuses a wrong one visibly, then shows
// holders and live history with a right one, keeps it in sessionStorage
// only and never in a URL, shows a 403 for a role too weak, asks again
// when the operator removes the token, and forgets it on sign-out.
func TestDashboard_AsksForATokenAndFollowsLiveWithItInChromium(t *testing.T) {
	s := startWithAuth(t)
	b := startBrowser(t, s, 1280, 800)

	b.do("open the dashboard", 30*time.Second, chromedp.Navigate(s.TS.URL+"/"))
	seeTheSignInForm(t, b)
	signInWithAWrongToken(t, b)
	signInToReadLive(t, b)
	b.eval(`window.batonTestLoaded = true`) // set once; a reload would lose it
	seeTheTokenKeptInThisTabOnly(t, b)
	tryToRevokeAsAReader(t, b)
	signInAgainOnceTheTokenIsRemoved(t, b)
	wantNoReload(t, b, "signing in again must not need a reload")
	reloadThenSignOut(t, b)

	for _, u := range b.Requests() {
		for _, tok := range []string{wrongTok, readTok, adminTok} {
			if strings.Contains(u, tok) {
				t.Errorf("the page put a token in the URL %s", u)
			}
		}
	}
	// 401s and the 403 are logged by Chromium as failed requests; nothing
	// else may go wrong.
	b.check(true)
}

const (
	// signinOpen is whether the sign-in form is open.
	signinOpen = `document.querySelector('[data-testid="signin-dialog"]').open`
	// tabToken is the token the page keeps, or null.
	tabToken = `sessionStorage.getItem("baton.token")`
)

func seeTheSignInForm(t *testing.T, b *browser) {
	t.Helper()
	b.waitFor("the sign-in form", 10*time.Second, signinOpen)
	b.waitFor("the live status to ask for a sign-in", 10*time.Second,
		`document.querySelector('[data-testid="live-status"]').dataset.state === "signedout"`)
	if why := evalAs[string](b, `document.querySelector('[data-testid="signin-why"]').textContent`); !strings.Contains(why, "asks for a token") {
		t.Errorf("the form says %q", why)
	}
	b.screenshot("auth-1-sign-in.png")
}

// signIn types token into the open form and submits it.
func signIn(b *browser, what, token string) {
	b.t.Helper()
	b.do(what, 10*time.Second,
		chromedp.SendKeys(chromedp.CSS(`[data-testid="signin-token"]`), token),
		testbrowser.Click(`[data-testid="signin-submit"]`),
	)
}

// signInWithAWrongToken: the token is refused in the form, and not kept.
func signInWithAWrongToken(t *testing.T, b *browser) {
	t.Helper()
	signIn(b, "sign in with a wrong token", wrongTok)
	b.waitFor("the refusal", 10*time.Second, `(() => {
		const e = document.querySelector('[data-testid="signin-error"]');
		return !e.hidden && e.textContent.includes("Token refused") && e.textContent.includes("401");
	})()`)
	if !evalAs[bool](b, signinOpen) || evalAs[bool](b, tabToken+` !== null`) {
		t.Fatal("after a wrong token the form closed, or the token was kept")
	}
	b.screenshot("auth-2-refused.png")
	b.eval(`document.querySelector('[data-testid="signin-token"]').value = ""`)
}

// signInToReadLive: with a read token the form closes and the page follows
// the event stream, showing holders and history (with the credential
// behind each event) and the cluster.
func signInToReadLive(t *testing.T, b *browser) {
	t.Helper()
	signIn(b, "sign in with a read token", readTok)
	b.waitFor("the form to close", 10*time.Second, `!`+signinOpen)
	b.waitLive()
	b.waitFor("the empty state", 10*time.Second, `!document.querySelector('[data-testid="holders-empty"]').hidden`)
	lk := testserver.WantJSON[api.Lock](t, b.s.DoAs(writeTok, "POST", "/v1/locks/behind-auth", `{"owner":"w1","ttl":"60s"}`), http.StatusCreated)
	row := holderRow("behind-auth")
	b.waitFor("the new lock's row", 10*time.Second, fmt.Sprintf(`%s && %s.querySelector('[data-testid="token"]').textContent === %q`, row, row, fmt.Sprint(lk.Token)))
	b.waitFor("the acquisition in the history", 10*time.Second, historyRow("acquired", "behind-auth"))
	// The owner is the client's claim; the row also names the credential.
	if got := evalAs[string](b, historyRow("acquired", "behind-auth")+`.querySelector('.owner').title`); got != "credential "+auth.CredentialID(writeTok) {
		t.Errorf("the history row's owner is titled %q, want the acquiring credential %s", got, auth.CredentialID(writeTok))
	}
	b.waitFor("the cluster panel", 10*time.Second, `/^\d+$/.test(document.querySelector('[data-testid="cluster-revision"]').textContent)`)
}

func seeTheTokenKeptInThisTabOnly(t *testing.T, b *browser) {
	t.Helper()
	if got := evalAs[string](b, tabToken); got != readTok {
		t.Errorf("sessionStorage holds %q, want the token", got)
	}
	if n := evalAs[int](b, `localStorage.length`); n != 0 {
		t.Errorf("localStorage holds %d items; the token must stay out of it", n)
	}
	if !evalAs[bool](b, `!document.querySelector('[data-testid="signout"]').hidden`) {
		t.Error("no sign-out control while signed in")
	}
	b.screenshot("auth-3-signed-in.png")
}

// tryToRevokeAsAReader: a reader may not revoke, and the dialog says which
// role it takes.
func tryToRevokeAsAReader(t *testing.T, b *browser) {
	t.Helper()
	b.do("try to revoke as a reader", 10*time.Second,
		testbrowser.Click(`tr[data-lock="behind-auth"] [data-testid="revoke-button"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="revoke-dialog"][open]`)),
		testbrowser.Click(`[data-testid="revoke-confirm"]`),
	)
	b.waitFor("the 403 in the revoke dialog", 10*time.Second, `(() => {
		const e = document.querySelector('[data-testid="revoke-error"]');
		return !e.hidden && e.textContent.includes("admin role") && e.textContent.includes("403");
	})()`)
	b.screenshot("auth-4-revoke-forbidden.png")
	b.do("cancel the revoke", 10*time.Second,
		testbrowser.Click(`[data-testid="revoke-cancel"]`),
		chromedp.WaitNotVisible(chromedp.CSS(`[data-testid="revoke-dialog"]`)),
	)
	testserver.WantStatus(t, b.s.DoAs(readTok, "GET", "/v1/locks/behind-auth", ""), http.StatusOK)
}

// signInAgainOnceTheTokenIsRemoved: the operator removes the read token,
// the stream ends, and the page drops the token and asks again; signed in
// as admin, it follows live once more.
func signInAgainOnceTheTokenIsRemoved(t *testing.T, b *browser) {
	t.Helper()
	c, err := auth.Parse(strings.NewReader("write " + writeTok + "\nadmin " + adminTok + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	b.s.Auth.Swap(c)
	b.waitFor("the form to ask again", 15*time.Second, signinOpen+` &&
		document.querySelector('[data-testid="signin-why"]').textContent.includes("no longer accepts")`)
	if evalAs[bool](b, tabToken+` !== null`) {
		t.Error("the refused token is still kept")
	}
	b.screenshot("auth-5-token-removed.png")
	signIn(b, "sign in as admin", adminTok)
	b.waitFor("the form to close", 10*time.Second, `!`+signinOpen)
	b.waitLive()
	testserver.WantStatus(t, b.s.DoAs(writeTok, "POST", "/v1/locks/after-rotation", `{"owner":"w2","ttl":"60s"}`), http.StatusCreated)
	b.waitFor("the lock taken after the rotation, live", 10*time.Second,
		holderRow("after-rotation")+` && `+historyRow("acquired", "after-rotation"))
}

// reloadThenSignOut: a reload of the tab keeps the token; signing out
// forgets it, and what was read with it.
func reloadThenSignOut(t *testing.T, b *browser) {
	t.Helper()
	b.do("reload the tab", 30*time.Second, chromedp.Reload())
	b.waitLive()
	if evalAs[bool](b, signinOpen) {
		t.Error("the form asks again after a reload of the same tab")
	}
	// Signing out reloads the page: wait for the new page's form.
	b.do("sign out", 20*time.Second,
		testbrowser.Click(`[data-testid="signout"]`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-dialog"][open]`)),
	)
	if evalAs[bool](b, tabToken+` !== null`) || evalAs[bool](b, `document.querySelector('[data-testid="holder-row"]') !== null`) {
		t.Error("after signing out the token is kept, or locks read with it are still shown")
	}
	b.screenshot("auth-6-signed-out.png")
}
