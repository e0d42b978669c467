package node_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/tests/testbrowser"
)

// TestClientPort_APageOfAnotherSiteCanNeitherReadNorDeleteInChromium: a
// page a browser on the node's machine opens, from any site, fetches the
// member's loopback client port: it reads nothing (no CORS grant) and its
// blind text/plain POST to etcd's delete endpoint deletes nothing (no
// JSON gateway).
func TestClientPort_APageOfAnotherSiteCanNeitherReadNorDeleteInChromium(t *testing.T) {
	// First, so that without a browser the test skips before a node starts.
	b := testbrowser.Start(t, testbrowser.Timeout(2*time.Minute))
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

	b.Do("open a page of another site", 30*time.Second, chromedp.Navigate(site.URL))
	out := testbrowser.EvalAs[map[string]string](b, fmt.Sprintf(`(async () => {
		const out = {};
		try { const r = await fetch(%[1]q + "/version"); out.read = await r.text(); } catch (e) { out.read = "blocked"; }
		try {
			await fetch(%[1]q + "/v3/kv/deleterange", {method: "POST", mode: "no-cors", body: '{"key":"dmljdGlt"}'});
			out.sent = "sent";
		} catch (e) { out.sent = String(e); }
		return out;
	})()`, cfg.ClientURL), chromedp.EvalAwaitPromise)
	if out["read"] != "blocked" {
		t.Errorf("the page read %q from the client port", out["read"])
	}
	resp, err := cli.Get(ctx, "victim")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("after the page's POST (%s), key victim: %v (%v), want it still there", out["sent"], resp, err)
	}
}
