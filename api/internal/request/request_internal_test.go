package request

import "testing"

type fence struct {
	Lock string `json:"lock"`
}

type sample struct {
	fence
	Owner    string            `json:"owner"`
	TTL      string            `json:"ttl"`
	Session  string            `json:"session"`
	Wait     string            `json:"wait"`
	Metadata map[string]string `json:"metadata"`
}

func TestExactNames_RefusesCaseVariantsHoweverSpelt(t *testing.T) {
	for _, body := range []string{
		`{"TTL":"1h"}`,
		`{"\u0054TL":"1h"}`, // an escape spelling an upper-case letter
		`{"ſession":"1"}`,   // U+017F folds to s, as encoding/json knows
		`{"owner":"W1","Wait":"1s"}`,
		`{"Lock":"x"}`, // a member of an embedded struct
	} {
		if err := exactNames([]byte(body), &sample{}); err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
	for _, body := range []string{`{"owner":"w1","ttl":"30s"}`, `{"owner":"W1","ttl":"30s"}`, `{"metadata":{"Env":"PROD"}}`, `{"\u0074tl":"1h"}`} {
		if err := exactNames([]byte(body), &sample{}); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}
