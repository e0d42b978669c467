package openapi_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/baton-dev/baton/openapi"
)

// TestOpenAPI_EveryOperationsTagIsDeclared: tools group operations by the
// top-level tags list, and one not declared there shows without its
// description, or not at all.
func TestOpenAPI_EveryOperationsTagIsDeclared(t *testing.T) {
	var doc struct {
		Tags []struct {
			Name, Description string
		} `json:"tags"`
		Paths map[string]map[string]struct {
			Tags []string `json:"tags"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, tag := range doc.Tags {
		if tag.Description == "" {
			t.Errorf("tag %q has no description", tag.Name)
		}
		declared = append(declared, tag.Name)
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if len(op.Tags) == 0 {
				t.Errorf("%s %s has no tag", method, path)
			}
			for _, tag := range op.Tags {
				if !slices.Contains(declared, tag) {
					t.Errorf("%s %s is tagged %q, which the document's tags do not declare (api/doc.go)", method, path, tag)
				}
			}
		}
	}
}

// TestOpenAPI_TheBearerTokenIsOptionalAsTheServerIs: a node needs a token
// only with --auth-file, so every operation that names the bearer scheme
// also allows none (an empty requirement): a client generated from the
// document must not insist on a token a node without --auth-file never
// asks for.
func TestOpenAPI_TheBearerTokenIsOptionalAsTheServerIs(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Security []map[string][]string `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if len(op.Security) == 0 {
				continue
			}
			n++
			if !slices.ContainsFunc(op.Security, func(r map[string][]string) bool { return len(r) == 0 }) {
				t.Errorf("%s %s: security %v has no empty alternative", method, path, op.Security)
			}
		}
	}
	if n == 0 {
		t.Fatal("no operation names a security requirement: the document lost them")
	}
}
