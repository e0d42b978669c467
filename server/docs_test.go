package server_test

import (
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/tests/testbrowser"
	"github.com/baton-dev/baton/tests/testserver"
)

const docsCSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"

// docsAssetRef finds what a page loads: scripts and stylesheets or icons.
var docsAssetRef = regexp.MustCompile(`<(?:script|link)\b[^>]*\b(?:src|href)="([^"]*)"`)

func TestDocs_ServesSwaggerUIFromLocalAssetsOnly(t *testing.T) {
	s := testserver.Start(t)
	var page []byte
	for _, p := range []string{"/docs", "/docs/"} {
		r := s.Do("GET", p, "")
		testserver.WantStatus(t, r, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Fatalf("GET %s: Content-Type %q, want text/html", p, ct)
		}
		if csp := r.Header.Get("Content-Security-Policy"); csp != docsCSP {
			t.Errorf("GET %s: Content-Security-Policy %q, want %q", p, csp, docsCSP)
		}
		if !strings.Contains(string(r.Body), "<title>baton API</title>") {
			t.Errorf("GET %s: no baton API title in %.200s", p, r.Body)
		}
		page = r.Body
	}
	if strings.Contains(string(page), "http://") || strings.Contains(string(page), "https://") {
		t.Errorf("the docs page names an absolute URL; it must work offline:\n%s", page)
	}

	refs := docsAssetRef.FindAllStringSubmatch(string(page), -1)
	if len(refs) < 3 { // stylesheet, bundle, initializer at least
		t.Fatalf("the page loads %d assets, want the stylesheet, the bundle and the initializer:\n%s", len(refs), page)
	}
	var initializer []byte
	for _, m := range refs {
		ref := m[1]
		t.Run(ref, func(t *testing.T) {
			r := wantAsset(t, s, ref, "/docs/", docsCSP)
			if path.Base(ref) == "swagger-initializer.js" {
				initializer = r.Body
			}
		})
	}
	if initializer == nil {
		t.Fatal("the page does not load /docs/swagger-initializer.js")
	}
	if strings.Contains(string(initializer), "http://") || strings.Contains(string(initializer), "https://") {
		t.Errorf("the initializer names an absolute URL; it must work offline:\n%s", initializer)
	}
	if !strings.Contains(string(initializer), `url: "/openapi.json"`) {
		t.Errorf("the initializer does not load this server's /openapi.json:\n%s", initializer)
	}
}

func TestDocs_UnknownAssetIsA404Problem(t *testing.T) {
	s := testserver.Start(t)
	for _, p := range []string{"/docs/nope.js", "/docs/ui/index.html", "/docs/%2e%2e/ui.go", "/docs/swagger-ui-bundle.js.map"} {
		t.Run(p, func(t *testing.T) {
			testserver.WantProblem(t, s.Do("GET", p, ""), http.StatusNotFound, "route_not_found")
		})
	}
}

func TestDocs_AssetRevalidatesWithItsETag(t *testing.T) {
	s := testserver.Start(t)
	first := s.Do("GET", "/docs/swagger-ui-bundle.js", "")
	testserver.WantStatus(t, first, http.StatusOK)
	req, err := http.NewRequest("GET", s.TS.URL+"/docs/swagger-ui-bundle.js", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("If-None-Match", first.Header.Get("Etag"))
	resp, err := s.TS.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("revalidating with ETag %q: status %d, want 304", first.Header.Get("Etag"), resp.StatusCode)
	}
}

// TestDocs_SwaggerUIRendersAndTriesItOutInChromium loads /docs in headless
// Chromium, waits for Swagger UI to list the operations, runs one with
// "Try it out", and checks that the page made no request off this server and
// broke no Content-Security-Policy rule. The screenshots go to the test's
// artifact directory: run with -artifacts to keep them.
func TestDocs_SwaggerUIRendersAndTriesItOutInChromium(t *testing.T) {
	s := testserver.Start(t)
	if r := s.Do("GET", "/openapi.json", ""); r.Status != http.StatusOK {
		t.Fatalf("GET /openapi.json answered %d: Swagger UI would have nothing to render", r.Status)
	}
	b := startBrowser(t, s, 1280, 1600)
	b.do("open the docs: Swagger UI lists the operations of /openapi.json", 30*time.Second,
		chromedp.Navigate(s.TS.URL+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(".opblock")),
	)

	op := tryAnOperationWithoutInput(t, b)
	b.screenshot("docs.png")
	if !slices.Contains(b.Requests(), s.TS.URL+op) {
		t.Errorf("try it out on GET %s did not request %s; requests: %q", op, s.TS.URL+op, b.Requests())
	}

	acquireWithTheDocumentedExample(t, b)
	b.screenshot("docs-acquire.png")
	b.check(false)
}

