// Package spec builds baton's OpenAPI 3 document from the swag annotations
// of package api. swag v1 writes Swagger 2.0; kin-openapi's openapi2conv
// converts it to OpenAPI 3.0, which kin-openapi's validator and
// oapi-codegen both support fully (3.1 support is partial in both, and
// swag v2, which writes 3.1, is not released). A few touches that
// Swagger 2.0 cannot express are applied after the conversion.
//
// go generate in package openapi and the golden test both call Build, so
// the committed document is exactly what the annotations produce.
package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/swaggo/swag/gen"
	"sigs.k8s.io/yaml"
)

// Build generates the document from the annotated handlers in
// root/api and root/server, and returns it as JSON and as YAML.
func Build(root string) (jsonDoc, yamlDoc []byte, err error) {
	tmp, err := os.MkdirTemp("", "baton-swag-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	err = gen.New().Build(&gen.Config{
		SearchDir:         filepath.Join(root, "api") + "," + filepath.Join(root, "server"),
		MainAPIFile:       "doc.go",
		OutputDir:         tmp,
		OutputTypes:       []string{"json"},
		ParseDepth:        1,
		UseStructNames:    true, // "Lock", not "api.Lock": nicer names in generated clients
		RequiredByDefault: true, // every field without omitempty is always present
		Strict:            true,
		Debugger:          quiet{},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("swag: %w", err)
	}
	raw, err := os.ReadFile(filepath.Join(tmp, "swagger.json"))
	if err != nil {
		return nil, nil, err
	}
	var doc2 openapi2.T
	if err := json.Unmarshal(raw, &doc2); err != nil {
		return nil, nil, fmt.Errorf("read swagger 2.0: %w", err)
	}
	doc, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		return nil, nil, fmt.Errorf("convert to OpenAPI 3: %w", err)
	}
	if err := refine(doc); err != nil {
		return nil, nil, err
	}
	jsonDoc, err = json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	jsonDoc = append(jsonDoc, '\n')
	yamlDoc, err = yaml.JSONToYAML(jsonDoc)
	if err != nil {
		return nil, nil, err
	}
	return jsonDoc, yamlDoc, nil
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

const (
	mimeJSON    = "application/json"
	mimeProblem = "application/problem+json"
)

// anyJSON marks the properties that hold any JSON value: Swagger 2.0 has
// no way to say so, so swag wrote them as objects. Each becomes a
// reference to the AnyValue component (see anyValue).
var anyJSON = map[string][]string{
	"FencedValue":     {"value"},
	"FencedRequest":   {"value"},
	"Leader":          {"value"},
	"CampaignRequest": {"value"},
	"ProclaimRequest": {"value"},
	"Event":           {"value"},
	"Key":             {"value"},
	"PutKeyRequest":   {"value"},
}

// bodyExamples are request bodies a person can send as they are from the
// /docs page. Without them Swagger UI builds one from every property's
// example, which for acquire sets both session and ttl: a 400.
var bodyExamples = map[string]any{
	"acquireLock":   map[string]any{"owner": "w1", "ttl": "30s", "wait": "10s", "metadata": map[string]any{"job": "nightly"}},
	"createSession": map[string]any{"owner": "worker-1", "ttl": "30s"},
	"renewLock":     map[string]any{"token": 4711},
	"revokeLock":    map[string]any{"reason": "holder is wedged"},
	"putFenced":     map[string]any{"token": 4711, "value": map[string]any{"balance": 100}, "lock": "nightly-recon"},
	"campaign":      map[string]any{"candidate": "node-a", "value": map[string]any{"addr": "10.0.0.5:8080"}, "ttl": "15s", "wait": "30s"},
	"proclaim":      map[string]any{"token": 4711, "value": map[string]any{"addr": "10.0.0.6:8080"}},
	"putKey":        map[string]any{"value": map[string]any{"host": "db-1", "port": 5432}},
	// A request to yield asks every hold unless it names a token.
	"yieldLock":       map[string]any{"owner": "batch-7", "reason": "nightly backup needs the lock"},
	"yieldLeadership": map[string]any{"reason": "node-a is draining"},
	"yieldPermits":    map[string]any{"reason": "a priority job is waiting"},
	"yieldRW":         map[string]any{"owner": "migrator", "reason": "schema change"},
}

