// Package openapi holds baton's OpenAPI 3 document, generated from the swag
// annotations of package api's handlers and embedded in the binary. The
// server serves it at /openapi.json and /openapi.yaml.
//
// Regenerate it after changing an annotation or a request or response
// type, then commit the result; golden tests fail while it, or the Go
// client that oapi-codegen generates from it for the tests
// (internal/genclient), is stale:
//
//	go generate ./openapi
package openapi

import _ "embed"

//go:generate go run ./internal/gen
//go:generate go tool oapi-codegen -config internal/genclient/config.yaml -o internal/genclient/client.gen.go openapi.yaml

// JSON is the OpenAPI document as JSON.
//
//go:embed openapi.json
var JSON []byte

// YAML is the same document as YAML.
//
//go:embed openapi.yaml
var YAML []byte
