// Package testbrowser drives real headless Chromium in tests: a tab that
// records every request the page makes and every error it reports, with
// steps that fail the test (and save a screenshot) when they do not finish
// in time.
//
//	s := testserver.Start(t) // before the browser: see Start
//	b := testbrowser.Start(t, testbrowser.WindowSize(1280, 800))
//	b.Do("open the dashboard", 30*time.Second, chromedp.Navigate(s.TS.URL+"/"))
//	b.WaitFor("a held lock", 5*time.Second, `document.querySelector('[data-testid="holder-row"]')`)
//	b.Check(s.TS.URL, false)
//
// Without Chromium the test skips, except in CI (CI set), where it fails:
// CI must run every browser test. -short skips them too.
package testbrowser