// tryAnOperationWithoutInput runs "Try it out" on a GET that takes no
// parameters (the event stream never ends, so not that one), wants a 200,
// and returns the operation's path.
func tryAnOperationWithoutInput(t *testing.T, b *browser) string {
	t.Helper()
	op := evalAs[string](b, `(() => {
		const pathOf = b => b.querySelector(".opblock-summary-path")?.getAttribute("data-path") || "";
		const ops = [...document.querySelectorAll(".opblock.opblock-get")]
			.filter(b => !pathOf(b).includes("{") && !pathOf(b).endsWith("/events"));
		const op = ops.find(b => pathOf(b).endsWith("/healthz")) || ops[0];
		if (!op) return "";
		op.setAttribute("data-test-try", "");
		return pathOf(op);
	})()`)
	if op == "" {
		t.Fatal("no GET operation without parameters to try")
	}
	t.Logf("trying out GET %s", op)
	const tried = "[data-test-try] "
	b.do("try it out on GET "+op, 30*time.Second,
		testbrowser.Click(tried+".opblock-summary-control"),
		execute(tried),
		chromedp.WaitVisible(chromedp.CSS(tried+".live-responses-table .response-col_status")),
	)
	if status := responseStatus(b, tried); status != "200" {
		t.Errorf("try it out on GET %s answered %q, want 200", op, status)
	}
	return op
}

// execute clicks the Execute button of the opened operation op once the
// button is shown and enabled, so that the click lands on the button and
// not where it will be, and once Swagger UI has resolved the operation.
// Opening an operation starts its resolution; Execute clicked before it
// ends sends the unresolved operation, which has no operationId, and
// Swagger UI fails with "Operation get_v1_… not found" on a slow machine.
func execute(op string) chromedp.Action[chromedp.Void] {
	resolved := `(() => {
		const block = document.querySelector(` + "`" + op + "`" + `.trim());
		const path = block?.querySelector(".opblock-summary-path")?.dataset.path;
		const method = block?.querySelector(".opblock-summary-method")?.textContent.toLowerCase();
		return !!(path && method && window.ui.specSelectors.specResolvedSubtree(["paths", path, method])?.get("operationId"));
	})()`
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(op+".btn.execute")),
		chromedp.WaitEnabled(chromedp.CSS(op+".btn.execute")),
		chromedp.Poll[chromedp.Void](resolved, chromedp.WithPollingInterval(testbrowser.PollEvery)),
		testbrowser.Click(op+".btn.execute"),
	)
}

// acquireWithTheDocumentedExample does as a new user would: acquire a lock
// with the example body the page offers, naming only the lock. The example
// must be one baton accepts.
func acquireWithTheDocumentedExample(t *testing.T, b *browser) {
	t.Helper()
	const acquire = "#operations-locks-acquireLock "
	b.do("try it out on acquire", 30*time.Second,
		testbrowser.Click(acquire+".opblock-summary-control"),
		chromedp.SendKeys(chromedp.CSS(acquire+`input[placeholder="name"]`), "from-the-docs"),
		execute(acquire),
		chromedp.WaitVisible(chromedp.CSS(acquire+".live-responses-table .response-col_status")),
	)
	if status := responseStatus(b, acquire); status != "201" {
		b.screenshot("docs-acquire-failed.png")
		t.Errorf("acquire with the documented example answered %q, want 201", status)
	}
	if r := b.s.Do("GET", "/v1/locks/from-the-docs", ""); r.Status != http.StatusOK {
		t.Errorf("the lock taken from the docs page is not held: %d", r.Status)
	}
}

// responseStatus is the status code Swagger UI shows for the last try of
// the operation whose block the selector op names.
func responseStatus(b *browser, op string) string {
	b.t.Helper()
	text, err := chromedp.Run(b.Context(), chromedp.Text(chromedp.CSS(op+".live-responses-table tbody .response-col_status")))
	if err != nil {
		b.Fail("read the response status", err)
	}
	if f := strings.Fields(text); len(f) > 0 {
		return f[0]
	}
	return ""
}

// TestPages_NoOtherSiteMayFrameTheDocsOrTheDashboard: both pages send
// calls with the operator's token (Try it out, Revoke), so a site that
// frames them could trick a click into one.
func TestPages_NoOtherSiteMayFrameTheDocsOrTheDashboard(t *testing.T) {
	s := testserver.Start(t)
	for _, p := range []string{"/", "/docs", "/docs/", "/docs/index.html"} {
		r := s.Do("GET", p, "")
		testserver.WantStatus(t, r, http.StatusOK)
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q has no frame-ancestors 'none'", p, csp)
		}
		if xfo := r.Header.Get("X-Frame-Options"); xfo != "DENY" {
			t.Errorf("GET %s: X-Frame-Options %q, want DENY (for browsers without frame-ancestors)", p, xfo)
		}
	}
}
