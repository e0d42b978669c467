package clientsuite_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports_StdlibAndTheProblemVocabularyOnly: programs that import the
// client must not pull in the server, etcd or echo.
func TestImports_StdlibAndTheProblemVocabularyOnly(t *testing.T) {
	for _, dir := range []string{"../../client", "../../problem"} {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			first, _, _ := strings.Cut(imp, "/")
			if strings.Contains(first, ".") && imp != "github.com/baton-dev/baton/problem" {
				t.Errorf("%s imports %s", p.ImportPath, imp)
			}
		}
	}
}
