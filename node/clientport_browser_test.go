package node_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const chromiumPath = "/usr/bin/chromium"

// TestClientPort_APageOfAnotherSiteCanNeitherReadNorDeleteInChromium: a
// page a browser on the node's machine opens, from any site, fetches the
// member's loopback client port: it reads nothing (no CORS grant) and its
// blind text/plain POST to etcd's delete endpoint deletes nothing (no
// JSON gateway).
func TestClientPort_APageOfAnotherSiteCanNeitherReadNorDeleteInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must install chromium (.ci/run does): %v", err)
		}
		t.Skipf("no browser (%v); apt-get install chromium to run this test", err)
	}
	cfg := testConfig(t) // no auth: the plain loopback client port
	start(t, cfg)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{cfg.ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := cli.Put(ctx, "victim", "v"); err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>another site</title>")
	}))
	defer site.Close()

	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true))
	defer cancelAlloc()
	bctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()

	js := fmt.Sprintf(`(async () => {
		const out = {};
		try { const r = await fetch(%[1]q + "/version"); out.read = await r.text(); } catch (e) { out.read = "blocked"; }
		try {
			await fetch(%[1]q + "/v3/kv/deleterange", {method: "POST", mode: "no-cors", body: '{"key":"dmljdGlt"}'});
			out.sent = "sent";
		} catch (e) { out.sent = String(e); }
		return out;
	})()`, cfg.ClientURL)
	if err := chromedp.Do(bctx, chromedp.Navigate(site.URL)); err != nil {
		t.Fatalf("browser: %v", err)
	}
	out, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	if out["read"] != "blocked" {
		t.Errorf("the page read %q from the client port", out["read"])
	}
	resp, err := cli.Get(ctx, "victim")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("after the page's POST (%s), key victim: %v (%v), want it still there", out["sent"], resp, err)
	}
}
