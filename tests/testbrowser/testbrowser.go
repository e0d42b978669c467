package testbrowser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/tests/hostnet"
	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// names are the commands Chromium is installed as (Debian's chromium
// package first), looked up in PATH.
var names = []string{"chromium", "chromium-browser"}

// PollEvery is how often WaitFor evaluates its condition in the page.
const PollEvery = 50 * time.Millisecond

// Option changes what Start starts.
type Option func(*config)

type config struct {
	width, height int
	timeout       time.Duration
	expected      func(*log.Entry) bool
}

// WindowSize sets the browser window's size in CSS pixels (default
// 1280×800).
func WindowSize(width, height int) Option {
	return func(c *config) { c.width, c.height = width, height }
}

// Timeout bounds the browser's whole life (default 3 minutes): past it
// every step fails.
func Timeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// Expected names errors Chromium logs that the page cannot avoid, such as
// a 404 a request races into: they are not recorded as problems.
func Expected(fn func(*log.Entry) bool) Option {
	return func(c *config) { c.expected = fn }
}

// Tab is one browser tab. Its methods fail the test from the goroutine
// running it.
type Tab struct {
	t        testing.TB
	ctx      context.Context
	expected func(*log.Entry) bool

	mu       sync.Mutex
	requests []string  // every URL the page asked for
	problems []problem // every error it reported
	checked  int       // problems already reported by Check
}

// problem is an error the page reported.
type problem struct {
	network bool // a failed request, as opposed to a script error or a CSP violation
	text    string
}

// Start starts Chromium for the test and opens a tab. Start the server the
// page talks to first: cleanups run last first, so the browser then closes
// before the server does (no stream is left open) and before its profile
// directory is removed.
func Start(t testing.TB, opts ...Option) *Tab {
	t.Helper()
	cfg := config{width: 1280, height: 800, timeout: 3 * time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	path := chromium(t)
	// No interface of the host changes while the browser runs: Chromium
	// would abort the page's requests (tests/hostnet). Let go last.
	release, err := hostnet.Hold()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	profile := t.TempDir() // before the browser, so removed after it has exited

	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // Chromium's sandbox cannot start as root, which is how CI runs
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers have a small /dev/shm
		chromedp.WindowSize(cfg.width, cfg.height),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)

	b := &Tab{t: t, ctx: ctx, expected: cfg.expected}
	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// chromium returns the browser's path, or skips the test (fails it in CI)
// when there is none.
func chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing := "no " + strings.Join(names, " or ") + " in PATH"
	if os.Getenv("CI") != "" {
		t.Fatalf("CI must install chromium (.ci/run does): %s", missing)
	}
	t.Skipf("no browser (%s); apt-get install chromium to run this test", missing)
	return ""
}

// record keeps what the page asked for and what went wrong in it.
func (b *Tab) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError && (b.expected == nil || !b.expected(ev.Entry)) {
			b.problems = append(b.problems, problem{
				network: ev.Entry.Source == log.EntrySourceNetwork,
				text:    string(ev.Entry.Source) + ": " + ev.Entry.Text + " " + ev.Entry.URL,
			})
		}
	case *runtime.EventExceptionThrown:
		msg := ev.ExceptionDetails.Text
		if x := ev.ExceptionDetails.Exception; x != nil {
			msg += " " + x.Description
		}
		b.problems = append(b.problems, problem{text: "exception: " + msg})
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			b.problems = append(b.problems, problem{text: "console." + string(ev.Type) + ": " + consoleText(ev.Args)})
		}
	}
}

func consoleText(args []*runtime.RemoteObject) string {
	var out []string
	for _, a := range args {
		if a.Description != "" {
			out = append(out, a.Description)
		} else {
			out = append(out, string(a.Value))
		}
	}
	return strings.Join(out, " ")
}

// Context is the tab's context, for chromedp calls of one's own.
func (b *Tab) Context() context.Context { return b.ctx }

// Do runs steps, failing the test (with a screenshot) if they do not
// finish within timeout.
func (b *Tab) Do(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.Fail(what, err)
	}
}

