package openapi_test

import (
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/baton-dev/baton/openapi"
	"github.com/baton-dev/baton/tests/contract"
)

// TestDocument_AnyJSONValueTakesEveryValueNullIncluded: fenced values,
// leaders' values and events' values are any JSON. Their schema must
// accept each JSON type and null under kin-openapi (the validator of our
// tests), and be one that ajv-based tools compile (contract.Compilable;
// the lint step of .ci/run compiles it with Redocly CLI too).
func TestDocument_AnyJSONValueTakesEveryValueNullIncluded(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.Compilable(doc); err != nil {
		t.Fatal(err)
	}
	values := []string{`null`, `{}`, `{"balance":42}`, `[]`, `[1,null,"x"]`, `""`, `"text"`, `0`, `-1.5e3`, `true`, `false`}
	for _, name := range []string{"Leader", "CampaignRequest", "ProclaimRequest", "FencedValue", "FencedRequest", "Event"} {
		s := doc.Components.Schemas[name]
		if s == nil || s.Value.Properties["value"] == nil {
			t.Fatalf("no schema %s with a value", name)
		}
		for _, v := range values {
			var x any
			if err := json.Unmarshal([]byte(v), &x); err != nil {
				t.Fatal(err)
			}
			if err := s.Value.Properties["value"].Value.VisitJSON(x); err != nil {
				t.Errorf("%s.value refuses %s: %v", name, v, err)
			}
		}
	}
}
