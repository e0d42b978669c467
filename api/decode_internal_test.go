package api

import (
	"reflect"
	"testing"
)

// exactNames skips bodies of lower-case ASCII (plainLower): that is sound
// only while every member name of every request body is lower-case ASCII.
func TestRequestMemberNames_AreLowerCaseASCII(t *testing.T) {
	for _, v := range []any{&AcquireRequest{}, &RenewRequest{}, &RevokeRequest{}, &SessionRequest{}, &FencedRequest{}} {
		for name := range jsonNames(reflect.TypeOf(v)) {
			if !plainLower([]byte(name)) {
				t.Errorf("%T has the member %q: exactNames' fast path would miss its case variants", v, name)
			}
		}
	}
}

func TestExactNames_RefusesCaseVariantsHoweverSpelt(t *testing.T) {
	for _, body := range []string{
		`{"TTL":"1h"}`,
		`{"\u0054TL":"1h"}`, // an escape spelling an upper-case letter
		`{"ſession":"1"}`,   // U+017F folds to s, as encoding/json knows
		`{"owner":"W1","Wait":"1s"}`,
	} {
		if err := exactNames([]byte(body), &AcquireRequest{}); err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
	for _, body := range []string{`{"owner":"w1","ttl":"30s"}`, `{"owner":"W1","ttl":"30s"}`, `{"metadata":{"Env":"PROD"}}`, `{"\u0074tl":"1h"}`} {
		if err := exactNames([]byte(body), &AcquireRequest{}); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}
