package server_test

import (
	"context"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/internal/testserver"
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
	wantType := map[string]string{".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
	var initializer []byte
	for _, m := range refs {
		ref := m[1]
		t.Run(ref, func(t *testing.T) {
			if !strings.HasPrefix(ref, "/docs/") {
				t.Fatalf("asset %q is not under /docs/ on this server", ref)
			}
			r := s.Do("GET", ref, "")
			testserver.WantStatus(t, r, http.StatusOK)
			want, ok := wantType[path.Ext(ref)]
			if !ok {
				t.Fatalf("asset %q: unexpected kind of file", ref)
			}
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, want) {
				t.Errorf("Content-Type %q, want %s", ct, want)
			}
			if r.Header.Get("Cache-Control") == "" || r.Header.Get("Etag") == "" {
				t.Errorf("Cache-Control %q, ETag %q: want both", r.Header.Get("Cache-Control"), r.Header.Get("Etag"))
			}
			if csp := r.Header.Get("Content-Security-Policy"); csp != docsCSP {
				t.Errorf("Content-Security-Policy %q, want %q", csp, docsCSP)
			}
			if len(r.Body) == 0 {
				t.Errorf("empty body")
			}
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

// chromiumPath is where Debian's chromium package puts the browser.
const chromiumPath = "/usr/bin/chromium"

// TestDocs_SwaggerUIRendersAndTriesItOutInChromium loads /docs in headless
// Chromium, waits for Swagger UI to list the operations, runs one with
// "Try it out", and checks that the page made no request off this server and
// broke no Content-Security-Policy rule. The screenshot goes to the test's
// artifact directory: run with -artifacts to keep it.
func TestDocs_SwaggerUIRendersAndTriesItOutInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must install chromium (.ci/run does): %v", err)
		}
		t.Skipf("no browser (%v); apt-get install chromium to run this test", err)
	}
	s := testserver.Start(t)
	if r := s.Do("GET", "/openapi.json", ""); r.Status == http.StatusNotFound {
		t.Skip("GET /openapi.json answers 404: the OpenAPI document is not served yet, so Swagger UI has nothing to render")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers have a small /dev/shm
		chromedp.WindowSize(1280, 1600),
	)
	// Runs before t.TempDir's cleanup: the browser is gone before its
	// profile directory is removed.
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()

	var (
		mu       sync.Mutex
		requests []string // every URL the page asked for
		problems []string // errors in the console, CSP violations among them
	)
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				problems = append(problems, string(ev.Entry.Source)+": "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if x := ev.ExceptionDetails.Exception; x != nil {
				msg += " " + x.Description
			}
			problems = append(problems, "exception: "+msg)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					if a.Description != "" {
						args = append(args, a.Description)
					} else {
						args = append(args, string(a.Value))
					}
				}
				problems = append(problems, "console.error: "+strings.Join(args, " "))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	pageProblems := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}

	screenshot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 makes a PNG
		if err != nil {
			t.Errorf("screenshot: %v", err)
			return
		}
		p := filepath.Join(t.ArtifactDir(), name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Errorf("save screenshot: %v", err)
			return
		}
		t.Logf("screenshot: %s", p)
	}

	// The operations list appears once Swagger UI has fetched and rendered
	// /openapi.json.
	rendered, cancelRender := context.WithTimeout(ctx, 30*time.Second)
	defer cancelRender()
	if err := chromedp.Do(rendered,
		chromedp.Navigate(s.TS.URL+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(".opblock")),
	); err != nil {
		screenshot("docs-failed.png")
		t.Fatalf("Swagger UI did not list the operations: %v; page problems: %q", err, pageProblems())
	}

	// Try it out on an operation that needs no input (the event stream
	// never ends, so not that one).
	op, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const pathOf = b => b.querySelector(".opblock-summary-path")?.getAttribute("data-path") || "";
		const ops = [...document.querySelectorAll(".opblock.opblock-get")]
			.filter(b => !pathOf(b).includes("{") && !pathOf(b).endsWith("/events"));
		const op = ops.find(b => pathOf(b).endsWith("/healthz")) || ops[0];
		if (!op) return "";
		op.setAttribute("data-test-try", "");
		return pathOf(op);
	})()`))
	if err != nil || op == "" {
		t.Fatalf("no GET operation without parameters to try (err %v)", err)
	}
	t.Logf("trying out GET %s", op)
	const sel = "[data-test-try] "
	tried, cancelTry := context.WithTimeout(ctx, 30*time.Second)
	defer cancelTry()
	if err := chromedp.Do(tried,
		chromedp.Click(chromedp.CSS(sel+".opblock-summary-control")),
		chromedp.Click(chromedp.CSS(sel+".btn.execute")),
		chromedp.WaitVisible(chromedp.CSS(sel+".live-responses-table .response-col_status")),
	); err != nil {
		screenshot("docs-failed.png")
		t.Fatalf("try it out on GET %s: %v; page problems: %q", op, err, pageProblems())
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel+".live-responses-table tbody .response-col_status")))
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(status); len(f) == 0 || f[0] != "200" {
		t.Errorf("try it out on GET %s answered %q, want 200", op, status)
	}
	screenshot("docs.png")

	// As a new user would: acquire a lock with the example body the page
	// offers, naming only the lock. The example must be one baton accepts.
	const acq = "#operations-locks-acquireLock "
	acquired, cancelAcq := context.WithTimeout(ctx, 30*time.Second)
	defer cancelAcq()
	if err := chromedp.Do(acquired,
		chromedp.Click(chromedp.CSS(acq+".opblock-summary-control")),
		chromedp.SendKeys(chromedp.CSS(acq+`input[placeholder="name"]`), "from-the-docs"),
		chromedp.Click(chromedp.CSS(acq+".btn.execute")),
		chromedp.WaitVisible(chromedp.CSS(acq+".live-responses-table .response-col_status")),
	); err != nil {
		screenshot("docs-acquire-failed.png")
		t.Fatalf("try it out on acquire: %v; page problems: %q", err, pageProblems())
	}
	status, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(acq+".live-responses-table tbody .response-col_status")))
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(status); len(f) == 0 || f[0] != "201" {
		screenshot("docs-acquire-failed.png")
		t.Errorf("acquire with the documented example answered %q, want 201", status)
	}
	if r := s.Do("GET", "/v1/locks/from-the-docs", ""); r.Status != http.StatusOK {
		t.Errorf("the lock taken from the docs page is not held: %d", r.Status)
	}
	screenshot("docs-acquire.png")

	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(requests, s.TS.URL+op) {
		t.Errorf("try it out on GET %s did not request %s; requests: %q", op, s.TS.URL+op, requests)
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, s.TS.URL+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s, off this server", u)
		}
	}
	for _, p := range problems {
		t.Errorf("page error: %s", p)
	}
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
