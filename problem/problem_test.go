package problem_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/baton-dev/baton/problem"
)

// TestTable_EveryCodeConstantHasAnEntry reads this package's source, so
// that a constant added without its table entry (status, title, retry,
// exit) fails here rather than panicking in Get at run time.
func TestTable_EveryCodeConstantHasAnEntry(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "problem.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				code, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				n++
				if _, ok := problem.Lookup(code); !ok {
					t.Errorf("code %q has no entry in the table", code)
				}
			}
		}
	}
	if n != len(problem.All()) {
		t.Errorf("%d Code constants, %d table entries", n, len(problem.All()))
	}
}

func TestTable_EntriesAreComplete(t *testing.T) {
	for _, i := range problem.All() {
		if i.Status < 400 || i.Status > 599 || i.Title == "" || i.Exit == problem.ExitOK {
			t.Errorf("%+v: want a 4xx or 5xx status, a title and a non-zero exit status", i)
		}
		if i.Retry == problem.Later && i.Status != 429 {
			t.Errorf("%s: retried later but answers %d; Later is for 429s, which carry Retry-After", i.Code, i.Status)
		}
	}
}
