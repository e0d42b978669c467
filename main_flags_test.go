package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

var updateFlags = flag.Bool("update-flags", false, "rewrite testdata/serve-flags.golden from the flags as they are")

// serveFlagsText renders a flag set as its help shows it (name, type,
// default, usage with the environment twin) and, since help omits zero
// defaults, one "name type default" line per flag.
func serveFlagsText(fs *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString("# help\n")
	b.WriteString(fs.FlagUsages())
	b.WriteString("# name type default\n")
	fs.VisitAll(func(f *pflag.Flag) {
		fmt.Fprintf(&b, "--%s %s %q\n", f.Name, f.Value.Type(), f.DefValue)
	})
	return b.String()
}

// TestServeFlags_AreThePublicContract pins every flag of "baton" and
// "baton serve" (name, type, default, help and its environment twin)
// to testdata/serve-flags.golden: they are public (docs/API.md, Command
// line), so a refactor must leave them as they are, and a new flag shows
// up here on purpose. go test -run TestServeFlags -update-flags rewrites
// the file.
func TestServeFlags_AreThePublicContract(t *testing.T) {
	root := newRootCmd()
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	got := serveFlagsText(serve.Flags())
	if r := serveFlagsText(root.Flags()); r != got {
		t.Errorf("baton and baton serve have different flags:\nbaton:\n%s\nbaton serve:\n%s", r, got)
	}
	golden := filepath.Join("testdata", "serve-flags.golden")
	if *updateFlags {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("serve flags changed; if on purpose, run go test -run TestServeFlags -update-flags and update docs/API.md.\n%s", lineDiff(string(want), got))
	}
}

// lineDiff lists the lines only one of want and got has.
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
