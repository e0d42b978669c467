package testbrowser_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-dev/baton/internal/testbrowser"
)

func TestTab_RecordsWhatThePageAsksForAndWhatGoesWrongInIt(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><title>t</title><script src="/app.js"></script>`)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `console.error("boom"); window.ran = true;`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	b := testbrowser.Start(t, testbrowser.WindowSize(640, 480))

	b.Do("open the page", 30*time.Second, chromedp.Navigate(site.URL+"/"))
	b.WaitFor("the script to run", 10*time.Second, `window.ran === true`)
	if got := testbrowser.EvalAs[int](b, `window.innerWidth`); got != 640 {
		t.Errorf("the window is %d px wide, want 640", got)
	}
	if r := b.Requests(); !slices.Contains(r, site.URL+"/app.js") {
		t.Errorf("requests %q, want the script among them", r)
	}
	if p := b.Problems(); !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, `console.error: "boom"`) }) {
		t.Errorf("problems %q, want the console error", p)
	}
}
