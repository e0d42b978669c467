package testcluster_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-dev/baton/cli"
	"github.com/baton-dev/baton/tests/testcluster"
	"github.com/baton-dev/baton/tests/testetcd"
)

// fingerprint is every file under dir with a hash of its content, so a
// test can tell that nobody wrote a byte there.
func fingerprint(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatalf("fingerprint %s: %v", dir, err)
	}
	return out
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// baton runs the binary and decodes its JSON output into out.
func baton(t *testing.T, out any, args ...string) {
	t.Helper()
	b, err := exec.Command(bin, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("baton %v: %v\n%s%s", args, err, b, stderr)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("baton %v printed %q: %v", args, b, err)
	}
}

type event struct {
	Revision int64  `json:"revision"`
	Type     string `json:"type"`
	Lock     string `json:"lock"`
	Token    int64  `json:"token"`
}

func historyOf(t *testing.T, url string) []event {
	t.Helper()
	var h struct {
		Events []event `json:"events"`
	}
	if err := testcluster.GetJSON(context.Background(), url+"/v1/history?limit=1000", &h); err != nil {
		t.Fatal(err)
	}
	return h.Events
}

// TestBackup_RestoredNodeKeepsFencedValuesHistoryAndTokenOrder is the
// backup procedure of docs/OPERATIONS.md, with real processes: save a
// snapshot of a running node, stop it, restore into a new data dir, start
// a node there.
func TestBackup_RestoredNodeKeepsFencedValuesHistoryAndTokenOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts baton processes")
	}
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 1})
	n := c.Nodes[0]
	url := n.URL()

	// Locks come and go; a fenced value keeps the largest token.
	var maxTok int64
	for _, name := range []string{"a", "b"} {
		acq := call(t, "POST", url+"/v1/locks/"+name, map[string]any{"owner": "w-" + name})
		if acq.status != http.StatusCreated {
			t.Fatalf("acquire %s: %d %v", name, acq.status, acq.body)
		}
		maxTok = max(maxTok, acq.token())
		if put := call(t, "PUT", url+"/v1/fenced/res", map[string]any{"token": acq.token(), "value": "by " + name, "lock": name}); put.status != http.StatusOK {
			t.Fatalf("fenced write: %d %v", put.status, put.body)
		}
		if rel := call(t, "DELETE", fmt.Sprintf("%s/v1/locks/%s?token=%d", url, name, acq.token()), nil); rel.status != http.StatusNoContent {
			t.Fatalf("release %s: %d %v", name, rel.status, rel.body)
		}
	}
	fencedToken := maxTok
	// Held at backup time, and never renewed: a lock of its own and one in
	// a session.
	held := call(t, "POST", url+"/v1/locks/held", map[string]any{"owner": "w-held", "ttl": "10s"})
	sess := call(t, "POST", url+"/v1/sessions", map[string]any{"owner": "w-sess", "ttl": "10s"})
	sid, _ := sess.body["id"].(string)
	sheld := call(t, "POST", url+"/v1/locks/sheld", map[string]any{"owner": "w-sess", "session": sid})
	if held.status != http.StatusCreated || sess.status != http.StatusCreated || sheld.status != http.StatusCreated {
		t.Fatalf("locks held at backup: %d %d %d", held.status, sess.status, sheld.status)
	}
	maxTok = max(maxTok, held.token(), sheld.token())
	before := historyOf(t, url)

	file := filepath.Join(t.TempDir(), "backup.db")
	var saved struct {
		Revision int64 `json:"revision"`
		Keys     int   `json:"keys"`
	}
	baton(t, &saved, "snapshot", "save", file, "--etcd-endpoints", n.ClientURL, "-o", "json")
	if saved.Revision < maxTok || saved.Keys == 0 {
		t.Fatalf("saved snapshot at revision %d with %d keys, want at least revision %d", saved.Revision, saved.Keys, maxTok)
	}
	var status struct {
		Revision int64 `json:"revision"`
	}
	baton(t, &status, "snapshot", "status", file, "-o", "json")
	if status.Revision != saved.Revision {
		t.Fatalf("snapshot status says revision %d, save said %d", status.Revision, saved.Revision)
	}

	n.Terminate()
	oldFiles := fingerprint(t, n.DataDir)

	// Restore refuses a data dir that is not empty, the old one above all.
	peer := "http://" + testetcd.FreeAddr(t)
	if out, err := exec.Command(bin, "snapshot", "restore", file, "--data-dir", n.DataDir,
		"--name", "r1", "--peer-url", peer).CombinedOutput(); err == nil {
		t.Fatalf("restore into the old, full data dir succeeded:\n%s", out)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	var res struct {
		Revision int64    `json:"revision"`
		Flags    []string `json:"flags"`
	}
	baton(t, &res, "snapshot", "restore", file, "--data-dir", restored, "--name", "r1",
		"--peer-url", peer, "--initial-cluster", "r1="+peer, "-o", "json")
	if want := saved.Revision + cli.DefaultRevisionBump; res.Revision != want {
		t.Fatalf("restore reports revision %d, want the snapshot's %d plus the bump", res.Revision, saved.Revision)
	}
	// The flags restore prints are the ones to start with; AddNode's own
	// --data-dir comes first, and the later flag wins.
	r := c.AddNode("r1", res.Flags)
	rurl := r.URL()

	// The fenced value and the whole history are there.
	fv := call(t, "GET", rurl+"/v1/fenced/res", nil)
	if fv.status != http.StatusOK || fv.token() != fencedToken || fv.body["value"] != "by b" {
		t.Fatalf("fenced value after restore: %d %v, want token %d by b", fv.status, fv.body, fencedToken)
	}
	after := historyOf(t, rurl)
	have := map[event]bool{}
	for _, ev := range after {
		have[ev] = true
	}
	for _, ev := range before {
		if !have[ev] {
			t.Errorf("event %+v from before the backup is missing after the restore", ev)
		}
	}
	// A stale token is still refused: the fence's largest token came back.
	if put := call(t, "PUT", rurl+"/v1/fenced/res", map[string]any{"token": fencedToken - 1, "value": "stale"}); put.status != http.StatusConflict {
		t.Fatalf("stale fenced write after restore: %d %v, want 409", put.status, put.body)
	}

	// The locks held at backup time came back with their leases...
	if got := call(t, "GET", rurl+"/v1/locks/held", nil); got.status != http.StatusOK || got.token() != held.token() {
		t.Fatalf("lock held at backup, just after the restore: %d %v, want held with token %d", got.status, got.body, held.token())
	}
	// ...and a new acquire's token is above every token of the old
	// cluster, and above the bump.
	fresh := call(t, "POST", rurl+"/v1/locks/after-restore", map[string]any{"owner": "w-new"})
	if fresh.status != http.StatusCreated || fresh.token() <= maxTok || fresh.token() <= res.Revision {
		t.Fatalf("acquire after restore: %d token %d, want above %d and above the bumped revision %d", fresh.status, fresh.token(), maxTok, res.Revision)
	}

	// Unrenewed, they expire, and the audit trail says so, once each.
	ends := map[string]string{"held": "expired", "sheld": "session_expired"}
	deadline := time.Now().Add(60 * time.Second)
	// etcd expires the leases by itself; nothing announces it to a client
	// but the audit trail, so poll that.
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		found := map[string]int{}
		for _, ev := range historyOf(t, rurl) {
			if ends[ev.Lock] == ev.Type {
				found[ev.Lock]++
			}
		}
		if found["held"] == 1 && found["sheld"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s the audit trail has %v end events for the locks held at backup, want one expired and one session_expired\n%s", found, r.LogTail())
		}
		<-tick.C
	}
	if got := call(t, "GET", rurl+"/v1/locks/held", nil); got.status != http.StatusNotFound {
		t.Fatalf("lock held at backup after its expiry: %d %v", got.status, got.body)
	}

	if !sameFiles(oldFiles, fingerprint(t, n.DataDir)) {
		t.Fatal("the old data dir changed during restore or while the restored node ran")
	}
}
