package api

import (
	"reflect"
	"strings"
	"testing"
)

// Package request skips the case check of bodies of lower-case ASCII:
// that is sound only while every member name of every request body is
// lower-case ASCII.
func TestRequestMemberNames_AreLowerCaseASCII(t *testing.T) {
	for _, v := range []any{
		AcquireRequest{}, RenewRequest{}, RevokeRequest{}, SessionRequest{}, FencedRequest{}, PutKeyRequest{}, DeleteKeyRequest{},
	} {
		for _, name := range memberNames(reflect.TypeOf(v)) {
			if strings.ToLower(name) != name || strings.ContainsFunc(name, func(r rune) bool { return r >= 0x80 || r == '\\' }) {
				t.Errorf("%T has the member %q: the request package's fast path would miss its case variants", v, name)
			}
		}
	}
}

// memberNames are the JSON member names of struct type t, embedded
// structs' included.
func memberNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, memberNames(f.Type)...)
		case name == "-" || !f.IsExported():
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	return out
}
