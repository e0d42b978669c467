package testserver

import (
	"encoding/json"
	"fmt"
	"testing"
)

// recTB records the errors a helper reports instead of failing.
type recTB struct {
	testing.TB
	errs []string
}

func (r *recTB) Helper() {}

func (r *recTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestWantKeys(t *testing.T) {
	obj := map[string]json.RawMessage{"a": json.RawMessage("1"), "b": json.RawMessage("2"), "c": json.RawMessage("3")}
	for _, tc := range []struct {
		name        string
		want, extra []string
		errs        int
	}{
		{"exact", []string{"a", "b", "c"}, nil, 0},
		{"extra allowed", []string{"a", "b"}, []string{"c", "d"}, 0},
		{"unexpected member", []string{"a", "b"}, nil, 1},
		{"missing member", []string{"a", "b", "c", "d"}, nil, 1},
		{"any other", []string{"a"}, []string{AnyOther}, 0},
		{"any other, missing member", []string{"a", "d"}, []string{AnyOther}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recTB{TB: t}
			WantKeys(r, "obj", obj, tc.want, tc.extra)
			if len(r.errs) != tc.errs {
				t.Errorf("errors %q, want %d", r.errs, tc.errs)
			}
		})
	}
}
