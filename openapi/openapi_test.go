package openapi_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/baton-dev/baton/openapi"
	"github.com/baton-dev/baton/openapi/internal/spec"
)

// TestDocument_IsFreshFromTheAnnotations is the golden test: the committed
// document must be exactly what the handlers' annotations generate now.
func TestDocument_IsFreshFromTheAnnotations(t *testing.T) {
	j, y, err := spec.Build("..")
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	for _, f := range []struct {
		name            string
		committed, want []byte
	}{{"openapi.json", openapi.JSON, j}, {"openapi.yaml", openapi.YAML, y}} {
		if !bytes.Equal(f.committed, f.want) {
			t.Errorf("openapi/%s is stale (%s); run: go generate ./openapi", f.name, firstDiff(f.committed, f.want))
		}
	}
}

func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d: committed %q, generated %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("committed %d lines, generated %d", len(al), len(bl))
}

func TestDocument_IsValidOpenAPI3(t *testing.T) {
	for name, data := range map[string][]byte{"json": openapi.JSON, "yaml": openapi.YAML} {
		doc, err := openapi3.NewLoader().LoadFromData(data)
		if err != nil {
			t.Fatalf("%s: load: %v", name, err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			t.Fatalf("%s: invalid OpenAPI 3 document: %v", name, err)
		}
		if !strings.HasPrefix(doc.OpenAPI, "3.") {
			t.Fatalf("%s: openapi version %q, want 3.x", name, doc.OpenAPI)
		}
	}
}

// TestDocument_EveryOperationIsDocumented checks what a client generator
// and a reader need of each operation: an ID, a summary, and the shared
// Problem schema, as problem+json, for every error status.
func TestDocument_EveryOperationIsDocumented(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s: operationId %q missing or not unique", where, op.OperationID)
			}
			ids[op.OperationID] = true
			if op.Summary == "" || op.Description == "" {
				t.Errorf("%s: no summary or description", where)
			}
			for code, r := range op.Responses.Map() {
				if code[0] < '4' {
					continue
				}
				mt := r.Value.Content.Get("application/problem+json")
				if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Problem" {
					t.Errorf("%s %s: error response is not application/problem+json with the Problem schema", where, code)
				}
			}
		}
	}
}
