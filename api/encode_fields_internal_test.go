package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The hand-written encoders must write every field of Lock and Session:
// each field, nested ones too, is set to a value that is not its zero, so
// encoding/json writes every member, omitempty or not. A field added to
// either type without encoder support fails here, by name.
func TestAppendLockAndSession_CoverEveryField(t *testing.T) {
	var l Lock
	var s Session
	for _, tc := range []struct {
		v      any
		encode func([]byte) []byte
	}{
		{&l, func(b []byte) []byte { return appendLock(b, &l) }},
		{&s, func(b []byte) []byte { return appendSession(b, &s) }},
	} {
		n := 0
		fillEveryField(t, reflect.ValueOf(tc.v).Elem(), &n)
		want, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		got := tc.encode(nil)
		var gotMembers map[string]json.RawMessage
		if err := json.Unmarshal(got, &gotMembers); err != nil {
			t.Fatalf("%T: the encoder wrote %s: %v", tc.v, got, err)
		}
		typ := reflect.TypeOf(tc.v).Elem()
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if _, ok := gotMembers[name]; !ok {
				t.Errorf("%s.%s (%q) is not written by the hand-written encoder (encode.go)", typ.Name(), f.Name, name)
			}
		}
		if string(got) != string(want) {
			t.Errorf("%T with every field set:\nencoder       %s\nencoding/json %s", tc.v, got, want)
		}
	}
}

// fillEveryField sets v, and every field, element and entry under it, to
// a value of its own that is not the zero value.
func fillEveryField(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch {
	case v.Type() == reflect.TypeFor[Time]():
		v.Set(reflect.ValueOf(Time(time.Date(2026, 11, 29, 14, 25, *n, 0, time.UTC))))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			fillEveryField(t, v.Field(i), n)
		}
	case v.Kind() == reflect.String:
		v.SetString(fmt.Sprintf("v%d", *n))
	case v.CanInt():
		v.SetInt(int64(*n))
	case v.Kind() == reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillEveryField(t, k, n)
		fillEveryField(t, e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case v.Kind() == reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range s.Len() {
			fillEveryField(t, s.Index(i), n)
		}
		v.Set(s)
	default:
		t.Fatalf("no test value for a %s: teach fillEveryField, and the encoder", v.Type())
	}
}
