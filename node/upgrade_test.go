package node_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/internal/poll"
)

// testdata/datadir-v1.tar.gz is the data dir of a node of the baton
// before the history index (commit 2cfba9a), after 30 acquire/release
// cycles on three locks, a revoke, an expiry and one lock left held for
// 24 h, with history-before.json, its GET /v1/history?limit=1000 then.

// eventJSON is what an event must keep across the upgrade.
type eventJSON struct {
	Revision int64  `json:"revision"`
	Type     string `json:"type"`
	Lock     string `json:"lock"`
	Owner    string `json:"owner"`
	Token    int64  `json:"token"`
}

type historyJSON struct {
	Events     []eventJSON `json:"events"`
	NextBefore int64       `json:"next_before"`
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o700)
		case tar.TypeReg:
			var out *os.File
			if out, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
				_, err = io.Copy(out, tr)
				out.Close()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestNode_UpgradeFromADataDirWithoutTheHistoryIndexKeepsEveryEvent, at
// the old data dir's storage format (1), and with the format raised to 2
// to 5 as the node starts (--storage-format): the hold taken before the
// upgrade then ends through its pending records.
func TestNode_UpgradeFromADataDirWithoutTheHistoryIndexKeepsEveryEvent(t *testing.T) {
	for _, format := range []int{0, 2, 3, 4, 5} {
		t.Run(fmt.Sprintf("storage-format %d", format), func(t *testing.T) { upgradeKeepsEveryEvent(t, format) })
	}
}

func upgradeKeepsEveryEvent(t *testing.T, format int) {
	dir := t.TempDir()
	untar(t, "testdata/datadir-v1.tar.gz", dir)
	var before historyJSON
	b, err := os.ReadFile(filepath.Join(dir, "history-before.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &before); err != nil || len(before.Events) != 65 {
		t.Fatalf("history-before.json: %d events, %v; want 65", len(before.Events), err)
	}
	cfg := testConfig(t)
	cfg.DataDir, cfg.Name = filepath.Join(dir, "data"), "default"
	cfg.StorageFormat = format
	n := start(t, cfg)
	base := "http://" + n.Addr()
	resp, err := n.Engine().Client().Get(context.Background(), "/baton/meta/format")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(resp.Kvs) > 0, format >= 2; got != want {
		t.Fatalf("meta/format %v with --storage-format %d: the old data dir is at 1 until raised", resp.Kvs, format)
	}

	var after historyJSON
	if code := call(t, "GET", base+"/v1/history?limit=1000", nil, &after); code != 200 {
		t.Fatalf("history: %d", code)
	}
	if fmt.Sprint(after.Events) != fmt.Sprint(before.Events) {
		t.Fatalf("history after the upgrade:\n%v\nwant the old trail:\n%v", after.Events, before.Events)
	}
	for _, name := range []string{"old-1", "old-revoked", "old-expiring"} {
		var mine historyJSON
		call(t, "GET", base+"/v1/history?limit=1000&lock="+name, nil, &mine)
		var want []eventJSON
		for _, ev := range before.Events {
			if ev.Lock == name {
				want = append(want, ev)
			}
		}
		if len(want) == 0 || fmt.Sprint(mine.Events) != fmt.Sprint(want) {
			t.Errorf("history of %s: %v; want %v", name, mine.Events, want)
		}
	}
	pendingLeft(t, n.Engine().Client(), 1) // the acquired record of old-open, held still

	// The hold taken before the upgrade ends once, and its records go.
	if code := call(t, "DELETE", base+"/v1/locks/old-open?token=64", nil, nil); code != 204 {
		t.Fatalf("release old-open: %d", code)
	}
	var open historyJSON
	call(t, "GET", base+"/v1/history?lock=old-open", nil, &open)
	if len(open.Events) != 2 || open.Events[0].Type != "released" || open.Events[1].Token != 64 {
		t.Fatalf("old-open's history: %v; want released, then the acquired of token 64", open.Events)
	}
	pendingLeft(t, n.Engine().Client(), 0)
}

// pendingLeft waits until want pending audit records are left: the index
// deletes each once it holds its event (an acquired one once its hold's
// end is indexed too).
func pendingLeft(t *testing.T, cli *clientv3.Client, want int64) {
	t.Helper()
	var got int64
	poll.Until(t, 10*time.Second, fmt.Sprintf("%d pending audit records", want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, "/baton/audit/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		got = resp.Count
		return got == want
	})
}
