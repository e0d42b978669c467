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

	"github.com/baton-dev/baton/tests/testbrowser"
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

// TestClick_LandsOnAnElementThePageKeepsReplacing: before each click the
// page starts swapping its button for a new one about every millisecond,
// for 200 ms, as a dashboard re-renders what its event stream changes;
// every Click must still land once. The swapping stops (so that a loaded
// machine cannot starve Click for good), and pauses while the button is
// down: a button replaced between press and release loses the click for
// a person too, and that is the page's to avoid (the dashboard keeps what
// has not changed).
func TestClick_LandsOnAnElementThePageKeepsReplacing(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><title>t</title><div id="box"></div><script src="/app.js"></script>`)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `window.clicks = 0;
let down = false, until = 0;
window.churn = () => { until = performance.now() + 200; };
document.addEventListener("pointerdown", () => { down = true; }, true);
document.addEventListener("click", () => { down = false; }, true);
function render() {
  if (down || performance.now() > until) return;
  const b = document.createElement("button");
  b.id = "it";
  b.textContent = "press";
  b.addEventListener("click", () => window.clicks++);
  document.getElementById("box").replaceChildren(b);
}
window.churn();
render();
setInterval(render, 1);`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	b := testbrowser.Start(t)
	b.Do("open the page", 30*time.Second, chromedp.Navigate(site.URL+"/"))
	b.WaitFor("the button", 10*time.Second, `document.getElementById("it") !== null`)
	const n = 20
	for i := range n {
		b.Eval(`churn()`)
		b.Do(fmt.Sprintf("click %d", i+1), 10*time.Second, testbrowser.Click("#it"))
	}
	if got := testbrowser.EvalAs[int](b, `window.clicks`); got != n {
		t.Errorf("the page counted %d clicks, want %d", got, n)
	}
}