// Click clicks the first element the CSS selector sel matches once it is
// visible, at its centre, as chromedp.Click does, but holds when the page
// changes under it. A dashboard redraws what its event stream changes:
//   - the node found can be gone before its position is read, and Chromium
//     answers that no node has that id;
//   - the page can move the element (a row above it grows) after its
//     position is read, and the click lands on whatever is there now.
//
// So, before the mouse goes down, Click checks that the element is what
// the page has at that point, as a person's eye would, and otherwise finds
// the element again, until the context ends. Nothing has been sent to the
// page when it tries again. A move between that check and the press still
// loses the click, one round trip's window: a page keeps what it has not
// changed where it is (web's keepRows), for people as much as for tests.
func Click(sel string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	hit := fmt.Sprintf(`((x, y) => { const e = document.querySelector(%s); const h = document.elementFromPoint(x, y); return !!e && !!h && (e === h || e.contains(h)); })`, q)
	click := chromedp.QueryAfter(chromedp.CSS(sel), func(ctx context.Context, t *chromedp.Target, nodes []*chromedp.Node) (chromedp.Void, error) {
		n := nodes[0]
		if _, err := cdp.Call(ctx, t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{NodeID: n.NodeID}); err != nil {
			return chromedp.Void{}, err
		}
		x, y, err := centre(ctx, t, n)
		if err != nil {
			return chromedp.Void{}, err
		}
		there, err := chromedp.Evaluate[bool](fmt.Sprintf("%s(%g, %g)", hit, x, y))(ctx, t)
		if err != nil {
			return chromedp.Void{}, err
		}
		if !there {
			return chromedp.Void{}, errMoved
		}
		return chromedp.MouseClickXY(x, y)(ctx, t)
	}, chromedp.NodeVisible)
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for {
			v, err := click(ctx, t)
			if !(replaced(err) || errors.Is(err, errMoved)) || ctx.Err() != nil {
				return v, err
			}
		}
	}
}

// errMoved says that the element to click was not at its centre any more
// when the click was about to go down.
var errMoved = errors.New("the element is no longer where its centre was read, or something covers it")

// centre is the middle of the first content quad of n, in the viewport's
// CSS pixels.
func centre(ctx context.Context, t *chromedp.Target, n *chromedp.Node) (x, y float64, err error) {
	res, err := cdp.Call(ctx, t, dom.GetContentQuads, dom.GetContentQuadsParams{NodeID: n.NodeID})
	if err != nil {
		return 0, 0, err
	}
	if len(res.Quads) == 0 || len(res.Quads[0]) != 8 {
		return 0, 0, chromedp.ErrInvalidDimensions
	}
	q := res.Quads[0]
	return (q[0] + q[2] + q[4] + q[6]) / 4, (q[1] + q[3] + q[5] + q[7]) / 4, nil
}

// replaced reports whether err is Chromium saying that a node id it handed
// out no longer names a node of the document.
func replaced(err error) bool {
	var e *cdproto.Error
	if !errors.As(err, &e) {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "node with given id") || strings.Contains(m, "detached from document")
}

// WaitFor waits until the JavaScript expression is truthy in the page,
// evaluating it every PollEvery; past timeout it fails the test.
func (b *Tab) WaitFor(what string, timeout time.Duration, expr string) {
	b.t.Helper()
	if err := b.Poll(timeout, expr); err != nil {
		b.Fail(what+" (within "+timeout.String()+")", err)
	}
}

// Poll is WaitFor that returns the error instead of failing, for a caller
// that has more to say about the failure.
func (b *Tab) Poll(timeout time.Duration, expr string) error {
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(PollEvery), chromedp.WithPollingTimeout(timeout)))
	return err
}

// Eval evaluates the JavaScript expression for its effect.
func (b *Tab) Eval(expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[chromedp.Void](expr)); err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
}

// EvalAs evaluates the JavaScript expression for its value.
func EvalAs[T any](b *Tab, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Fail fails the test now, with a screenshot and every problem the page
// reported.
func (b *Tab) Fail(what string, err error) {
	b.t.Helper()
	b.Screenshot("failed.png")
	b.t.Fatalf("%s: %v; page problems: %q", what, err, b.Problems())
}

// Screenshot saves the whole page as name in the test's artifact
// directory (go test -artifacts keeps it).
func (b *Tab) Screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 makes a PNG
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Errorf("save screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot: %s", p)
}

// Requests returns every URL the page asked for so far.
func (b *Tab) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// Problems returns every error the page reported so far.
func (b *Tab) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, p := range b.problems {
		out = append(out, p.text)
	}
	return out
}

// Check fails the test for any request the page made off origin (data:
// URLs aside) and any error it reported since the last Check, CSP
// violations among them; failed requests pass when failedRequestsOK.
func (b *Tab) Check(origin string, failedRequestsOK bool) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.requests {
		if !strings.HasPrefix(u, origin+"/") && !strings.HasPrefix(u, "data:") {
			b.t.Errorf("the page requested %s, off this server", u)
		}
	}
	for _, p := range b.problems[b.checked:] {
		if !(failedRequestsOK && p.network) && !p.hostChanged() {
			b.t.Errorf("page error: %s", p.text)
		}
	}
	b.checked = len(b.problems)
}

// hostChanged reports whether p is a request that failed because the
// host's network interfaces changed under the browser: Chromium aborts
// the requests in flight when they do, loopback ones too. The tests' own
// changes wait for the browser (tests/hostnet); this is for the machine's
// (an address renewed). It says nothing of the page, whose own assertions
// must still hold.
func (p problem) hostChanged() bool {
	return p.network && strings.Contains(p.text, "net::ERR_NETWORK_CHANGED")
}
