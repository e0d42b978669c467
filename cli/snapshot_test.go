package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshot_BadInputIsAUsageErrorAndAnUnreachableEtcdIsUnavailable(t *testing.T) {
	dir := t.TempDir()
	notASnapshot := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(notASnapshot, []byte("not an etcd database"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"snapshot", "save"}, 2, "takes 1 argument"},
		{[]string{"snapshot", "save", filepath.Join(dir, "x.db"), "--etcd-endpoints", "http://a:2379,http://b:2379"}, 2, "one client URL"},
		{[]string{"snapshot", "restore", notASnapshot}, 2, "--data-dir is required"},
		{[]string{"snapshot", "restore", notASnapshot, "--data-dir", fresh, "--peer-url", "nope"}, 2, "--peer-url"},
		{[]string{"snapshot", "status", "-o", "yaml", notASnapshot}, 2, "--output"},
		// A file that is no snapshot fails, and leaves no half data dir.
		{[]string{"snapshot", "restore", notASnapshot, "--data-dir", fresh}, 1, "read snapshot"},
		{[]string{"snapshot", "status", notASnapshot}, 1, "read snapshot"},
		// Nothing listens there: the save gives up at its --timeout.
		{[]string{"snapshot", "save", filepath.Join(dir, "y.db"), "--etcd-endpoints", "http://127.0.0.1:1", "--timeout", "1s"}, 6, "save snapshot"},
	} {
		_, stderr, code := run(t, "http://127.0.0.1:1", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("baton %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	for _, p := range []string{fresh, filepath.Join(dir, "x.db"), filepath.Join(dir, "y.db"), filepath.Join(dir, "y.db.part")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed command (%v)", p, err)
		}
	}
}
