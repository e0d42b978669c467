package chaos

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestdataPatchesApply: each bug that testdata/*.patch plants (and
// docs/CLUSTER.md tells how to catch) still applies to the code as it is:
// a patch that no longer applies shows nothing, however good the checks.
// It needs git and the repository (a clean clone, as CI has).
func TestTestdataPatchesApply(t *testing.T) {
	patches, err := filepath.Glob(filepath.Join("testdata", "*.patch"))
	if err != nil || len(patches) == 0 {
		t.Fatalf("no testdata/*.patch: %v", err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root, err := exec.Command(git, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git repository: %v", err)
	}
	for _, p := range patches {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(git, "apply", "--check", abs)
		cmd.Dir = strings.TrimSpace(string(root))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s no longer applies: make it again against the code as it is: %v\n%s", p, err, out)
		}
	}
}
