package cli

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseMeta checks `--meta KEY=VALUE` parsing: the fuzzer's string is
// the flag given once per line.
func FuzzParseMeta(f *testing.F) {
	for _, s := range []string{"", "k=v", "k=v\nk2=v2", "k=v=w", "=v", "k", "k=", "k=1\nk=2", "owner=w 1\npath=/a/b?c=d", "é=ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lines string) {
		var kvs []string
		if lines != "" {
			kvs = strings.Split(lines, "\n")
		}
		md, err := parseMeta(kvs)
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: error %T %v, want a usage error", kvs, err, err)
			}
			bad := false
			for _, kv := range kvs {
				k, _, ok := strings.Cut(kv, "=")
				bad = bad || !ok || k == ""
			}
			if !bad {
				t.Fatalf("%q refused (%v), yet every one is KEY=VALUE", kvs, err)
			}
			return
		}
		if len(kvs) == 0 {
			if md != nil {
				t.Fatalf("no --meta gave %v, want nil (no metadata member sent)", md)
			}
			return
		}
		// Every flag is KEY=VALUE split at its first '=', and the last of
		// a repeated key wins, as for any repeated flag.
		want := map[string]string{}
		for _, kv := range kvs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				t.Fatalf("%q accepted, yet %q is not KEY=VALUE", kvs, kv)
			}
			want[k] = v
		}
		if len(md) != len(want) {
			t.Fatalf("%q parsed as %q, want %q", kvs, md, want)
		}
		for k, v := range want {
			if got, ok := md[k]; !ok || got != v {
				t.Fatalf("%q parsed as %q, want %q", kvs, md, want)
			}
		}
		// And back: the map written as flags parses to itself.
		var again []string
		for k, v := range md {
			again = append(again, k+"="+v)
		}
		md2, err := parseMeta(again)
		if err != nil || len(md2) != len(md) {
			t.Fatalf("%q written back as %q parses as %q, %v", md, again, md2, err)
		}
		for k, v := range md {
			if md2[k] != v {
				t.Fatalf("%q written back as %q parses as %q", md, again, md2)
			}
		}
	})
}
