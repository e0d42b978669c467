package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The limits that keep the packages a new primitive touches easy to read
// and to change: a function longer than a screen or two hides its seams,
// and a lock/ or trail/ file that holds several of them hides where the next one
// goes. Tests count too: a test is read more often than it is written.
const (
	maxFuncLines     = 80
	maxLockFileLines = 600
)

// structurePackages are the packages the limits hold for, each with the
// packages under it.
var structurePackages = []string{"lock", "trail", "api", "server", "client", "internal"}

// goFiles are the Go files of dir and of the directories under it.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	return files
}

// TestStructure_FunctionsAndFilesStayShort fails on a function of
// structurePackages longer than maxFuncLines, counted from its func line
// to its closing brace, and on a file of lock/ or trail/ longer than
// maxLockFileLines.
func TestStructure_FunctionsAndFilesStayShort(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range structurePackages {
		for _, path := range goFiles(t, dir) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(src), "\n"); (dir == "lock" || dir == "trail") && n > maxLockFileLines {
				t.Errorf("%s: %d lines, more than %d: split it along a seam", path, n, maxLockFileLines)
			}
			f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				lines := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Pos()).Line + 1
				if lines > maxFuncLines {
					t.Errorf("%s: %s is %d lines, more than %d", fset.Position(fd.Pos()), fd.Name.Name, lines, maxFuncLines)
				}
			}
		}
	}
}
