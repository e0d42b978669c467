package testserver

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/baton-dev/baton/api"
)

// WantStatus fails the test unless r has status.
func WantStatus(t testing.TB, r *Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
}

// DecodeAs decodes r's body into a T (leniently: shape is checked by keys).
func DecodeAs[T any](t testing.TB, r *Response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, r.Body, err)
	}
	return v
}

// WantJSON checks a JSON answer of status and decodes it.
func WantJSON[T any](t testing.TB, r *Response, status int) T {
	t.Helper()
	WantStatus(t, r, status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	return DecodeAs[T](t, r)
}

// WantProblem checks an RFC 9457 answer of status and code, with type,
// title and detail.
func WantProblem(t testing.TB, r *Response, status int, code string) api.Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d (%s); body: %s", r.Status, status, code, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type %q, want application/problem+json; body: %s", ct, r.Body)
	}
	p := DecodeAs[api.Problem](t, r)
	if p.Code != code || p.Status != status || p.Type != api.ProblemType(code) || p.Title == "" || p.Detail == "" {
		t.Fatalf("problem %+v, want code %q status %d with type, title and detail", p, code, status)
	}
	return p
}

// RawObject decodes b as a JSON object, to check member names.
func RawObject(t testing.TB, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode object from %s: %v", b, err)
	}
	return m
}

// AnyOther, in WantKeys's extra, allows any member outside want.
const AnyOther = "*"

// WantKeys checks that obj has every member of want, and no member outside
// want and extra (members the API allows but does not require). With
// AnyOther in extra, only want is checked.
func WantKeys(t testing.TB, what string, obj map[string]json.RawMessage, want, extra []string) {
	t.Helper()
	allowed := map[string]bool{}
	for _, k := range append(append([]string{}, want...), extra...) {
		allowed[k] = true
	}
	for _, k := range want {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s: member %q missing in %v", what, k, keysOf(obj))
		}
	}
	if allowed[AnyOther] {
		return
	}
	for k := range obj {
		if !allowed[k] {
			t.Errorf("%s: unexpected member %q", what, k)
		}
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