// refine applies what Swagger 2.0 cannot express: errors are
// application/problem+json and successes application/json (swag can only
// list produces per operation, not per status), request bodies are JSON
// only, and fenced and election values are any JSON.
func refine(doc *openapi3.T) error {
	doc.OpenAPI = "3.0.3"
	for _, path := range sortedPaths(doc) {
		for method, op := range doc.Paths.Value(path).Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				if mt := op.RequestBody.Value.Content.Get(mimeJSON); mt != nil {
					op.RequestBody.Value.Content = openapi3.Content{mimeJSON: mt}
					if ex, ok := bodyExamples[op.OperationID]; ok {
						mt.Example = ex
					}
				}
			}
			for code, ref := range op.Responses.Map() {
				resp := ref.Value
				if resp == nil || len(resp.Content) == 0 {
					continue
				}
				status, err := strconv.Atoi(code)
				if err != nil {
					return fmt.Errorf("%s %s: response %q is not a status code", method, path, code)
				}
				// swag gives every response all of the operation's
				// produces; keep the one this response is sent as.
				want := mimeJSON
				var mt *openapi3.MediaType
				for name, m := range resp.Content {
					mt = m
					if status < 400 && resp.Content.Get(mimeJSON) == nil {
						want = name // text/plain, text/event-stream: the only one
					}
				}
				if status >= 400 {
					want = mimeProblem
				}
				resp.Content = openapi3.Content{want: mt}
			}
		}
	}
	if err := standard(doc); err != nil {
		return err
	}
	// Swagger 2.0 has no bearer scheme, so swag wrote BearerAuth as an
	// API key in the Authorization header, for which Swagger UI's
	// Authorize dialog wants "Bearer TOKEN" typed in full. As OpenAPI 3's
	// http bearer scheme, it asks for the token and sends the header.
	bearer := doc.Components.SecuritySchemes["BearerAuth"]
	if bearer == nil || bearer.Value == nil {
		return fmt.Errorf("security scheme BearerAuth not found")
	}
	bearer.Value = &openapi3.SecurityScheme{Type: "http", Scheme: "bearer", Description: bearer.Value.Description}
	// The token is needed only when the node runs with --auth-file: each
	// operation's requirement is the bearer token, or nothing (an empty
	// alternative), which swag cannot write.
	for _, path := range sortedPaths(doc) {
		for _, op := range doc.Paths.Value(path).Operations() {
			if op.Security != nil && len(*op.Security) > 0 {
				*op.Security = append(*op.Security, openapi3.SecurityRequirement{})
			}
		}
	}
	doc.Components.Schemas[anyValue] = anyValueSchema()
	for name, props := range anyJSON {
		s := doc.Components.Schemas[name]
		if s == nil || s.Value == nil {
			return fmt.Errorf("schema %s not found", name)
		}
		for _, p := range props {
			if s.Value.Properties[p] == nil {
				return fmt.Errorf("schema %s has no property %s", name, p)
			}
			s.Value.Properties[p] = openapi3.NewSchemaRef("#/components/schemas/"+anyValue, doc.Components.Schemas[anyValue].Value)
		}
	}
	if err := limit(doc); err != nil {
		return err
	}
	return doc.Validate(openapi3.NewLoader().Context)
}

// anyValue is the component that every JSON value matches, null
// included. OpenAPI 3.0 has no null type, and its nullable means something
// only beside a type: ajv, which Prism, Spectral and Redocly use, refuses
// to compile a nullable without one, and kin-openapi's validator refuses
// null where nothing says nullable (so an empty schema will not do, not
// even as an array's items). So a value is one of the five types, the
// object one nullable, and an array's items are values again. The
// x-go-type extensions keep oapi-codegen from making a union type of it:
// in Go, any JSON value is an interface{}, absent or not.
const anyValue = "AnyValue"

func anyValueSchema() *openapi3.SchemaRef {
	self := openapi3.NewSchemaRef("#/components/schemas/"+anyValue, nil)
	s := openapi3.NewSchemaRef("", &openapi3.Schema{
		Description: "Any JSON value, null included.",
		Extensions:  map[string]any{"x-go-type": "interface{}", "x-go-type-skip-optional-pointer": true},
		AnyOf: openapi3.SchemaRefs{
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeObject}, Nullable: true}),
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeArray}, Items: self}),
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}}),
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNumber}}),
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeBoolean}}),
		},
	})
	self.Value = s.Value
	return s
}

func sortedPaths(doc *openapi3.T) []string {
	var ps []string
	for p := range doc.Paths.Map() {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}
