package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// The limits that keep the packages a new primitive touches easy to read
// and to change: a function longer than a screen or two hides its seams;
// a package of more than maxPackageLines holds several concerns, and
// hides where the next one goes; a facade with more than maxFacadeMethods
// is an engine again. Tests count for functions: a test is read more
// often than it is written.
const (
	maxFuncLines     = 80
	maxPackageLines  = 4000
	maxFacadeMethods = 80
)

// structurePackages are the packages the function limit holds for, each
// with the packages under it. The package limit holds for every package
// of the module.
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

// TestStructure_FunctionsStayShort fails on a function of
// structurePackages longer than maxFuncLines, counted from its func line
// to its closing brace.
func TestStructure_FunctionsStayShort(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range structurePackages {
		for _, path := range goFiles(t, dir) {
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
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

// TestStructure_PackagesStaySmall fails on a package of the module with
// more than maxPackageLines lines of Go that is neither a test nor
// generated ("Code generated ... DO NOT EDIT.").
func TestStructure_PackagesStaySmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) < 20 {
		t.Fatalf("go list found %d packages; expected the whole module", len(dirs))
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		n := 0
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if isGenerated(src) {
				continue
			}
			n += strings.Count(string(src), "\n")
		}
		if n > maxPackageLines {
			t.Errorf("%s: %d lines of non-test Go, more than %d: split it along a seam (docs/ARCHITECTURE.md)", dir, n, maxPackageLines)
		}
	}
}

// isGenerated reports whether src carries Go's generated-code marker
// before its package clause.
func isGenerated(src []byte) bool {
	for line := range strings.Lines(string(src)) {
		if strings.HasPrefix(line, "package ") {
			return false
		}
		if strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(strings.TrimSpace(line), "DO NOT EDIT.") {
			return true
		}
	}
	return false
}

// TestStructure_TheFacadeStaysThin fails when lock.Engine, the facade
// over the hold engine and its packages, declares more than
// maxFacadeMethods methods.
func TestStructure_TheFacadeStaysThin(t *testing.T) {
	fset := token.NewFileSet()
	n := 0
	files, _ := filepath.Glob("lock/*.go")
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && recvName(fd) == "Engine" {
				n++
			}
		}
	}
	if n == 0 || n > maxFacadeMethods {
		t.Errorf("lock.Engine declares %d methods; want 1 to %d: give a concern a type or package of its own", n, maxFacadeMethods)
	}
}

// recvName is the name of fd's receiver type.
func recvName(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestStructure_KindsOverrideWhatTheyMean: a kind of package lock embeds
// core.LockKind and overrides the methods of core.HoldKind it changes. Go
// embedding has no virtual dispatch across packages for unexported
// names: a kind's method spelled in lower case would compile and never
// be called, the plain lock's running instead. So a kind declares no
// method whose exported spelling is a method of the strategy interfaces.
func TestStructure_KindsOverrideWhatTheyMean(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "lock/internal/core/kind.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	strategy := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if it, ok := n.(*ast.InterfaceType); ok {
			for _, m := range it.Methods.List {
				for _, name := range m.Names {
					strategy[name.Name] = true
				}
			}
		}
		return true
	})
	if !strategy["Cmps"] || !strategy["Look"] {
		t.Fatalf("read no strategy interface from kind.go: %v", strategy)
	}
	kinds, methods := map[string]bool{}, map[string][]*ast.FuncDecl{}
	files, _ := filepath.Glob("lock/*.go")
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && embedsLockKind(ts) {
						kinds[ts.Name.Name] = true
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil {
					methods[recvName(d)] = append(methods[recvName(d)], d)
				}
			}
		}
	}
	if len(kinds) < 3 {
		t.Fatalf("found %d kinds embedding core.LockKind in lock/; expected every kind", len(kinds))
	}
	for kind := range kinds {
		for _, fd := range methods[kind] {
			name := []rune(fd.Name.Name)
			if unicode.IsLower(name[0]) && strategy[string(unicode.ToUpper(name[0]))+string(name[1:])] {
				t.Errorf("%s: %s.%s overrides nothing: spell it %c%s", fset.Position(fd.Pos()), kind, fd.Name.Name, unicode.ToUpper(name[0]), string(name[1:]))
			}
		}
	}
}

// embedsLockKind reports whether ts is a struct embedding core.LockKind.
func embedsLockKind(ts *ast.TypeSpec) bool {
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return false
	}
	for _, f := range st.Fields.List {
		if sel, ok := f.Type.(*ast.SelectorExpr); ok && len(f.Names) == 0 && sel.Sel.Name == "LockKind" {
			return true
		}
	}
	return false
}
