package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-dev/baton/embedetcd"
	"github.com/baton-dev/baton/node"
)

// TestMemberAndSnapshot_ReachANodeWithoutAClientPortThroughItsSocket: a
// node with --auth-file and no --client-trusted-ca serves no client TCP
// port; on its machine, member and snapshot save find its socket from
// BATON_DATA_DIR, or take it as --etcd-endpoints; save - streams the
// snapshot to stdout, whole enough to restore.
func TestMemberAndSnapshot_ReachANodeWithoutAClientPortThroughItsSocket(t *testing.T) {
	var dataDir string
	startNode(t, func(c *node.Config) {
		c.AuthFile = filepath.Join(t.TempDir(), "auth")
		if err := os.WriteFile(c.AuthFile, []byte("admin admin-token-0123456789abcdef\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		dataDir = c.DataDir
	})
	sock := embedetcd.SocketURL(dataDir)

	out, errs, code := runEnv(t, []string{"BATON_DATA_DIR=" + dataDir}, "member", "list")
	if code != 0 || !strings.Contains(out, "n1") || !strings.Contains(out, sock) {
		t.Fatalf("member list with BATON_DATA_DIR: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runEnv(t, nil, "member", "list", "--etcd-endpoints", sock, "-o", "json")
	if code != 0 || !strings.Contains(out, `"n1"`) {
		t.Fatalf("member list --etcd-endpoints %s: exit %d\n%s%s", sock, code, out, errs)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if out, errs, code := runEnv(t, []string{"BATON_DATA_DIR=" + dataDir}, "snapshot", "save", backup); code != 0 {
		t.Fatalf("snapshot save through the socket: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := runEnv(t, nil, "snapshot", "status", backup); code != 0 || !strings.Contains(out, "keys") {
		t.Fatalf("snapshot status of the saved file: exit %d\n%s%s", code, out, errs)
	}

	// As "kubectl exec baton-0 -- baton snapshot save - > backup.db" does,
	// in an image without tar for kubectl cp.
	out, errs, code = runEnv(t, []string{"BATON_DATA_DIR=" + dataDir}, "snapshot", "save", "-")
	if code != 0 || !strings.HasPrefix(errs, "saved to stdout: ") || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "SHA-256 checked") {
		t.Fatalf("snapshot save - through the socket: exit %d, stderr (want the summary alone):\n%s", code, errs)
	}
	streamed := filepath.Join(t.TempDir(), "streamed.db")
	if err := os.WriteFile(streamed, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := runEnv(t, nil, "snapshot", "status", streamed); code != 0 || !strings.Contains(out, "keys") {
		t.Fatalf("snapshot status of the streamed file: exit %d\n%s%s", code, out, errs)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if out, errs, code := runEnv(t, nil, "snapshot", "restore", streamed, "--data-dir", restored); code != 0 {
		t.Fatalf("snapshot restore of the streamed file (checks its SHA-256): exit %d\n%s%s", code, out, errs)
	}
}
